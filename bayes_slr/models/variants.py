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
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from bayes_slr.errors import ConfigError, Number
from bayes_slr.lazy import lazy_module
from bayes_slr.numerics import MAX_FINITE_NU
from bayes_slr.registry import Registry

if TYPE_CHECKING:
    from bayes_slr.numerics.location_integrals import LocationDerivatives

# Imported on first use (bayes_slr.lazy): the variant registry imports without JAX.
jax = lazy_module("jax")
jnp = lazy_module("jax.numpy")
np = lazy_module("numpy")
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


def _quotient(a: float | jax.Array, b: float) -> float | jax.Array:
    """``a / b`` correctly rounded also where ``a`` is traced: XLA turns a division by a constant
    into a product with its rounded reciprocal (one unit in the last place apart), and a traced
    ``nu`` must draw the tokens a Python ``nu`` draws (``b = 1``: the quotient is ``a``)."""
    if isinstance(a, (int, float)) or b == 1.0:
        return a / b
    return a / jax.lax.optimization_barrier(jnp.asarray(b))


def probability_accepted(name: str, value: object) -> float:
    """``value`` as a float in ``(0, 1]``, or ``ConfigError`` naming ``name`` and the range."""
    try:
        x = Number()(name, value)
    except ConfigError:
        x = math.nan
    if not 0.0 < x <= 1.0:
        raise ConfigError(f"{name} must be a probability in (0, 1], got {value!r}")
    return x


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
        value = Number(0.0, allow_inf=True)("nu", nu)
        if math.isinf(value) and not self.allows_infinite_nu:
            raise ConfigError(
                f"nu must be a finite number >= 0 for the {self.name} variant (inf is allowed for "
                f"{', '.join(law.name for law in _REGISTRY.items() if law.allows_infinite_nu)} "
                f"only)"
            )
        return value

    def check_presence(self, presence: object) -> float:
        """``presence`` (the probability ``rho`` that a head's token is in a sequence) as a float
        in ``(0, 1]``, or ``ConfigError`` naming the range."""
        return probability_accepted("presence", presence)

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

    @abc.abstractmethod
    def zero_score_log_weight(self, nu: float, lengths: np.ndarray) -> np.ndarray:
        """:meth:`location_log_weights` of a zero score (``chi_l = 0``, ``|k|^2 = D``) in sequences
        of the given lengths, in closed form: the constant that the location's weight is
        measured against (the absent-head constant of docs/multihead.md)."""

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

    def head_location_posterior(
        self, chi: jax.Array, mask: jax.Array, nu: float | jax.Array, presence: float
    ) -> jax.Array:
        """``P(b_h = 1, eps_h = l | X, k_h)`` of a head present with probability ``presence``,
        ``(..., Lbar)``, zero on padded tokens (docs/multihead.md).

        The softmax of ``log presence + location_log_weights`` over the ``Lbar`` tokens and one
        more state, absence, of log-weight ``log(1 - presence)``: the sum over ``l`` is the
        posterior probability that the head is present. At ``presence = 1`` it is
        :meth:`location_posterior`.
        """
        log_w = self.location_log_weights(chi, mask, nu) + math.log(presence)
        absent = math.log1p(-presence) if presence < 1.0 else -math.inf
        top = jnp.maximum(jnp.max(log_w, axis=-1, keepdims=True), absent)
        weights = jnp.where(mask, jnp.exp(log_w - top), 0.0)
        return weights / (jnp.exp(absent - top) + jnp.sum(weights, axis=-1, keepdims=True))

    def draw_heads(
        self,
        key: jax.Array,
        X: jax.Array,
        mask: jax.Array,
        k_stars: jax.Array,
        nu: float | jax.Array,
        presence: float,
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Tokens, locations and presences of ``H`` heads with keys ``k_stars`` (H, D).

        Head ``h`` is present with probability ``presence`` (independent draws) and draws its
        location as one head does (:meth:`draw_tokens_and_location`, on the tokens the heads
        before it left: spikes add); an absent head leaves the tokens as they were.

        Returns
        -------
        X : (N, Lbar, D) tokens; eps : (N, H) 0-based locations; present : (N, H) booleans.
        """
        keys = jax.random.split(key, (k_stars.shape[0], 2))
        eps, present = [], []
        for (key_location, key_presence), k_star in zip(keys, k_stars, strict=True):
            drawn, eps_h = self.draw_tokens_and_location(key_location, X, mask, k_star, nu)
            present_h = jax.random.bernoulli(key_presence, presence, eps_h.shape)
            X = jnp.where(present_h[:, None, None], drawn, X)
            eps.append(eps_h)
            present.append(present_h)
        return X, jnp.stack(eps, axis=1), jnp.stack(present, axis=1)

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

    # --- the Bayes-optimal theory (state evolution, free entropy; docs/theory.md part B) ---

    def check_bayes_theory_nu(self, nu: float) -> float:
        """``nu`` if the Bayes-optimal theory covers it, else ``ConfigError`` (default: every
        ``nu``)."""
        return nu

    @abc.abstractmethod
    def gaussian_location_log_weights(
        self, nu: float, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
    ) -> jax.Array:
        """``log E_h[P(eps = l | L) g_nu(l, h)]`` with ``h_j ~ N(omega_{k,j}, V_k)`` independent and
        ``|k|^2 = D``: the location factor of the output channel ``Z_out`` of the state evolution,
        ``(Lbar,)``, ``-inf`` on padding, differentiable in ``omega_k``."""

    @abc.abstractmethod
    def gaussian_location_log_posterior(
        self, nu: float, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
    ) -> jax.Array:
        """``log P(eps = l | X, data)`` for a new sequence whose key projections have the Gaussian
        posteriors ``N(omega_{k,l}, V_k)`` (its own tokens' evidence included), ``(Lbar,)``."""

    def training_set_location_weights(
        self,
        key: jax.Array,
        nu: float,
        omega_k: jax.Array,
        V_k: jax.Array,
        mask: jax.Array,
        samples: int,
    ) -> jax.Array:
        """Estimates of ``E_h[softmax(c_nu h)]`` under the training-set posterior ``h ~ N(omega_k,
        V_k)`` (the weights of the posterior mean of ``f``, docs/model.md section 5) for a batch
        of sequences ``omega_k ~ (..., Lbar)``, shape ``(2,) + omega_k.shape``: two independent
        estimates, so that their product is unbiased for a square. Default: the Bayes posterior
        itself (exact, twice), right when the tokens carry no evidence about ``k``."""
        Lbar = mask.shape[-1]
        flat_omega, flat_mask = omega_k.reshape(-1, Lbar), mask.reshape(-1, Lbar)
        log_post = jax.vmap(self.gaussian_location_log_posterior, in_axes=(None, 0, None, 0))(
            nu, flat_omega, V_k, flat_mask
        )
        weights = jnp.exp(log_post).reshape(omega_k.shape)
        return jnp.stack([weights, weights])

    def bayes_channel_quadrature(
        self, nu: float, Delta: float, probs: jax.Array, lengths: jax.Array
    ) -> Callable[[jax.Array], jax.Array] | None:
        """The state evolution's output channel by quadrature, ``q -> (psi, score_k, score_v)``
        (``psi = E log Z_out``, ``score_a = E sum_l (d log Z_out / d omega_{l,a})^2``), or
        ``None`` where the variant's integrals do not allow it (Monte Carlo then)."""
        return None

    def located_key_score(self, nu: float) -> float | None:
        """``E sum_l (d log Z_out / d omega_{l,k})^2`` once the location of every training
        sequence is known (``Delta = 0``, ``q_v = 1``), where it does not depend on ``q_k``;
        ``None`` otherwise."""
        return None

    def bayes_attention_key_overlaps(self, nu: float, q_k: float) -> tuple[float, float] | None:
        """Key overlaps ``(m, q)`` of the softmax attention that equals the Bayes predictor's
        location weights at the state evolution's ``q_k`` (its error is ``1 - q_v A_softmax``), or
        ``None`` where no such attention exists."""
        return None

    def argmax_agreement(
        self, nu: float, q_k: float, probs: jax.Array, lengths: jax.Array
    ) -> float | None:
        """``E[sum_l P_l^2]`` of the location posterior when it is not a softmax attention (the
        Bayes error is ``1 - q_v`` times it), or ``None`` where no closed form is known."""
        return None

    @abc.abstractmethod
    def channel_location(
        self, nu: float, chi: jax.Array, mask: jax.Array, u: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """The key projections and location of the replica channel's draws from quasi-random
        inputs (:func:`~bayes_slr.formulas.channel.quasi_random_channel`).

        Parameters
        ----------
        nu : the task's ``nu``.
        chi : ``(n, Lbar)`` i.i.d. ``N(0, 1)`` key projections ``k*.x_l / sqrt(D)`` (``|k*|^2 =
            D``), zero on padding.
        mask : ``(n, Lbar)`` True on real tokens.
        u : ``(n,)`` uniforms on ``(0, 1)``, one per sample, for a location drawn given the tokens.

        Returns
        -------
        ``(chi, eps)``: the key projections under the SLR law and the location, a smooth function
        of the inputs where the law allows. The channel's averages are symmetric in the real tokens,
        so a location independent of the tokens may be placed at token 0.
        """

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

    def zero_score_log_weight(self, nu, lengths):
        """``-a^2 / 2 - log L``."""
        return -0.5 * float(self.amplitude(nu)) ** 2 - np.log(lengths)

    def draw_tokens_and_location(self, key, X, mask, k_star, nu):
        lengths = _mask_and_lengths(mask)[..., 0]
        eps = jnp.floor(jax.random.uniform(key, lengths.shape) * lengths).astype(jnp.int32)
        spike = _quotient(self.amplitude(nu), math.sqrt(X.shape[-1])) * k_star
        return X + jax.nn.one_hot(eps, X.shape[-2])[..., None] * spike, eps

    def channel_location(self, nu, chi, mask, u):
        """The location (uniform, independent of the tokens) at token 0, its key projection
        shifted by ``a(nu)``; ``u`` is not used."""
        eps = jnp.zeros(chi.shape[:-1], dtype=jnp.int32)
        return chi.at[..., 0].add(self.amplitude(nu)), eps

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

    def gaussian_location_log_weights(self, nu, omega_k, V_k, mask):
        a = self.amplitude(nu)
        length = jnp.sum(mask)
        logits = a * omega_k - 0.5 * a**2 * (1.0 - V_k) - jnp.log(length.astype(omega_k.dtype))
        return jnp.where(mask, logits, -jnp.inf)

    def gaussian_location_log_posterior(self, nu, omega_k, V_k, mask):
        return jax.nn.log_softmax(
            jnp.where(mask, self.amplitude(nu) * omega_k, -jnp.inf), where=mask
        )

    def training_set_location_weights(self, key, nu, omega_k, V_k, mask, samples):
        noise = jax.random.normal(key, (2, samples) + omega_k.shape)
        scores = self.amplitude(nu) * (omega_k + jnp.sqrt(V_k) * noise)
        weights = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1, where=mask)
        return jnp.mean(weights, axis=1)

    def bayes_channel_quadrature(self, nu, Delta, probs, lengths):
        from bayes_slr.numerics.mixture_channel import lognormal_mixture_channel

        a = float(self.amplitude(nu))
        return lambda q: lognormal_mixture_channel(q, Delta, a, probs, lengths)

    def located_key_score(self, nu):
        """``a^2``: with the location known, ``d log Z_out / d omega_{eps,k} = a``."""
        return float(self.amplitude(nu)) ** 2

    def bayes_attention_key_overlaps(self, nu, q_k):
        """``(a q_k, a^2 q_k)``: the weights are ``softmax(a omega_k)``, ``omega_k = q_k chi* +
        sqrt(q_k (1 - q_k)) u``."""
        a = float(self.amplitude(nu))
        return a * q_k, a**2 * q_k

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

    def check_presence(self, presence):
        """1 only: an absent head has no natural tilted law (the location is drawn from the
        tokens, so they always hold it)."""
        value = super().check_presence(presence)
        if value < 1.0:
            raise ConfigError(
                f"presence must be 1 for the {self.name} variant (got {value:g}): a head whose "
                "location is drawn from the tokens is always present; use the spiked variant"
            )
        return value

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

    def zero_score_log_weight(self, nu, lengths):
        """``-log L``: equal scores share the location equally (also at ``nu = inf``)."""
        return -np.log(lengths)

    def draw_tokens_and_location(self, key, X, mask, k_star, nu):
        chi = X @ k_star / math.sqrt(X.shape[-1])
        eps = jax.random.categorical(key, self.location_log_weights(chi, mask, nu), axis=-1).astype(
            jnp.int32
        )
        return X, eps

    def channel_location(self, nu, chi, mask, u):
        """The tokens unchanged; the location by the inverse distribution function of
        ``softmax(t chi)`` at ``u`` (the argmax at ``nu = inf``, ``u`` then unused)."""
        cumulative = jnp.cumsum(jnp.exp(self.location_log_weights(chi, mask, nu)), axis=-1)
        eps = jnp.sum((cumulative < u[..., None] * cumulative[..., -1:]) & mask, axis=-1)
        return chi, jnp.minimum(eps, jnp.sum(mask, axis=-1) - 1).astype(jnp.int32)

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

    def check_bayes_theory_nu(self, nu):
        if MAX_FINITE_NU < abs(float(self.tilt(nu))) < math.inf:
            raise ConfigError(
                f"Bayes-optimal theory: {self.name}-SLR needs nu <= {MAX_FINITE_NU:g} or nu = inf "
                f"(got nu = {nu:g}; the cost grows like nu and nu = inf differs by O(1/nu^2)); "
                f"use --nu inf"
            )
        return nu

    def gaussian_location_log_weights(self, nu, omega_k, V_k, mask):
        return self.gaussian_location_log_posterior(nu, omega_k, V_k, mask)

    def gaussian_location_log_posterior(self, nu, omega_k, V_k, mask):
        from bayes_slr.numerics import location_integrals

        if is_infinite(nu):
            return location_integrals.argmax_log_posterior(omega_k, V_k, mask)
        return location_integrals.softmax_log_posterior(self.tilt(nu), omega_k, V_k, mask)

    def bayes_channel_quadrature(self, nu, Delta, probs, lengths):
        """Two tokens (every sequence of length 2): the key fields enter through their difference
        only (:func:`~bayes_slr.numerics.mixture_channel.two_token_mixture_channel`); longer
        sequences couple more fields through the argmax (Monte Carlo then)."""
        import numpy as np

        from bayes_slr.numerics.mixture_channel import two_token_mixture_channel

        if np.any((np.asarray(probs) > 0) & (np.asarray(lengths) != 2)):
            return None
        tilt = math.inf if is_infinite(nu) else float(self.tilt(nu))
        return lambda q: two_token_mixture_channel(q, Delta, tilt)

    def bayes_attention_key_overlaps(self, nu, q_k):
        """``(t q_k, t^2)``: the weights are ``E[softmax(t h')]`` over a posterior sample
        ``h' = q_k chi* + sqrt(1 - q_k^2) u``; none at ``nu = inf``."""
        if is_infinite(nu):
            return None
        t = float(self.tilt(nu))
        return t * q_k, t**2

    def argmax_agreement(self, nu, q_k, probs, lengths):
        """At ``nu = inf`` with lengths 1 or 2: the probability that two posterior samples of the
        key scores (correlation ``q_k``) have the same argmax, ``1/2 + arcsin(q_k) / pi`` at
        ``L = 2`` (Sheppard) and 1 at ``L = 1``."""
        import numpy as np

        probs, lengths = np.asarray(probs), np.asarray(lengths)
        if not is_infinite(nu) or np.any((probs > 0) & (lengths > 2)):
            return None
        two = 0.5 + math.asin(min(max(q_k, -1.0), 1.0)) / math.pi
        return float(np.sum(np.where(lengths == 2, probs * two, probs)))

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
