"""Notebooks are written as a user would write them: they import only the public API
(``import bayes_slr`` / ``from bayes_slr import ...``), never a module inside the package; their
committed outputs hold no machine paths and no warnings."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def _code(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def _internal_imports(source: str) -> list[str]:
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.startswith("%")))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("bayes_slr.")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bayes_slr."):
            found.append(node.module)
    return found


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_a_notebook_imports_only_the_public_api(notebook):
    internal = [name for source in _code(notebook) for name in _internal_imports(source)]
    assert not internal, f"{notebook.name} imports package internals: {sorted(set(internal))}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_committed_outputs_hold_no_machine_paths_or_warnings(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    text = json.dumps([cell.get("outputs", []) for cell in cells])
    for marker in ("/work/", "/root/", "/home/", "/tmp/", "site-packages", "Warning:"):
        assert marker not in text, f"{notebook.name}: committed output contains {marker!r}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_committed_outputs_come_from_the_projects_python(notebook):
    metadata = json.loads(notebook.read_text())["metadata"]
    version = metadata.get("language_info", {}).get("version", "")
    assert version.startswith(("3.12", "3.13")), f"{notebook.name} was run on Python {version}"
