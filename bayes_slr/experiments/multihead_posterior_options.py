"""The options of ``posterior`` for a multi-head task (``--heads``, ``--presence``,
docs/multihead.md section 8): what it samples, and the one-head parts it has no counterpart of
yet (refused when asked for, else skipped with a note). Imports without JAX."""

from __future__ import annotations

import dataclasses
from typing import Any

from bayes_slr.errors import ConfigError
from bayes_slr.studies.multihead_posterior_records import NOT_YET
from bayes_slr.studies.posterior_records import GivenSampling


def resolve_multihead(options: Any, given: GivenSampling) -> GivenSampling:
    """Refuse what a multi-head posterior does not do yet (a posterior or data file, the ERM
    comparison, the start check) when ``options`` ask for it; ``given`` with those not given
    set to not run."""
    for name in ("source", "data"):
        if getattr(options, name) is not None:
            raise ConfigError(
                f"`{name}` does not take `heads` or `presence` yet: a multi-head posterior "
                "is sampled on simulated data only"
            )
    for name, what in NOT_YET.items():
        if getattr(options, name):
            raise ConfigError(
                f"`{name}` is not available with `heads` or `presence` yet: {what} has no "
                "multi-head counterpart"
            )
    return dataclasses.replace(given, **dict.fromkeys(NOT_YET, False))
