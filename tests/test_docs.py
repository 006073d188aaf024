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
