"""Static tools see the public functions' parameters: the committed stub ``bayes_slr/__init__.pyi``
is the one generated from the signatures the functions have at run time, and mypy accepts the
calls of ``tests/static/public_calls.py`` (every public function, with its real argument names)
while it reports a misspelt argument name and a wrong argument type."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys

import bayes_slr
from bayes_slr.api_files import ROOT, STUB, public_stub

CALLS = ROOT / "tests" / "static" / "public_calls.py"
REGENERATE = "regenerate it with `python -m bayes_slr.api_files`"


def _public_functions() -> list[str]:
    return [
        name
        for name in bayes_slr.__all__
        if inspect.isfunction(getattr(bayes_slr, name, None))
        and getattr(bayes_slr, name).__module__ == "bayes_slr"
    ]


def test_the_committed_stub_is_the_generated_one():
    assert (ROOT / STUB).read_text() == public_stub(), f"{STUB} is stale: {REGENERATE}"


def test_the_stub_declares_every_parameter_of_every_public_function():
    stub = ast.parse((ROOT / STUB).read_text())
    declared = {
        node.name: [argument.arg for argument in node.args.kwonlyargs]
        for node in stub.body
        if isinstance(node, ast.FunctionDef)
    }
    for name in _public_functions():
        assert declared[name] == list(inspect.signature(getattr(bayes_slr, name)).parameters)


def test_the_typed_script_calls_every_public_function():
    called = {
        node.func.attr
        for node in ast.walk(ast.parse(CALLS.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "bayes_slr"
    }
    assert set(_public_functions()) <= called, set(_public_functions()) - called


def test_mypy_accepts_the_public_calls_and_reports_a_wrong_name_and_type(tmp_path):
    wrong = tmp_path / "wrong_calls.py"
    wrong.write_text('import bayes_slr\n\nbayes_slr.gap(alpah=16)\nbayes_slr.amp(D="500")\n')
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(CALLS),
            str(wrong),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert [line for line in errors if not line.startswith(str(wrong))] == [], run.stdout
    assert len(errors) == 2, run.stdout + run.stderr
    assert 'Unexpected keyword argument "alpah" for "gap"' in errors[0]
    assert 'Argument "D" to "amp" has incompatible type "str"; expected "int"' in errors[1]
