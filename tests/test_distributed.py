"""Sweep points on Dask distributed: a loopback LocalCluster of 2 worker processes.

One worker is killed while it runs a point: every point still comes back exactly once,
with the values of a serial run, and the killed point was run again. A point that
raises comes back as its exception (not retried). The sweep's progress bar shows the
workers running points. The same cluster reached by its scheduler address gives the
same results.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import time
from pathlib import Path

import numpy as np
import pytest

import bayes_slr
from bayes_slr.distributed import DaskExecutor
from bayes_slr.errors import ConfigError

SECONDS_PER_POINT = 1.0


def solve(journal: Path, point: dict) -> dict:
    """A deterministic point (values from its seed) that takes a while; starts and ends are
    journaled.
    """
    with open(journal, "a") as handle:
        handle.write(f"start {point['index']} {os.getpid()}\n")
    time.sleep(point.get("seconds", SECONDS_PER_POINT))
    if point.get("fail"):
        raise ValueError(f"point {point['index']} is bad")
    values = np.random.default_rng(point["seed"]).normal(size=3)
    with open(journal, "a") as handle:
        handle.write(f"end {point['index']} {os.getpid()}\n")
    return {"index": point["index"], "values": values.tolist(), "sum": float(values.sum())}


def _journal(path: Path) -> list[tuple[str, int, int]]:
    if not path.exists():
        return []
    return [
        (kind, int(index), int(pid))
        for kind, index, pid in (line.split() for line in path.read_text().splitlines())
    ]


@pytest.fixture(scope="module")
def executor():
    with DaskExecutor(workers=2) as executor:
        yield executor


def test_killed_worker_loses_nothing(executor, tmp_path):
    journal = tmp_path / "journal.txt"
    points = [{"index": i, "seed": 100 + i} for i in range(8)]
    serial = {p["index"]: solve(tmp_path / "serial.txt", {**p, "seconds": 0}) for p in points}
    work = functools.partial(solve, journal)
    worker_pids = set(executor.client.run(os.getpid).values())
    assert len(worker_pids) == 2

    returned, killed = [], None
    for point, result in executor.run(work, points):
        returned.append((point, result))
        if killed is None:
            # kill a worker that is in the middle of a point: the point is lost with it
            deadline = time.monotonic() + 30
            while killed is None and time.monotonic() < deadline:
                entries = _journal(journal)
                running = {(index, pid) for kind, index, pid in entries if kind == "start"} - {
                    (index, pid) for kind, index, pid in entries if kind == "end"
                }
                running = [(index, pid) for index, pid in running if pid in worker_pids]
                if running:
                    killed = running[0]
                    os.kill(killed[1], signal.SIGKILL)
                else:
                    time.sleep(0.05)
            assert killed is not None, "no point was running"

    assert sorted(point["index"] for point, _ in returned) == list(
        range(8)
    )  # each point exactly once
    for point, result in returned:
        assert not isinstance(result, BaseException), result
        assert point in points and result == serial[point["index"]]
    starts = [index for kind, index, _ in _journal(journal) if kind == "start"]
    assert starts.count(killed[0]) >= 2, "the point lost with the killed worker was not run again"


def test_failing_point_comes_back_as_its_exception(executor, tmp_path):
    journal = tmp_path / "journal.txt"
    points = [{"index": i, "seed": i, "seconds": 0.1, "fail": i == 2} for i in range(4)]
    outcomes = {
        point["index"]: result
        for point, result in executor.run(functools.partial(solve, journal), points)
    }
    assert sorted(outcomes) == [0, 1, 2, 3]
    assert isinstance(outcomes[2], ValueError) and "point 2 is bad" in str(outcomes[2])
    assert all(isinstance(outcomes[i], dict) for i in (0, 1, 3))
    assert [index for kind, index, _ in _journal(journal) if kind == "start"].count(
        2
    ) == 1  # not retried


def test_progress_bar_shows_failed_and_running_points_with_their_workers(
    executor, tmp_path, capsys
):
    """One bar for the sweep; its postfix names the workers running points (both, while 4 points of
    1.5 s run, unless the machine is too loaded for the poll to catch both busy).
    """
    from bayes_slr.records import run_sweep

    points = [
        {"index": i, "seed": i, "seconds": 1.5, "fail": i == 0} for i in range(4)
    ]  # polled at 1 s: both run
    done, failures = run_sweep(
        points,
        functools.partial(solve, tmp_path / "journal.txt"),
        executor=executor,
        description="sweep",
    )
    assert len(done) == 3 and len(failures) == 1
    lines = [line for line in capsys.readouterr().err.split("\n") if "sweep:" in line]
    assert len(lines) == 1  # one bar, redrawn in place
    # which workers hold a point at a 1 s poll depends on the machine's load (on a loaded 2-core
    # machine the second worker may not have started yet): the postfix must name the workers
    # running points, both of them only where the poll caught both busy
    assert re.search(r"running=(1 on w[01]|2 on w0,w1)\b", lines[0]), lines[0]
    assert lines[0].split("\r")[-1].startswith("sweep: 100%")
    assert "4/4" in lines[0].split("\r")[-1] and "failed=1" in lines[0].split("\r")[-1]


def test_existing_scheduler_same_results(executor, tmp_path):
    points = [{"index": i, "seed": 7 * i, "seconds": 0} for i in range(5)]
    work = functools.partial(solve, tmp_path / "journal.txt")
    local = {p["index"]: r for p, r in executor.run(work, points)}
    with DaskExecutor(scheduler=executor.client.scheduler.address) as remote:
        assert {p["index"]: r for p, r in remote.run(work, points)} == local
    assert executor.client.status == "running"  # closing the remote client leaves the cluster up


def test_bad_arguments():
    with pytest.raises(ConfigError, match="not both"):
        DaskExecutor(workers=2, scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(ConfigError, match="workers must be an integer >= 1"):
        bayes_slr.theory(workers=0, progress=False)  # checked where a run starts, not below
    assert list(DaskExecutor(workers=1).run(lambda p: p, [])) == []  # nothing to run starts nothing


def test_theory_sweep_on_two_workers_equals_the_serial_sweep(tmp_path):
    """``bayes-slr theory --workers 2`` gives the same rows as in-process, and the same log."""
    import contextlib
    import io
    import json

    from bayes_slr.cli.main import main

    argv = [
        "theory",
        "--nu",
        "2",
        "--L",
        "3",
        "--activation",
        "linear",
        "--alpha",
        "2",
        "4",
        "--bayes",
        "--channel-draws",
        "128",
        "--json",
        "--quiet",
    ]

    def run(extra):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(argv + extra) == 0
        return json.loads(buffer.getvalue())["rows"]

    serial = run(["--out", str(tmp_path / "serial")])
    parallel = run(["--workers", "2", "--out", str(tmp_path / "parallel")])
    assert parallel == serial
    lines = (tmp_path / "parallel" / "theory.jsonl").read_text().splitlines()
    assert len(lines) == len(serial) == len({json.loads(line)["key"] for line in lines})
