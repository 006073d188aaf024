"""Token laws of SLR (docs/model.md section 1): one object per variant, the only place that knows
them.

A variant fixes how the hidden location ``eps`` and the key direction ``k`` shape the
tokens. Everything that depends on the variant asks its object:

* :meth:`TokenLaw.location_log_weights`: ``log P(eps = l | L) + log g_nu(l, chi)``, the
  location-dependent token factor with its normaliser (``chi = X k / sqrt(D)``); its
  softmax is the location posterior with known directions (docs/model.md section 2), its
  log-sum-exp the log-likelihood of a sequence's tokens given ``k`` (section 5);
* :meth:`TokenLaw.draw_tokens_and_location` (the simulator) and
  :meth:`TokenLaw.sample_tokens_and_location` (the NumPyro generative model);
* :meth:`TokenLaw.population_scores`: the law of the teacher scores ``chi*`` in the limit
  ``|k*|^2 = D`` (used by the population Monte Carlo and by every integral of the theory,
  which read its location shift and tilt);
* :meth:`TokenLaw.field_location` and :meth:`TokenLaw.key_normaliser_precision`: the
  location posterior seen through Gaussian key fields, and the normaliser's Gaussian factor
  on ``k`` (AMP's output channel and prior);
* what the samplers may assume (``gaussian_key_given_locations``,
  ``location_softmax_of_scores``: the sampler registry's ``supports`` asks these);
* ``c_nu`` (the inverse temperature of the Bayes estimator), ``default_nu`` and the
  range of ``nu``.

Two families cover the variants: :class:`PlantedLaw` (the location's token carries a spike
``a(nu) k / sqrt(D)``: spiked SLR) and :class:`TiltedLaw` (i.i.d. tokens, the location drawn
from ``softmax(t(nu) chi*)``: max-SLR). No module outside this one branches on the family. A
new variant of either family is one subclass and one :func:`register_variant` call.

The module imports without JAX or NumPyro (they are :func:`~bayes_slr.lazy.lazy_module`
proxies, imported when a method first computes), so listing and validating variants is cheap.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from bayes_slr.errors import ConfigError, check_real
from bayes_slr.lazy import lazy_module
from bayes_slr.numerics import MAX_FINITE_NU
from bayes_slr.registry import Registry

if TYPE_CHECKING:
    from bayes_slr.numerics.location_integrals import LocationDerivatives

# Imported on first use (bayes_slr.lazy): the variant registry imports without JAX.
jax = lazy_module("jax")
jnp = lazy_module("jax.numpy")
numpyro = lazy_module("numpyro")
dist = lazy_module("numpyro.distributions")

IMPOSSIBLE_LOGIT = -1e4
"""Logit of an impossible location (padding; non-argmax tokens at ``nu = inf``) where a finite
value is needed: ``exp`` of it is exactly 0 in float64, so densities are unchanged, but NumPyro's
``infer_discrete`` (temperature 1) can still sample."""


@dataclasses.dataclass(frozen=True)
class PlantedScores:
    """Population law of the teacher scores: location uniform, ``chi*_eps ~ N(shift, 1)``, others
    ``N(0, 1)``.
    """

    shift: float

    @property
    def location_shift(self) -> float:
        """Mean of the location's score (the others have mean 0)."""
        return self.shift

    @property
    def location_tilt(self) -> float:
        """Inverse temperature of the location law ``softmax(tilt chi*)``: 0, uniform."""
        return 0.0


@dataclasses.dataclass(frozen=True)
class TiltedScores:
    """Population law of the teacher scores: i.i.d. ``N(0, 1)``, location ``~ softmax(tilt chi*)``
    (argmax if ``inf``).
    """

    tilt: float

    @property
    def location_shift(self) -> float:
        """Mean of the location's score before the location is drawn: 0, all scores i.i.d."""
        return 0.0

    @property
    def location_tilt(self) -> float:
        """Inverse temperature of the location law ``softmax(tilt chi*)`` (``inf``: argmax)."""
        return self.tilt


class FieldLocation(NamedTuple):
    """The location posterior of one sequence seen through Gaussian key fields (AMP's channel).

    The key projections of the tokens are ``h_{l,k} ~ N(omega_{l,k}, V_kk)``, independent, with a
    covariance ``V_kv`` with the value projections ``h_{l,v}``.

    Attributes
    ----------
    derivatives : ``log P(eps = l | fields)`` up to a constant that does not depend on
        ``omega_k`` (``-inf`` on padding), with its first and second derivatives in ``omega_k``
        (:class:`~bayes_slr.numerics.location_integrals.LocationDerivatives`).
    value_shift : ``E[h_{l,v} | eps = l] - omega_{l,v}``: what the location's own evidence adds to
        the mean of its value field.
    """

    derivatives: LocationDerivatives
    value_shift: float | jax.Array


def is_infinite(nu: object) -> bool:
    """Whether ``nu`` is the Python number ``inf`` (a traced value is always finite here)."""
    return isinstance(nu, (int, float)) and math.isinf(nu)


def _mask_and_lengths(mask: jax.Array) -> jax.Array:
    return jnp.sum(mask, axis=-1, keepdims=True)


class TokenLaw(abc.ABC):
    """One SLR variant: the law of the tokens and of the location given ``k``.

    Methods take ``nu`` as a number (``inf`` where :attr:`allows_infinite_nu`) or, for
    finite values, a traced JAX scalar, so that one compilation serves every ``nu``.
    """

    name: ClassVar[str]
    default_nu: ClassVar[float]
    allows_infinite_nu: ClassVar[bool] = False
    tokens_carry_key: ClassVar[bool]
    """Whether ``p(X | k)`` depends on ``k`` (planted laws): a new sequence is then evidence about
    ``k``.
    """
    gaussian_key_given_locations: ClassVar[bool] = False
    """Whether ``p(X | eps, k)`` is Gaussian in ``k`` (a spike ``a(nu) k / sqrt(D)`` at the
    location): ``k`` given the locations is then Gaussian, which the exact Gibbs sampler draws."""
    location_softmax_of_scores: ClassVar[bool] = False
    """Whether the tokens are i.i.d. and the location law given them is ``softmax(c_nu chi)``: the
    Gibbs-HMC sampler's mass matrix is the Hessian of that law's log-likelihood at ``k = 0``."""

    def check_nu(self, nu: object) -> float:
        """``nu`` as a float, or ``ConfigError`` naming the accepted range for this variant."""
        value = check_real("nu", nu, minimum=0.0, allow_inf=True)
        if math.isinf(value) and not self.allows_infinite_nu:
            raise ConfigError(
                f"nu must be a finite number >= 0 for the {self.name} variant (inf is allowed for "
                f"{', '.join(law.name for law in _REGISTRY.items() if law.allows_infinite_nu)} "
                f"only)"
            )
        return value

    @abc.abstractmethod
    def c_nu(self, nu: float | jax.Array) -> float | jax.Array:
        """Inverse temperature of the location posterior with known directions."""

    @abc.abstractmethod
    def nu_with_c(self, c: float) -> float:
        """The ``nu`` whose ``c_nu`` is ``c`` (inverse of :meth:`c_nu`, used to rescale a teacher's
        norm).
        """

    @abc.abstractmethod
    def location_log_weights(
        self,
        chi: jax.Array,
        mask: jax.Array,
        nu: float | jax.Array,
        sq_norm: float | jax.Array = 1.0,
    ) -> jax.Array:
        """``log P(eps = l | L) + log g_nu(l, chi)``, ``(..., Lbar)``, ``-inf`` on padded tokens.

        Parameters
        ----------
        chi : (..., Lbar) scores ``X k / sqrt(D)``.
        mask : (..., Lbar) True on real tokens.
        nu : signal strength.
        sq_norm : ``|k|^2 / D`` (enters the tilt's normaliser where it depends on ``k``).
        """

    def location_posterior(
        self, chi: jax.Array, mask: jax.Array, nu: float | jax.Array
    ) -> jax.Array:
        """``P(eps = l | X, k)``, zero on padded tokens (equal shares between tied
        argmax tokens).
        """
        log_w = self.location_log_weights(chi, mask, nu)
        return jax.nn.softmax(log_w, axis=-1, where=mask)

    def sequence_log_likelihood(
        self, chi: jax.Array, mask: jax.Array, nu: float | jax.Array, sq_norm: float | jax.Array
    ) -> jax.Array:
        """``log p(X | k) - sum_l log N(x_l; 0, I)``: the evidence a sequence's tokens carry about
        ``k``, ``(...,)``.
        """
        return jax.nn.logsumexp(self.location_log_weights(chi, mask, nu, sq_norm), axis=-1)

    @abc.abstractmethod
    def draw_tokens_and_location(
        self, key: jax.Array, X: jax.Array, mask: jax.Array, k_star: jax.Array, nu: float
    ) -> tuple[jax.Array, jax.Array]:
        """From i.i.d. ``N(0, I)`` tokens ``X`` (N, Lbar, D), the SLR tokens and the 0-based
        locations ``(N,)``.
        """

    @abc.abstractmethod
    def sample_tokens_and_location(
        self, k: jax.Array, mask: jax.Array, nu: float, X: jax.Array | None
    ) -> tuple[jax.Array, jax.Array]:
        """NumPyro sites ``X`` (observed or sampled) and ``eps`` (enumerated) inside a ``data``
        plate.

        Returns ``(X, eps)``; ``eps`` is marked for parallel enumeration.
        """

    @abc.abstractmethod
    def population_scores(self, nu: float) -> PlantedScores | TiltedScores:
        """Law of the teacher scores ``chi*`` when ``|k*|^2 = D``.

        Both kinds give ``location_shift`` (the mean of the location's score; the others are
        standard normal) and ``location_tilt`` (the location law is ``softmax(location_tilt
        chi*)``: uniform at 0, the argmax at ``inf``), which is what the population theory reads.
        """

    @abc.abstractmethod
    def key_normaliser_precision(self, nu: float) -> float:
        """What each sequence adds to the precision of ``k``'s Gaussian prior, times ``D``.

        The location factor's normaliser, where it depends on ``k`` and is Gaussian in it
        (``exp(-a^2 |k|^2 / (2D))`` of a planted spike: ``a^2``), can be moved into the prior;
        0 where ``p(X | k)`` does not depend on ``k``.
        """

    @abc.abstractmethod
    def field_location(
        self,
        nu: float,
        omega_k: jax.Array,
        V_kk: jax.Array,
        V_kv: jax.Array,
        mask: jax.Array,
    ) -> FieldLocation:
        """The location posterior of one sequence from Gaussian key fields (see
        :class:`FieldLocation`), its own tokens' evidence about ``k`` included.

        Parameters
        ----------
        nu : signal strength (a Python number).
        omega_k : (Lbar,) means of the key fields ``h_{l,k}``.
        V_kk : their variance (the same for every token).
        V_kv : their covariance with the value fields.
        mask : (Lbar,) True on real tokens.
        """

    def check_field_location(self, nu: float) -> None:
        """``ConfigError`` unless :meth:`field_location` can be evaluated at ``nu`` (every ``nu``
        unless a family says otherwise).
        """

    def draw_population_scores(
        self, key: jax.Array, noise: jax.Array, mask: jax.Array, nu: float | jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """Teacher scores and locations from standard normal ``noise`` (n, Lbar): ``(chi*, eps)``.

        The population counterpart of :meth:`draw_tokens_and_location` (``|k*|^2 = D``, ``D`` free).
        """
        X, eps = self.draw_tokens_and_location(key, noise[..., None], mask, jnp.ones(1), nu)
        return X[..., 0], eps

    def __repr__(self) -> str:
        return f"<token law {self.name}>"


class PlantedLaw(TokenLaw):
    """The location (uniform) holds a token ``N(a(nu) k / sqrt(D), I)``; the others are ``N(0, I)``.

    ``g = exp(a chi_eps - a^2 |k|^2 / (2D))``; the normaliser stays in the likelihood of a free
    ``k``
    (without it the posterior inflates ``|k|``, docs/model.md section 1).
    """

    tokens_carry_key = True
    gaussian_key_given_locations = True

    @abc.abstractmethod
    def amplitude(self, nu: float | jax.Array) -> float | jax.Array:
        """Spike amplitude ``a(nu)``: the location's score has mean ``a`` when ``|k|^2 = D``."""

    def c_nu(self, nu: float | jax.Array) -> float | jax.Array:
        """``a(nu)``: the location posterior is ``softmax(a chi)``."""
        return self.amplitude(nu)

    def location_log_weights(self, chi, mask, nu, sq_norm=1.0):
        a = self.amplitude(nu)
        logits = a * chi - a**2 * sq_norm / 2 - jnp.log(_mask_and_lengths(mask).astype(chi.dtype))
        return jnp.where(mask, logits, -jnp.inf)

    def draw_tokens_and_location(self, key, X, mask, k_star, nu):
        lengths = _mask_and_lengths(mask)[..., 0]
        eps = jnp.floor(jax.random.uniform(key, lengths.shape) * lengths).astype(jnp.int32)
        spike = self.amplitude(nu) / math.sqrt(X.shape[-1]) * k_star
        return X + jax.nn.one_hot(eps, X.shape[-2])[..., None] * spike, eps

    def sample_tokens_and_location(self, k, mask, nu, X):
        Lbar, D = mask.shape[-1], k.shape[-1]
        logits = jnp.where(mask, -jnp.log(_mask_and_lengths(mask)), IMPOSSIBLE_LOGIT)
        eps = numpyro.sample(
            "eps", dist.Categorical(logits=logits), infer={"enumerate": "parallel"}
        )
        spike = jax.nn.one_hot(eps, Lbar)[..., None] * (self.amplitude(nu) / math.sqrt(D)) * k
        X = numpyro.sample("X", dist.Normal(spike, 1.0).mask(mask[..., None]).to_event(2), obs=X)
        return X, eps

    def population_scores(self, nu: float) -> PlantedScores:
        return PlantedScores(float(self.amplitude(nu)))

    def key_normaliser_precision(self, nu: float) -> float:
        """``a(nu)^2``: the spike's normaliser ``exp(-a^2 |k|^2 / (2D))`` is Gaussian in ``k``."""
        return self.amplitude(nu) ** 2

    def field_location(self, nu, omega_k, V_kk, V_kv, mask):
        """Exact: ``E_h[exp(a h_{l,k})] N(y; h_{l,v}, .)`` is ``exp(a omega_{l,k})`` times a
        constant, with the value mean shifted by ``a V_kv``.
        """
        from bayes_slr.numerics.location_integrals import LocationDerivatives

        a = self.amplitude(nu)
        eye = jnp.eye(omega_k.shape[0], dtype=omega_k.dtype)
        return FieldLocation(
            LocationDerivatives(a * omega_k, a * eye, jnp.zeros_like(eye)), a * V_kv
        )


class TiltedLaw(TokenLaw):
    """Tokens i.i.d. ``N(0, I)``; the location is drawn from ``softmax(t(nu) chi)`` (the argmax at
    ``t = inf``).

    ``p(X | k)`` does not depend on ``k``: the tokens carry no evidence about it.
    """

    allows_infinite_nu = True
    tokens_carry_key = False
    location_softmax_of_scores = True

    @abc.abstractmethod
    def tilt(self, nu: float | jax.Array) -> float | jax.Array:
        """Inverse temperature ``t(nu)`` of the location law."""

    def c_nu(self, nu: float | jax.Array) -> float | jax.Array:
        """``t(nu)``: the location posterior is the location law itself."""
        return self.tilt(nu)

    def location_log_weights(self, chi, mask, nu, sq_norm=1.0):
        if is_infinite(nu):
            top = jnp.max(jnp.where(mask, chi, -jnp.inf), axis=-1, keepdims=True)
            is_top = (chi == top) & mask
            return jnp.where(
                is_top,
                -jnp.log(jnp.sum(is_top, axis=-1, keepdims=True).astype(chi.dtype)),
                -jnp.inf,
            )
        return jax.nn.log_softmax(
            jnp.where(mask, self.tilt(nu) * chi, -jnp.inf), axis=-1, where=mask
        )

    def draw_tokens_and_location(self, key, X, mask, k_star, nu):
        chi = X @ k_star / math.sqrt(X.shape[-1])
        eps = jax.random.categorical(key, self.location_log_weights(chi, mask, nu), axis=-1).astype(
            jnp.int32
        )
        return X, eps

    def sample_tokens_and_location(self, k, mask, nu, X):
        Lbar, D = mask.shape[-1], k.shape[-1]
        token_law = dist.Normal(jnp.zeros((Lbar, D)), 1.0).mask(mask[..., None]).to_event(2)
        X = numpyro.sample("X", token_law, obs=X) * mask[..., None]
        logits = jnp.maximum(
            self.location_log_weights(X @ k / math.sqrt(D), mask, nu), IMPOSSIBLE_LOGIT
        )
        eps = numpyro.sample(
            "eps", dist.Categorical(logits=logits), infer={"enumerate": "parallel"}
        )
        return X, eps

    def population_scores(self, nu: float) -> TiltedScores:
        return TiltedScores(math.inf if is_infinite(nu) else float(self.tilt(nu)))

    def key_normaliser_precision(self, nu: float) -> float:
        """0: ``p(X | k)`` does not depend on ``k``."""
        return 0.0

    def field_location(self, nu, omega_k, V_kk, V_kv, mask):
        """The one-dimensional location integrals (``V_kk`` capped at 1): ``E_h[softmax(t h)_l]``,
        or ``P(l is the argmax of h)`` at ``nu = inf``; no value shift.
        """
        from bayes_slr.numerics.location_integrals import location_derivatives

        tilt = math.inf if is_infinite(nu) else self.tilt(nu)
        location = location_derivatives(tilt, omega_k, jnp.minimum(V_kk, 1.0), mask)
        return FieldLocation(location, jnp.zeros_like(V_kv))

    def check_field_location(self, nu: float) -> None:
        """``|t(nu)| <= MAX_FINITE_NU`` or ``nu = inf``: the location integrals cost ``~|t|``."""
        if not is_infinite(nu) and abs(self.tilt(nu)) > MAX_FINITE_NU:
            raise ConfigError(
                f"nu must be <= {MAX_FINITE_NU:g} or inf for the {self.name} variant's location "
                f"integrals (got nu = {nu:g}; their cost grows like nu and nu = inf differs by "
                f"O(1/nu^2)): use nu = inf"
            )


class SpikedLaw(PlantedLaw):
    """Spiked SLR: the location's token is ``N(sqrt(nu) k / sqrt(D), I)``."""

    name = "spiked"
    default_nu = 2.0

    def amplitude(self, nu):
        return math.sqrt(nu) if isinstance(nu, (int, float)) else jnp.sqrt(nu)

    def nu_with_c(self, c):
        return c**2


class MaxLaw(TiltedLaw):
    """Max-SLR: the location is drawn from ``softmax(nu chi*)``; ``nu = inf`` is the argmax."""

    name = "max"
    default_nu = math.inf

    def tilt(self, nu):
        return nu

    def nu_with_c(self, c):
        return c


_REGISTRY: Registry[TokenLaw] = Registry("variant", TokenLaw)
register_variant = _REGISTRY.register
unregister_variant = _REGISTRY.unregister
variant_names = _REGISTRY.names
get_variant = _REGISTRY.get

register_variant(SpikedLaw())
register_variant(MaxLaw())
