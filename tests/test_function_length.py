"""No function of the package is longer than :data:`MAX_LINES` lines (from its ``def`` line to
its last line, docstring included): a longer one is split into functions whose names say what
each part does."""

from __future__ import annotations

import ast
from pathlib import Path

import bayes_slr

MAX_LINES = 80
PACKAGE = Path(bayes_slr.__file__).parent


def long_functions(root: Path, limit: int) -> list[str]:
    """``path:line name (n lines)`` of every function or method under ``root`` longer than
    ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines})")
    return found


def test_the_check_sees_a_long_function(tmp_path):
    """The walk counts from the ``def`` line to the last line, nested functions included."""
    body = "\n".join(f"    x{i} = {i}" for i in range(4))
    (tmp_path / "module.py").write_text(
        f"def short():\n{body}\n\n\nclass A:\n    def m(self):\n"
        + "\n".join(f"        y{i} = {i}" for i in range(5))
    )
    assert long_functions(tmp_path, 5) == ["module.py:9 m (6)"]


def test_no_function_is_longer_than_the_limit():
    assert long_functions(PACKAGE, MAX_LINES) == []
