"""The attention activations ``s(chi)`` of docs/model.md section 3: one record per activation, in a
registry.

A record says everything the toolkit needs of an activation:

* how weights come from scores: normalised over the real tokens
  (``s_l = phi(chi_l) / (C + sum_j phi(chi_j))``, given by ``log phi`` and, for an activation
  with a constant ``C > 0`` in its denominator, ``log C``) or element-wise
  (``s_l = score(chi_l)``); whether it has a trained offset ``c``;
* its population-theory terms: ``log phi`` feeds the normalised integrals; element-wise
  activations give the closed-form Gaussian mean ``E[s(chi)]`` and, when known, the second
  moment (otherwise the theory integrates ``score^2`` by quadrature);
* whether its optimum on an argmax location law can be a supremum reached only as
  ``|k| -> inf`` (``large_norm_limit``).

Padded tokens (``mask = False``) get weight 0. An activation without theory terms can be
registered for training, and the theory refuses it by name (:func:`theory_terms_of`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from bayes_slr.errors import ConfigError, check_real
from bayes_slr.lazy import lazy_module
from bayes_slr.registry import Registry

if TYPE_CHECKING:
    from jax import Array

# Imported on first use (bayes_slr.lazy): the activation registry imports without JAX.
jax = lazy_module("jax")
jnp = lazy_module("jax.numpy")


@dataclasses.dataclass(frozen=True)
class Activation:
    """One attention activation.

    Attributes
    ----------
    name : identifier used on the command line and in result files.
    normalised : weights ``phi(chi_l) / sum phi(chi)`` (True) or element-wise ``score(chi_l)``.
    log_phi : ``log phi(chi)`` of a normalised activation (stable for every ``chi``).
    score : element-wise ``s(chi, c)`` (for a normalised activation, ``phi(chi)``).
    has_offset : whether the trained offset ``c`` enters (it is regularised like ``k`` and ``v``).
    gaussian_mean : ``E[s(chi)]`` for ``chi ~ N(mu, var)`` in closed form, ``(mu, var, c) -> value``
        (element-wise theory); None if unknown.
    gaussian_second_moment : ``E[s(chi)^2]`` in closed form, ``(mu, sigma, c) -> value``; None means
    the
        theory integrates ``score^2`` by quadrature.
    large_norm_limit : the kernel that ``phi(m chi)``, normalised, tends to as ``m = |k| -> inf``
    along ``k*``:
        ``"argmax"`` (softmax) or ``"relu"`` (softplus); on an argmax location law the optimum is
        then a
        supremum and the population layer reports that limit (:mod:`bayes_slr.formulas.large_norm`).
    affine : ``s = 1 + chi`` (affine in the score): the population optimum over the key has a closed
    form.
    log_sink : ``c -> log C`` of a normalised activation whose denominator holds a constant ``C``
        beside the tokens (``s_l = phi(chi_l) / (C + sum phi(chi))``: softmax-1, Bayes-softmax);
        None means ``C = 0``. Its population terms are evaluated where the tokens' scores are
        independent (not on a tilted location law).
    """

    name: str
    normalised: bool
    score: Callable[[Array, Array | float], Array]
    log_phi: Callable[[Array], Array] | None = None
    has_offset: bool = False
    gaussian_mean: Callable[[Array, Array, Array | float], Array] | None = None
    gaussian_second_moment: Callable[[Array, Array, Array | float], Array] | None = None
    large_norm_limit: str | None = None
    affine: bool = False
    log_sink: Callable[[Array | float], Array | float] | None = None

    @property
    def has_theory(self) -> bool:
        """Whether the population theory can evaluate this activation."""
        return self.log_phi is not None if self.normalised else self.gaussian_mean is not None

    def weights(self, chi: Array, mask: Array | None = None, c: Array | float = 0.0) -> Array:
        """Weights ``s(chi)`` over the last axis, zero on padded tokens.

        Parameters
        ----------
        chi : (..., Lbar) scores ``X k / sqrt(D)``.
        mask : (..., Lbar) boolean, True on real tokens; None means all real.
        c : offset (used by activations with ``has_offset``).
        """
        if mask is None:
            mask = jnp.ones(chi.shape, dtype=bool)
        if self.normalised:
            logits = jnp.where(mask, self.log_phi(chi), -jnp.inf)
            if self.log_sink is None:
                return jax.nn.softmax(logits, axis=-1, where=mask)
            log_total = jnp.logaddexp(
                jax.nn.logsumexp(logits, axis=-1, keepdims=True), self.log_sink(c)
            )
            return jnp.where(mask, jnp.exp(logits - log_total), 0.0)
        return jnp.where(mask, self.score(chi, c), 0.0)


def _log_softplus(chi: Array) -> Array:
    safe = jnp.maximum(chi, -35.0)
    return jnp.where(chi < -35.0, chi, jnp.log(jax.nn.softplus(safe)))


SOFTMAX = Activation(
    "softmax",
    normalised=True,
    score=lambda chi, c=0.0: jnp.exp(chi),
    log_phi=lambda chi: chi,
    large_norm_limit="argmax",
)
LINEAR = Activation(
    "linear",
    normalised=False,
    score=lambda chi, c=0.0: 1.0 + chi,
    gaussian_mean=lambda mu, var, c=0.0: 1.0 + mu,
    gaussian_second_moment=lambda mu, sigma, c=0.0: (1.0 + mu) ** 2 + sigma**2,
    affine=True,
)
ERF = Activation(
    "erf",
    normalised=False,
    score=lambda chi, c=0.0: 1.0 + jax.scipy.special.erf(c + chi),
    has_offset=True,
    gaussian_mean=lambda mu, var, c=0.0: (
        1.0 + jax.scipy.special.erf((c + mu) / jnp.sqrt(1.0 + 2.0 * var))
    ),
)
SOFTPLUS = Activation(
    "softplus",
    normalised=True,
    score=lambda chi, c=0.0: jax.nn.softplus(chi),
    log_phi=_log_softplus,
    large_norm_limit="relu",
)

SOFTMAX_ONE = Activation(
    "softmax1",
    normalised=True,
    score=lambda chi, c=0.0: jnp.exp(chi),
    log_phi=lambda chi: chi,
    log_sink=lambda c=0.0: 0.0,
)
"""Softmax-1, ``e^{chi_l} / (1 + sum e^{chi})``: the weights may all be small, so a head whose
token is absent can say little (docs/multihead.md)."""
BAYES_SOFTMAX = Activation(
    "bayes_softmax",
    normalised=True,
    score=lambda chi, c=0.0: jnp.exp(chi),
    log_phi=lambda chi: chi,
    has_offset=True,
    log_sink=lambda c=0.0: -c,
)
"""Bayes-softmax, ``e^{chi_l} / (e^{-c} + sum e^{chi})`` with the offset ``c`` trained: the form
of the Bayes posterior of a head present with probability ``rho < 1`` (docs/multihead.md)."""
OPTIONAL_ACTIVATIONS = {record.name: record for record in (SOFTMAX_ONE, BAYES_SOFTMAX)}
"""Activations selected by name (:func:`get_activation`) but not registered by default, so that
the activations ``gap`` and ``theory`` tabulate by default stay those of docs/model.md section 3;
``register_activation(SOFTMAX_ONE)`` adds one to the registered ones."""


SPHERE_ERF_PREFIX = "erf_sphere_"
SPHERE_ERF_FORM = f"{SPHERE_ERF_PREFIX}<lambda>"
"""How :func:`sphere_erf` records are named, and how a name selects one without registering it
(``erf_sphere_0.5``: ``lambda = 0.5``)."""


@functools.cache
def sphere_erf(inverse_temperature: float) -> Activation:
    """The predecessor's activation, ``s(chi) = erf(lambda chi)`` (Marion, Berthier, Biau, Boyer,
    ICLR 2025: ``T(X) = sum_l erf(lambda x_l.k) x_l.v`` with ``k``, ``v`` on the unit sphere).

    On the toolkit's scale (``chi = X k / sqrt(D)``) their unit sphere is ``|k|^2 = |v|^2 = D``
    (``q_k = q_v = 1``), where ``x_l.k`` of a unit ``k`` is ``chi_l``: the predictor is
    element-wise, odd, without the ``1 +`` of the ``erf`` record and without a trained offset, and
    its inverse temperature ``lambda`` is fixed (on the sphere the norm of ``k`` cannot carry it).
    Off the sphere only ``lambda |k|`` matters.

    Population terms in closed form: ``E[erf(lambda chi)] = erf(lambda mu / sqrt(1 + 2 lambda^2
    var))`` and the second moment through Owen's T
    (:func:`~bayes_slr.numerics.special.erf_gaussian_second_moment`).

    The record is named ``erf_sphere_<lambda>`` (:data:`SPHERE_ERF_FORM`; one record per
    ``lambda``, cached) and is not registered by default (the default registry is the four
    activations of docs/model.md section 3, which ``gap`` and ``theory`` tabulate): its name
    selects it wherever an activation is looked up by name (:func:`get_activation`: training,
    the population theory, ``bayes-slr dynamics --activations erf_sphere_0.5``), and
    ``register_activation(sphere_erf(lam))`` adds it to the registered ones.

    Parameters
    ----------
    inverse_temperature : ``lambda > 0``.
    """
    lam = check_real("inverse_temperature", inverse_temperature, minimum=0.0, strict=True)
    return Activation(
        f"erf_sphere_{lam:.12g}",
        normalised=False,
        score=lambda chi, c=0.0: jax.scipy.special.erf(lam * chi),
        gaussian_mean=lambda mu, var, c=0.0: jax.scipy.special.erf(
            lam * mu / jnp.sqrt(1.0 + 2.0 * lam**2 * var)
        ),
        gaussian_second_moment=lambda mu, sigma, c=0.0: _erf_second_moment(lam * mu, lam * sigma),
    )


def _erf_second_moment(mu: Array, sigma: Array) -> Array:
    """``E[erf(mu + sigma z)^2]`` (numerics.special imports JAX, so it is imported here)."""
    from bayes_slr.numerics.special import erf_gaussian_second_moment

    return erf_gaussian_second_moment(mu, sigma)


_REGISTRY: Registry[Activation] = Registry("activation", Activation)
register_activation = _REGISTRY.register
unregister_activation = _REGISTRY.unregister
activation_names = _REGISTRY.names


def get_activation(name: object, parameter: str = "activation") -> Activation:
    """The activation called ``name``: a registered one, one of :data:`OPTIONAL_ACTIVATIONS`,
    or the :func:`sphere_erf` record that a name of the form :data:`SPHERE_ERF_FORM` stands for
    (or ``name`` itself if it is a record); ``ConfigError`` naming ``parameter`` and the
    accepted values otherwise.
    """
    if isinstance(name, Activation):
        return name
    names = activation_names()
    if name in names:
        return _REGISTRY.get(name)
    if name in OPTIONAL_ACTIVATIONS:
        return OPTIONAL_ACTIVATIONS[name]
    if isinstance(name, str) and name.startswith(SPHERE_ERF_PREFIX):
        return sphere_erf(_sphere_erf_parameter(parameter, name))
    raise ConfigError(
        f"{parameter} must be one of {', '.join((*names, *OPTIONAL_ACTIVATIONS))}, or "
        f"{SPHERE_ERF_FORM} with lambda > 0; "
        f"got {name!r}"
    )


def _sphere_erf_parameter(parameter: str, name: str) -> float:
    """``lambda`` of a name ``erf_sphere_<lambda>``; ``ConfigError`` when it is not a finite
    number > 0."""
    try:
        lam = float(name.removeprefix(SPHERE_ERF_PREFIX))
    except ValueError:
        lam = float("nan")
    if not 0.0 < lam < float("inf"):
        raise ConfigError(
            f"{parameter}: {SPHERE_ERF_FORM} needs lambda, a finite number > 0; got {name!r}"
        )
    return lam


def check_registered(parameter: str, name: object) -> str:
    """Return ``name`` if it is a registered activation (what ``gap`` and ``theory`` tabulate),
    else raise ``ConfigError`` naming ``parameter`` and the registered names (a name
    :data:`SPHERE_ERF_FORM` is trained by ``dynamics`` and must be registered first here)."""
    names = activation_names()
    if name not in names:
        raise ConfigError(
            f"{parameter} must be one of {', '.join(names)}; got {name!r} (the registered "
            f"activations; {SPHERE_ERF_FORM} is selectable by name in dynamics only, elsewhere "
            "after register_activation(sphere_erf(lambda)))"
        )
    return str(name)


def check_activation(name: object, parameter: str = "activation") -> str:
    """The name of the activation ``name`` stands for (:func:`get_activation`: a registered one
    or ``erf_sphere_<lambda>``, written as its record names it), else ``ConfigError`` naming
    ``parameter``."""
    return activation_accepted(parameter, name)


def activation_accepted(parameter: str, name: object) -> str:
    """The accepted range of an activation option: :func:`check_activation` as the tables of
    accepted ranges call it (:func:`bayes_slr.errors.validate_fields`)."""
    return get_activation(name, parameter).name


def theory_terms_of(name: object) -> Activation:
    """The activation record, refused by name when the population theory has no terms for it."""
    activation = get_activation(name)
    if not activation.has_theory:
        raise ConfigError(
            f"activation {activation.name} has no population-theory terms (give it log_phi if "
            f"normalised, "
            "gaussian_mean if element-wise); it can be trained but not evaluated by the theory"
        )
    return activation


def attention_weights(
    activation: str, chi: Array, mask: Array | None = None, c: Array | float = 0.0
) -> Array:
    """Weights ``s(chi)`` of the activation called ``activation`` (see
    :meth:`Activation.weights`).
    """
    return get_activation(activation).weights(chi, mask, c)


for _activation in (SOFTMAX, LINEAR, ERF, SOFTPLUS):
    register_activation(_activation)
