"""The posterior samplers: one :class:`Sampler` record per algorithm, in a registry.

A record says what the toolkit needs of a sampler: its name, a one-line description (the
command line's help), which variants it supports (a question asked of the variant object,
:class:`~bayes_slr.models.variants.TokenLaw`) and how to make its kernel
(``make_kernel(config, warmup) -> Kernel``, :mod:`bayes_slr.inference.kernels.base`). A new
inference algorithm is one kernel module and one :func:`register_sampler` call;
:func:`~bayes_slr.inference.samplers.sample_posterior` and ``bayes-slr posterior --sampler``
pick it up by name.

``sampler="auto"`` is the first registered sampler that supports the variant and the task (one
head, or several heads and absent ones: :attr:`Sampler.supports_multihead`), in registration order:
``gibbs`` (exact, planted laws), ``gibbs-hmc`` (tilted laws), ``multihead-gibbs`` (exact,
multi-head tasks of planted laws), ``nuts`` (any variant; multi-head tasks of planted laws),
``collapsed`` (tilted laws; registered last, so ``auto`` never picks it).

This module and the validation of the sampling options import without JAX: the kernel modules
are imported when a kernel is made.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from bayes_slr.errors import Accepts, ConfigError, Integer, OneOf, accepted_values
from bayes_slr.models.spec import INITS, SLRConfig
from bayes_slr.models.variants import TokenLaw
from bayes_slr.registry import Registry

if TYPE_CHECKING:
    from bayes_slr.inference.kernels.base import Kernel

AUTO = "auto"
"""The sampler name that stands for the first registered sampler supporting the variant."""


@dataclasses.dataclass(frozen=True)
class Sampler:
    """One posterior sampler over the directions ``(k*, v*)``.

    Attributes
    ----------
    name : identifier (``sampler=`` and ``--sampler``); not ``"auto"``.
    description : one line for the help text: what it does, on which variants.
    supports : ``supports(law) -> bool``, whether it samples the posterior of token law ``law``
        (finite ``nu``); asks the variant object, never its name.
    make_kernel : ``make_kernel(config, warmup) -> Kernel``, the kernel for ``config`` adapting
        (if it adapts) during the first ``warmup`` steps.
    supports_multihead : ``supports_multihead(law) -> bool``, whether it samples the posterior
        of a multi-head task (``SLRConfig.multihead``, docs/multihead.md) of token law ``law``;
        by default none.
    """

    name: str
    description: str
    supports: Callable[[TokenLaw], bool]
    make_kernel: Callable[[SLRConfig, int], Kernel]
    supports_multihead: Callable[[TokenLaw], bool] = lambda law: False

    def serves(self, law: TokenLaw, multihead: bool = False) -> bool:
        """Whether it samples the posterior of token law ``law`` for a one-head (``multihead``
        false) or multi-head task."""
        return (self.supports_multihead if multihead else self.supports)(law)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or self.name == AUTO:
            raise ConfigError(
                f"a sampler's name must be a non-empty string other than {AUTO!r}, got "
                f"{self.name!r}"
            )


_REGISTRY: Registry[Sampler] = Registry("sampler", Sampler)
register_sampler = _REGISTRY.register
unregister_sampler = _REGISTRY.unregister
sampler_names = _REGISTRY.names
get_sampler = _REGISTRY.get


def sampler_choices() -> tuple[str, ...]:
    """The accepted values of ``sampler``: ``"auto"`` and every registered name, in order."""
    return (AUTO, *sampler_names())


def samplers_supporting(law: TokenLaw, multihead: bool = False) -> tuple[str, ...]:
    """The registered samplers that support token law ``law`` (for a multi-head task when
    ``multihead``), in registration order."""
    return tuple(s.name for s in _REGISTRY.items() if s.serves(law, multihead))


def auto_sampler(law: TokenLaw, multihead: bool = False) -> str:
    """The sampler ``sampler="auto"`` picks for token law ``law`` (for a multi-head task when
    ``multihead``): the first registered one that supports it.
    """
    supporting = samplers_supporting(law, multihead)
    if not supporting:
        task = " multi-head" if multihead else ""
        raise ConfigError(f"no registered sampler supports the{task} {law.name} variant")
    return supporting[0]


def resolve_sampler(config: SLRConfig, sampler: object) -> str:
    """The sampler name ``sampler`` stands for (``"auto"`` resolved for the variant and task;
    ``sampler`` is one of :func:`sampler_choices`, checked with the other sampling settings by
    :func:`check_sampling_arguments`)."""
    return auto_sampler(config.law, config.multihead) if sampler == AUTO else str(sampler)


def sampler_help() -> str:
    """The help text of the sampler choice: ``auto`` and each registered sampler's description."""
    order = ", ".join(sampler_names())
    return "; ".join(
        [
            f"{AUTO}: the first of {order} that supports the variant",
            *(f"{sampler.name}: {sampler.description}" for sampler in _REGISTRY.items()),
        ]
    )


SAMPLING_ACCEPTS: dict[str, Accepts] = {
    "sampler": OneOf(sampler_choices),
    "init": OneOf(INITS),
    "chains": Integer(1),
    "warmup": Integer(0),
    "samples": Integer(1),
}
"""The accepted range of each sampling argument (the task's own conditions are checked beside)."""


def check_sampling_arguments(
    config: SLRConfig,
    *,
    sampler: object,
    chains: object,
    warmup: object,
    samples: object,
    init: object,
) -> tuple[int, int, int]:
    """Validate the sampling options for ``config``; return ``(chains, warmup, samples)``.

    Raises
    ------
    ConfigError
        ``chains < 1``, ``samples < 1``, ``warmup < 0``, an unknown sampler or init,
        ``Delta = 0``, ``nu = inf`` (the likelihood of max-SLR is an argmax indicator: no
        gradient, no conjugate form), or a sampler that does not support the variant.
    """
    given = {"sampler": sampler, "init": init, "chains": chains, "warmup": warmup}
    values = accepted_values({**given, "samples": samples}, SAMPLING_ACCEPTS)
    chains, warmup, samples = values["chains"], values["warmup"], values["samples"]
    if config.Delta <= 0:
        raise ConfigError(
            "Delta must be > 0 for posterior sampling (the posterior is degenerate at Delta = 0)"
        )
    if math.isinf(config.nu):
        raise ConfigError(
            "nu must be finite (>= 0) for posterior sampling: at nu = inf the max-SLR likelihood "
            "is an argmax indicator, which no sampler here supports (no gradient, no conjugate "
            f"form); give a finite `nu`, e.g. `nu` 2 (the {config.law.name} variant's default is "
            "inf)"
        )
    name = resolve_sampler(config, sampler)
    chosen = get_sampler(name)
    if not chosen.serves(config.law, config.multihead):
        heads = "multi-head " if config.multihead else ""
        if not config.multihead and chosen.supports_multihead(config.law):
            heads = "one-head "
        task = f"{heads}{config.variant}"
        others = " or ".join([AUTO, *samplers_supporting(config.law, config.multihead)])
        raise ConfigError(
            f"sampler {name} does not support the {task} variant "
            f"({chosen.description}); for {task} use sampler {others}"
        )
    return chains, warmup, samples


def _gibbs_kernel(config: SLRConfig, warmup: int) -> Kernel:
    from bayes_slr.inference.kernels import gibbs

    return gibbs.make_kernel(config, warmup)


def _gibbs_hmc_kernel(config: SLRConfig, warmup: int) -> Kernel:
    from bayes_slr.inference.kernels import gibbs_hmc

    return gibbs_hmc.make_kernel(config, warmup)


def _collapsed_kernel(config: SLRConfig, warmup: int) -> Kernel:
    from bayes_slr.inference.kernels import collapsed

    return collapsed.make_kernel(config, warmup)


def _multihead_gibbs_kernel(config: SLRConfig, warmup: int) -> Kernel:
    from bayes_slr.inference.kernels import multihead_gibbs

    return multihead_gibbs.make_kernel(config, warmup)


def _nuts_kernel(config: SLRConfig, warmup: int) -> Kernel:
    from bayes_slr.inference.kernels import nuts

    return nuts.make_kernel(config, warmup)


register_sampler(
    Sampler(
        "gibbs",
        "exact blocked Gibbs; variants whose k is Gaussian given the locations (spiked)",
        lambda law: law.gaussian_key_given_locations,
        _gibbs_kernel,
    )
)
register_sampler(
    Sampler(
        "gibbs-hmc",
        "HMC moves with the locations summed out and exact location moves; variants whose "
        "location law is softmax(c_nu chi) (max)",
        lambda law: law.location_softmax_of_scores,
        _gibbs_hmc_kernel,
    )
)
register_sampler(
    Sampler(
        "nuts",
        "NumPyro NUTS with the locations summed out; any variant",
        lambda law: True,
        _nuts_kernel,
        supports_multihead=lambda law: law.gaussian_key_given_locations,
    )
)
register_sampler(
    Sampler(
        "collapsed",
        "locations drawn one sequence at a time with v integrated out, then v exact and an HMC "
        "move for k given the locations (slower than gibbs-hmc); variants whose location law "
        "is softmax(c_nu chi) (max)",
        lambda law: law.location_softmax_of_scores,
        _collapsed_kernel,
    )
)
register_sampler(
    Sampler(
        "multihead-gibbs",
        "exact Gibbs over each head's state (absent or its token) and conjugate k, v; "
        "multi-head tasks of variants whose k is Gaussian given the locations (spiked)",
        lambda law: False,
        _multihead_gibbs_kernel,
        supports_multihead=lambda law: law.gaussian_key_given_locations,
    )
)
