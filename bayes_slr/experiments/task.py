"""The options every experiment shares, declared once: one name, default and help per concept.

Defaults (docs/defaults.md): spiked SLR, ``nu`` = the variant's own (spiked 2, max inf),
``L = 3``, ``Delta = 0.1``, ``D = 100``, ``seed = 0``. An experiment whose method needs another
value says so in its option's help (AMP runs at ``D = 1000``: it is a large-``D`` algorithm).

The task (variant, ``nu``, ``L``, ``variable_length``, ``Delta``, ``D``, ``heads``, ``presence``)
is declared in :data:`TASK_FIELDS`, one :class:`TaskField` per concept. An ``Options`` class takes
each task field it needs with :func:`task_option`, in one of the :class:`Shape` s (one value, a
list of values that a sweep spreads over its points, or ``None`` meaning "the data file's, else
the default"), and :func:`~bayes_slr.models.spec.task_config` turns the values into the task
``SLRConfig`` (:func:`options_task` for an ``Options`` object): the one place the default of
``nu`` is filled and the length law built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from bayes_slr.attention.erm_settings import LAM_AUTO, lam_accepted
from bayes_slr.errors import Accepts, ConfigError, Each, Integer
from bayes_slr.experiments.base import default_text as _default_text
from bayes_slr.experiments.base import option
from bayes_slr.models.spec import (
    DEFAULT_D,
    DEFAULT_DELTA,
    DEFAULT_L,
    DEFAULT_VARIANT,
    TASK_ACCEPTS,
    SLRConfig,
    task_config,
)
from bayes_slr.models.spec import describe_nu as describe_nu  # the commands' import
from bayes_slr.models.spec import resolved_nu as resolved_nu  # the commands' import
from bayes_slr.models.variants import variant_names

DEFAULT_SEED = 0
NU_DEFAULT_TEXT = "the variant's own: spiked 2, max inf"


@dataclasses.dataclass(frozen=True)
class TaskField:
    """One task concept: its name, its help for one value and for a list, its default.

    Attributes
    ----------
    name : the option's name (the ``SLRConfig`` field it sets, ``L`` for the length law's
        ``Lbar`` and ``variable_length`` for its family).
    help : the help line of one value.
    many_help : the help line of a list of values (``None``: the concept takes one value).
    default : the value when not given (``None`` for ``nu``: the variant's own).
    default_text : how help and docs state the default, when not the plain value.
    choices : the accepted values, or a function returning them (a registry's names).
    """

    name: str
    help: str
    many_help: str | None
    default: Any
    default_text: str | None = None
    choices: Callable[[], Sequence[str]] | None = None


@dataclasses.dataclass(frozen=True)
class Shape:
    """How a command takes a task field: one value or a list (``many``), and whether ``None``
    stands for "the data file's, else the default" (``given``)."""

    many: bool = False
    given: bool = False


ONE = Shape()  # one value, by default the concept's
MANY = Shape(many=True)  # a list of values, each a point of a sweep; by default the concept's
GIVEN = Shape(given=True)  # one value, or None: a data file's, else the concept's default
GIVEN_MANY = Shape(many=True, given=True)  # a list, or None: a data file's, else the default

_LENGTH_NOTE = "(Lbar of the uniform law with --variable-length)"
TASK_FIELDS: dict[str, TaskField] = {
    field.name: field
    for field in (
        TaskField("variant", "token law", None, DEFAULT_VARIANT, choices=variant_names),
        TaskField(
            "nu",
            "signal strength, >= 0 (inf for max only)",
            "signal strengths, each >= 0 (inf for max only)",
            None,
            NU_DEFAULT_TEXT,
        ),
        TaskField(
            "L",
            f"sequence length, >= 1 {_LENGTH_NOTE}",
            f"sequence lengths, each >= 1 {_LENGTH_NOTE}",
            DEFAULT_L,
        ),
        TaskField("variable_length", "length uniform on {1..L} instead of fixed", None, False),
        TaskField(
            "Delta",
            "noise variance of y, >= 0; errors are the excess over it",
            "noise variances, each >= 0",
            DEFAULT_DELTA,
        ),
        TaskField("D", "token dimension, >= 1", None, DEFAULT_D),
        TaskField("heads", "teacher heads H, >= 1 (docs/multihead.md; 1: one-head SLR)", None, 1),
        TaskField(
            "presence",
            "probability rho in (0, 1] that a head's token is present (spiked for rho < 1)",
            None,
            1.0,
        ),
    )
}
"""Every task concept, by name: the one declaration of its help and default."""
TASK_NAMES = tuple(TASK_FIELDS)  # in the order of task_config's arguments


def task_option(
    name: str,
    shape: Shape = ONE,
    *,
    default: Any = dataclasses.MISSING,
    help: str | None = None,
    note: str = "",
    default_text: str | None = None,
    default_note: str = "",
    accepts: Accepts | None = None,
) -> Any:
    """The ``Options`` field of the task concept ``name`` in ``shape``.

    Parameters
    ----------
    name : a key of :data:`TASK_FIELDS`.
    shape : :data:`ONE`, :data:`MANY`, :data:`GIVEN` or :data:`GIVEN_MANY`.
    default : the command's own default, when its method needs another (``D`` of AMP), as the
        shape takes it (a tuple for a list).
    help : the command's own help line, when its method says more (``D`` of AMP).
    note : appended to the help line (``; several values sweep L``).
    default_text : how the default is stated, replacing the concept's.
    default_note : appended to the stated default (``with --data the file's``).
    accepts : the command's own accepted range of one value, when its method needs a narrower
        one than the task's (``D >= 2`` of AMP).
    """
    field = TASK_FIELDS[name]
    value = field.default
    if shape.many and value is not None:
        value = (value,)
    value = value if default is dataclasses.MISSING else default
    fixed = "fixed" if shape.given and value is False else None  # a fixed law, unless a file's
    stated = default_text or field.default_text or fixed
    shown = value if shape.given else None  # the signature's default of "not given"
    if default_note:
        stated = f"{stated or _default_text(value)}; {default_note}"
    line = help or (field.many_help if shape.many else field.help)
    spec = {"choices": field.choices, "default_text": stated, "signature_default": shown}
    accepts = accepts or TASK_ACCEPTS.get(name)  # nu: its variant's range, SLRConfig's
    spec["accepts"] = Each(accepts) if shape.many else accepts
    return option(None if shape.given else value, f"{line}{note}", **spec)


def seed_option(
    help: str = "root seed of every random draw", default: int | None = DEFAULT_SEED, **spec: Any
) -> Any:
    """``seed``: the root seed."""
    return option(default, help, accepts=Integer(0), **spec)


def student_heads_option(applies_to: str) -> Any:
    """``student_heads``: the student's heads ``H_s`` (``None``: the teacher's ``heads``);
    ``applies_to`` says where the command uses them."""
    return option(
        None,
        f"student heads H_s, >= 1 ({applies_to})",
        default_text="the teacher's heads",
        accepts=Integer(1),
    )


def parse_lam(text: str) -> float | str:
    """A command-line ``lam``: ``auto`` or a number (any other word is kept, for
    :func:`~bayes_slr.attention.erm_settings.lam_accepted` to refuse with its message)."""
    try:
        return float(text)
    except ValueError:
        return text


def lam_option(
    default: float | str | None = LAM_AUTO,
    help: str = "ridge of ERM: >= 0, or auto (chosen by held-out validation)",
    **spec: Any,
) -> Any:
    """``lam``: the ridge of ERM, a number or ``"auto"``."""
    return option(default, help, parse=parse_lam, metavar="LAM|auto", accepts=lam_accepted, **spec)


def options_task(options: object, **values: Any) -> SLRConfig:
    """The task of an ``Options`` object: its task fields, each of ``values`` (a point's ``L``,
    ``nu``, ...) in place of the option's (:func:`task_config`; ``D`` is 1 for a command without
    one, to which it is irrelevant)."""
    settings = {name: values.get(name, getattr(options, name, None)) for name in TASK_NAMES}
    return task_config(**{name: value for name, value in settings.items() if value is not None})


class OneTask:
    """The methods of the options of one task (``simulate``, ``amp``, ``theory``)."""

    def config(self) -> SLRConfig:
        """The task (``D = 1`` for a command without ``D``: the equations do not depend on it)."""
        return options_task(self)

    def filled(self) -> dict[str, object]:
        """The variant's default ``nu`` made explicit: the record is complete."""
        return {"nu": self.config().nu}


def check_nonempty(name: str, values: tuple) -> None:
    """Refuse an empty list of values (the options of ``multihead``; the others declare
    ``accepts=Each(...)``)."""
    if len(values) == 0:
        raise ConfigError(f"{name}: give at least one value")
