"""The documents that state facts about the code are kept equal to it: the Python example of
docs/api.md runs and shows what its text says, and docs/defaults.md is the table the options
themselves generate."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from bayes_slr.api import defaults_table

DOCS = Path(__file__).parent.parent / "docs"


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_the_api_example_runs_and_prints_what_the_text_says(tmp_path, monkeypatch):
    blocks = _python_blocks((DOCS / "api.md").read_text())
    assert blocks, "docs/api.md has no python example"
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, "docs/api.md", "exec"), {})
    text = printed.getvalue()
    assert "0.2248" in text and "0.352423" in text  # the Bayes errors the text quotes
    assert "nu must be a number >= 0" in text
    assert (tmp_path / "runs" / "gap" / "gap.jsonl").exists()
    # the second run reads the log: same rows, nothing recomputed
    import bayes_slr

    again = bayes_slr.gap(
        variant="spiked",
        L=(2, 3),
        activations=("softmax", "linear"),
        out="runs/gap",
        progress=False,
    )
    assert again.rows[1].population["softmax"] == pytest.approx(again.rows[1].bayes, abs=1e-9)


def test_the_defaults_document_is_the_generated_table():
    text = (DOCS / "defaults.md").read_text()
    assert defaults_table() in text, (
        "docs/defaults.md is out of date: regenerate the table with `python -m bayes_slr.api_files`"
    )


def _sphinx_configuration():
    """docs/conf.py as a module (loading it builds nothing: its hooks run only in a build)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_reference_lists_every_public_name_and_result_type():
    import bayes_slr
    from bayes_slr.api import PUBLIC_FUNCTIONS

    page = (DOCS / "reference" / "index.rst").read_text()
    listed = {name.rsplit(".", 1)[-1] for name in re.findall(r"^   ~?([\w.]+)$", page, re.M)}
    public = set(bayes_slr.__all__) - {"__version__"}
    results = {f.__signature__.return_annotation.__name__ for f in PUBLIC_FUNCTIONS.values()}
    assert public - listed == set() and results - listed == set()


class _Domain:
    objects = {"bayes_slr.experiments.posterior.PosteriorResult.summary": None}

    def resolve_xref(self, env, fromdoc, builder, role, target, node, contnode):
        return target


class _Environment:
    def get_domain(self, name):
        return _Domain()


@pytest.mark.parametrize(
    ("target", "module", "resolved"),
    [
        ("summary", "bayes_slr", "bayes_slr.experiments.posterior.PosteriorResult.summary"),
        ("bayes_slr.studies.gap_rows.GapRow", "", "code"),  # internal, exists: shown as code
        ("GapRow", "bayes_slr.studies.gap_rows", "code"),
        ("bayes_slr.models.variants", "", "code"),  # a module
        ("bayes_slr.studies.gap_rows.GapRows", "", None),  # misspelt: stays broken
        ("NoSuchName", "bayes_slr.studies.gap_rows", None),
        ("bayes_slr.no_such_module", "", None),
    ],
)
def test_the_docs_resolve_a_reference_only_to_what_exists(target, module, resolved):
    conf = _sphinx_configuration()
    node = {"refdomain": "py", "reftarget": target, "refdoc": "x", "reftype": "class"}
    node["py:module"] = module
    app = type("App", (), {"builder": None})()
    assert conf._internal_reference(app, _Environment(), node, "code") == resolved
