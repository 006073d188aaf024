"""The public API: one function per experiment, with the command line's names and defaults.

``bayes_slr.gap(L=(3, 5), alpha=16)`` runs what ``bayes-slr gap --L 3 5 --alpha 16`` runs and
returns the typed result (``.rows``, ``.notes``, ``.warnings``, ``.to_pandas()``, ``.plot()``,
``.table()``, ``.to_json()``). Each function's keyword arguments are its experiment's options
(the fields of its ``Options`` class, with their defaults) plus how it runs: ``out`` (a folder:
the resumable log and the summary, or the output file), ``force``, ``workers`` or ``scheduler``
(Dask), ``progress``. A bad value raises :class:`~bayes_slr.errors.ConfigError` naming it,
before any work.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable
from typing import Any

from bayes_slr.experiments import EXPERIMENTS, run_experiment
from bayes_slr.experiments.base import Experiment, Options, option_spec
from bayes_slr.experiments.runner import RUN_ARGUMENTS


def api_function(experiment: Experiment) -> Callable[..., Any]:
    """The public function of ``experiment``: keyword arguments = its options and the run
    arguments, a signature and a docstring made from the options' declarations."""
    options_type = experiment.options_type

    def run(**arguments: Any) -> Any:
        arguments = _with_current_names(name, options_type, arguments)
        unknown = set(arguments) - set(parameters)
        if unknown:
            raise TypeError(
                f"{name}() got unexpected keyword argument(s) {', '.join(sorted(unknown))}"
            )
        how = {key: arguments.pop(key) for key in RUN_ARGUMENTS if key in arguments}
        return run_experiment(experiment, options_type(**arguments), **how)

    name = experiment.name.replace("-", "_")
    fields = options_type.option_fields()
    types_ = options_type.field_types()
    parameters = {
        field.name: inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=_signature_default(field),
            annotation=types_[field.name],
        )
        for field in fields
    }
    for key, (default, annotation, _) in RUN_ARGUMENTS.items():
        parameters[key] = inspect.Parameter(
            key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
        )
    run.__name__ = run.__qualname__ = name
    run.__module__ = "bayes_slr"
    run.__signature__ = inspect.Signature(
        list(parameters.values()), return_annotation=experiment.result_type
    )
    python_name = {
        _flag(field): field.name
        for other in EXPERIMENTS.items()
        for field in other.options_type.option_fields()
    }
    python_name |= {"--" + key: key for key in RUN_ARGUMENTS}
    lines = [
        f"{experiment.summary}.",
        "",
        in_python_terms(experiment.description, python_name),
        "",
        "Parameters",
        "----------",
    ]
    for field in fields:
        spec = option_spec(field)
        stated = spec.stated_default(field.default)
        default = (
            f" Default: {in_python_terms(stated, python_name)}."
            if spec.default_text or spec.signature_default is not None
            else ""
        )
        lines += [
            f"{field.name} : {_type_name(types_[field.name])}",
            f"    {in_python_terms(spec.help_text(), python_name)}.{default}",
        ]
    for key, (_, annotation, text) in RUN_ARGUMENTS.items():
        lines += [f"{key} : {_type_name(annotation)}", f"    {text}."]
    lines += ["", "Returns", "-------", f"{experiment.result_type.__name__}"]
    run.__doc__ = "\n".join(lines)
    return run


def _with_current_names[T](
    function: str, options_type: type[Options], arguments: dict[str, T]
) -> dict[str, T]:
    """``arguments`` with the old name of a renamed option replaced by its name, and a
    ``FutureWarning`` saying so (``TypeError`` when both names are given)."""
    renamed = options_type.renamed()
    for old in sorted(renamed.keys() & arguments.keys()):
        if renamed[old] in arguments:
            raise TypeError(f"{function}() got both {old} and its new name {renamed[old]}")
        warnings.warn(
            f"{function}(): {old} is now {renamed[old]}; the old name will be removed in the next "
            "release",
            FutureWarning,
            stacklevel=3,
        )
    return options_type.with_current_names(arguments)


def _signature_default(field: Any) -> Any:
    """The default a signature shows: the field's, or the plain value its ``None`` stands for
    when no file fixes it (the function passes on only the arguments given, so ``None`` still
    means "not given")."""
    shown = option_spec(field).signature_default
    return field.default if shown is None else shown


def _flag(field: Any) -> str:
    """The command-line flag of an option field."""
    return option_spec(field).flag or "--" + field.name.replace("_", "-")


def in_python_terms(text: str, python_name: dict[str, str]) -> str:
    """``text`` with each flag of the command (``--from``, ``--N-test``) written as its keyword
    argument (``source``, ``N_test``): the docstrings of the API speak Python."""
    return re.sub(r"--[A-Za-z][\w-]*", lambda match: python_name.get(match[0], match[0]), text)


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


PUBLIC_FUNCTIONS: dict[str, Callable[..., Any]] = {
    function.__name__: function for function in map(api_function, EXPERIMENTS.items())
}
"""The public function of every registered experiment, by its Python name (``posterior_sweep``
for the command ``posterior-sweep``), in registration order."""
globals().update(PUBLIC_FUNCTIONS)


def defaults_table() -> str:
    """A Markdown table of every option of every command: its default and help, in one place
    (``docs/defaults.md`` holds it; a test keeps them equal)."""
    rows = {}
    for experiment in EXPERIMENTS.items():
        for field in experiment.options_type.option_fields():
            spec = option_spec(field)
            if not spec.cli:
                continue
            default = spec.stated_default(field.default)
            key = (spec.flag or "--" + field.name.replace("_", "-"), default, spec.help_text())
            rows.setdefault(key, []).append(experiment.name)
    lines = ["| option | default | commands | meaning |", "|---|---|---|---|"]
    for (flag, default, help_text), commands in sorted(rows.items()):
        cells = [f"`{flag}`", default, ", ".join(sorted(commands)), help_text]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)
