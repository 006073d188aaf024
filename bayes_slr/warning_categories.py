"""The categories under which every warning of a result also reaches Python's ``warnings``.

A result's ``warnings`` are lines of text (kept in its JSON and printed after its table). When a
computation finishes, :func:`issue_warnings` also issues each line with :func:`warnings.warn`
under one of these categories, all subclasses of :class:`BayesSLRWarning`, so the habits of the
ecosystem work: ``warnings.catch_warnings``, ``warnings.filterwarnings("error",
category=bayes_slr.ConvergenceWarning)``, ``pytest.warns`` and pytest's ``filterwarnings``.
Python's own ``-W error::bayes_slr.ConvergenceWarning`` and ``PYTHONWARNINGS`` cannot name them
(they import no package: Python ignores the option), so the package reads its own variable,
:data:`WARNINGS_VARIABLE`, when it is imported (:func:`filter_from_environment`): with
``BAYES_SLR_WARNINGS=error`` any script fails on the first warning of a result, after the result
wrote its outputs. On the command line, ``--strict`` does the same (exit code 4).

The category of a line is decided here, in one place, from the words the toolkit's warnings use
(:data:`CATEGORY_WORDS`); a line that none matches is a plain :class:`BayesSLRWarning`.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from pathlib import Path


class BayesSLRWarning(UserWarning):
    """A number of a result that should not be read as it stands (base of the toolkit's
    warnings)."""


class ConvergenceWarning(BayesSLRWarning):
    """An iteration or a sampler that did not converge (``r_hat``, effective draws, divergent
    transitions, starts that disagree, a fixed point or GAMP that did not settle)."""


class RSInstabilityWarning(BayesSLRWarning):
    """A replica-symmetric fixed point that is unstable (replicon at or above 1)."""


class HardPhaseWarning(BayesSLRWarning):
    """A hard phase: the best known algorithm (AMP from a random start) does not reach the
    Bayes-optimal error."""


class AccuracyWarning(BayesSLRWarning):
    """A number whose own numerical error (Monte Carlo draws, importance weights) is too large
    to decide what it is asked to decide."""


CATEGORY_WORDS: tuple[tuple[type[BayesSLRWarning], re.Pattern[str]], ...] = (
    (HardPhaseWarning, re.compile(r"hard phase")),
    (RSInstabilityWarning, re.compile(r"RS-unstable")),
    (
        ConvergenceWarning,
        re.compile(r"converge|r_hat|ESS bulk|divergent transitions|starts disagree|stuck"),
    ),
    (AccuracyWarning, re.compile(r"Monte Carlo|standard errors?|not resolved|few draws")),
)
"""The first category whose words a warning line contains is its category."""

PACKAGE_FOLDER = str(Path(__file__).parent)


def warning_category(line: str) -> type[BayesSLRWarning]:
    """The category of one warning line (:data:`CATEGORY_WORDS`; :class:`BayesSLRWarning`
    when no words match)."""
    for category, words in CATEGORY_WORDS:
        if words.search(line):
            return category
    return BayesSLRWarning


def issue_warnings(lines: Iterable[str]) -> None:
    """Issue each warning line with :func:`warnings.warn` under its category, attributed to the
    first caller outside the package (the user's line)."""
    for line in lines:
        warnings.warn(line, warning_category(line), skip_file_prefixes=(PACKAGE_FOLDER,))


WARNINGS_VARIABLE = "BAYES_SLR_WARNINGS"
"""The environment variable read on import: comma-separated ``ACTION`` or ``ACTION:CATEGORY``
entries (``error``, ``ignore:AccuracyWarning,error:ConvergenceWarning``), each applied with
:func:`warnings.filterwarnings` in order, so a later entry takes precedence; ``ACTION`` is one of
Python's (:data:`WARNING_ACTIONS`), ``CATEGORY`` one of this module's classes (every
:class:`BayesSLRWarning` without one)."""

WARNING_ACTIONS = ("default", "error", "ignore", "always", "module", "once")
"""The actions of :func:`warnings.filterwarnings`."""


def filter_from_environment(value: str | None = None) -> None:
    """Apply :data:`WARNINGS_VARIABLE` (``value``, default: the environment's) to Python's
    warning filters; an entry that is not understood is skipped with one ``RuntimeWarning``
    naming it and what is accepted (as Python does with a bad ``-W``)."""
    value = os.environ.get(WARNINGS_VARIABLE, "") if value is None else value
    categories = {cls.__name__: cls for cls in (BayesSLRWarning, *BayesSLRWarning.__subclasses__())}
    for entry in [entry.strip() for entry in value.split(",") if entry.strip()]:
        action, _, name = entry.partition(":")
        category = categories.get(name or "BayesSLRWarning")
        if action not in WARNING_ACTIONS or category is None:
            warnings.warn(
                f"{WARNINGS_VARIABLE}: entry {entry!r} ignored: give ACTION or ACTION:CATEGORY, "
                f"ACTION one of {', '.join(WARNING_ACTIONS)}, CATEGORY one of "
                f"{', '.join(categories)}",
                RuntimeWarning,
                stacklevel=2,
            )
            continue
        warnings.filterwarnings(action, category=category)
