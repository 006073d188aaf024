"""Ctrl-C is never lost: real SIGINTs sent to a running command at several moments end it with exit
130, one line, and no output written (a sweep keeps its finished points in its log); an interrupt
that Python swallows in a garbage-collection callback (as happened in JAX's) still stops the run.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bayes_slr import interrupts
from bayes_slr.cli.main import main

THEORY = [
    "theory",
    "--activations",
    "linear",
    "--alpha",
    "1",
    "2",
    "4",
    "8",
    "--channel-draws",
    "512",
]


def _start(tmp_path: Path) -> subprocess.Popen:
    argv = [*THEORY, "--out", str(tmp_path / "out"), "--plot", str(tmp_path / "curve.png")]
    argv.append("--progress")  # stderr is a pipe: progress bars only when asked
    return subprocess.Popen(
        [sys.executable, "-m", "bayes_slr.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(process: subprocess.Popen, marker: str, seen: list[str]) -> None:
    """Read the child's stderr until ``marker`` appears (an event, not a time)."""
    buffer = ""
    while marker not in buffer:
        character = process.stderr.read(1)
        if not character:
            pytest.fail(f"the command ended before printing {marker!r}: {buffer[-500:]}")
        buffer += character
    seen.append(buffer)


def _wait_for_library(process: subprocess.Popen, name: str) -> None:
    """Wait until the child has mapped an extension module whose file name contains ``name``:
    it is then importing past the start of the ``bayes-slr`` entry point (an event, not a time)."""
    maps = Path(f"/proc/{process.pid}/maps")
    if not maps.exists():
        pytest.skip("needs /proc to see what the child has loaded")
    while name not in maps.read_text():
        if process.poll() is not None:
            pytest.fail(f"the command ended before loading {name}")
        time.sleep(0.001)


@pytest.mark.parametrize(
    "moment", ["while importing", "while the first point computes", "after a point finished"]
)
def test_sigint_ends_the_command_with_130_and_writes_nothing(moment, tmp_path):
    process = _start(tmp_path)
    seen: list[str] = []
    try:
        if moment == "while the first point computes":
            _wait_for(process, "running=1 on local", seen)
        elif moment == "after a point finished":
            _wait_for(process, "1/5", seen)
        else:
            _wait_for_library(process, "_multiarray_umath")  # numpy: the CLI's own imports
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 130, (moment, err[-2000:])
    assert not (tmp_path / "curve.png").exists()
    assert not (tmp_path / "out" / "theory.json").exists()  # no summary of an interrupted sweep
    last = err.strip().splitlines()[-1] if err.strip() else ""
    if moment != "while importing":
        assert "interrupted:" in last and "points finished" in last, err[-2000:]
    if moment == "after a point finished":
        assert "kept in" in last
        assert len((tmp_path / "out" / "theory.jsonl").read_text().splitlines()) >= 1


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_swallowed_in_a_gc_callback_still_stops_the_run(tmp_path, capsys):
    """SIGINT handled inside a garbage-collection callback raises there and Python ignores the
    exception ("Exception ignored in ..."); the run must still end with 130 and write nothing."""
    sent = []

    def interrupt_during_collection(phase: str, info: dict) -> None:
        if phase == "start" and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # handled here, inside the callback

    plot = tmp_path / "risk.png"
    gc.callbacks.append(interrupt_during_collection)
    try:
        code = main(["bayes-risk", "--L", "2", "3", "--plot", str(plot), "--quiet", "--json"])
        gc.collect()
    finally:
        gc.callbacks.remove(interrupt_during_collection)
    assert sent, "no garbage collection ran during the command"
    assert code == 130 and not plot.exists()
    assert "interrupted" in capsys.readouterr().err
    try:  # handled by the command: later work in this process (a sweep, a notebook cell) goes on
        interrupts.raise_if_interrupted()
    except KeyboardInterrupt:
        pytest.fail("the handled interrupt would stop the next sweep in this process")


INTERRUPTED_IN_A_STRING_EXEC = """
import bayes_slr.cli.main
from bayes_slr.cli.entry import run


def main():
    exec("raise KeyboardInterrupt", {})  # as if Ctrl-C came while dataclasses built a function


bayes_slr.cli.main.main = main
run()
"""


def test_an_interrupt_ending_a_string_exec_still_exits_130_under_python_m(tmp_path):
    """CPython records an interrupt that ends a string ``exec`` as unhandled even when it is
    caught, and under ``python -m`` then dies by SIGINT (-2) instead of exiting 130; the entry
    point clears that record, so the exit code is 130 whichever import the interrupt hit."""
    (tmp_path / "interrupted_command.py").write_text(INTERRUPTED_IN_A_STRING_EXEC)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    finished = subprocess.run(
        [sys.executable, "-m", "interrupted_command"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert finished.returncode == 130, finished.stderr[-2000:]
    assert finished.stderr.strip() == "bayes-slr: interrupted; nothing written"


def test_sigint_during_an_uninterrupted_import_arrives_when_the_import_returns(monkeypatch):
    """A SIGINT sent while a module initialises is held (an exception inside JAX's nanobind
    modules aborts the process) and delivered, to the handler in place, right after."""
    delivered: list[str] = []

    def import_while_interrupted(name):
        os.kill(os.getpid(), signal.SIGINT)
        delivered.append(f"imported {name}")
        return sys.modules["json"]

    monkeypatch.setattr(interrupts.importlib, "import_module", import_while_interrupted)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: delivered.append("interrupt"))
    try:
        module = interrupts.import_uninterrupted("json")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert module is sys.modules["json"]
    assert delivered == ["imported json", "interrupt"]
