"""A whole ``gap`` sweep of the current code against the same sweep at an older revision, side by
side on the same machine: wall and CPU time, each point's finishing time, and the rows compared.

Both sweeps start together, as two processes of equal priority, each with an empty persistent
compilation cache (cold) and its own ``--out`` folder; every ``--every`` seconds the script
records how many points each sweep log holds and each process's CPU time (children included).
A sweep still running after ``--minutes`` is stopped, and its figures are lower bounds.

Reported: each sweep's wall and CPU time; the ratios old / new (lower bounds when the old one
was stopped); the points both finished, with the ratio of the times at which each had finished
them (the sweeps run their points in the same order); and the rows of those points compared:
ERM test errors in combined standard errors, the chosen ridge per seed in grid steps, the notes;
every other row equal (fields the old code did not have left out).

``--logs OLD_OUT NEW_OUT`` compares the rows of two sweeps already run (their ``--out`` folders),
each timed on its own (an idle machine for the new one, where its target is stated), without
running anything.

Run (the default sweep, about half an hour for the current code on 2 cores):
``.venv/bin/python benchmarks/sweep_against_revision.py --old 2606b2a --minutes 170 --json
sweep.json -- --alpha 16``; a small check: ``... --old 2606b2a --minutes 5 -- --alpha 2 --D 10
--L 2 3 --activations softmax --seeds 1``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import psutil
from erm_speed import grid_steps  # this folder: the ridges' distance on the default grid

ROOT = Path(__file__).resolve().parents[1]
CLI = "from bayes_slr.cli.entry import run; run()"


def checkout(revision: str, folder: Path) -> Path:
    """The package at ``revision`` unpacked into ``folder`` (``git archive``)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, "bayes_slr"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    folder.mkdir(parents=True)
    tar = folder / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as handle:
        handle.extractall(folder, filter="data")
    return folder


def start(tree: Path, folder: Path, gap_args: list[str]) -> subprocess.Popen:
    """``bayes-slr gap`` of the package in ``tree``, cold, logging into ``folder/out``."""
    cache = folder / "cache"
    cache.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "BAYES_SLR_CACHE": str(cache)}
    command = [sys.executable, "-c", CLI, "gap", *gap_args, "--out", str(folder / "out")]
    command.append("--quiet")
    with open(folder / "stdout", "w") as out, open(folder / "stderr", "w") as err:
        # run from ``folder``: ``python -c`` puts the working folder before PYTHONPATH
        return subprocess.Popen(command, env=env, stdout=out, stderr=err, cwd=folder)


def cpu_seconds(process: subprocess.Popen) -> float:
    """User and system CPU time of ``process`` and its children so far."""
    try:
        handle = psutil.Process(process.pid)
        times = handle.cpu_times()
        return times.user + times.system + times.children_user + times.children_system
    except psutil.Error:
        return float("nan")


def logged(folder: Path) -> list[dict]:
    """The records of the sweep log in ``folder/out`` (one per finished point)."""
    return log_records(folder / "out")


def log_records(out: Path) -> list[dict]:
    """The records of the sweep log ``out/gap.jsonl`` (``out``: a sweep's ``--out`` folder)."""
    path = out / "gap.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def point_name(record: dict) -> tuple:
    """``(variant, L, kind, activation)`` of a log record."""
    point = json.loads(record["key"])["point"]
    return point["variant"], point["L"], point["kind"], point["activation"]


def watch(runs: dict, every: float, minutes: float) -> dict:
    """Sample both sweeps until they end or ``minutes`` pass; stop what still runs then."""
    began = time.monotonic()
    samples = {name: [] for name in runs}
    cpu = {name: 0.0 for name in runs}
    wall = {name: None for name in runs}
    while True:
        now = time.monotonic() - began
        for name, (process, folder) in runs.items():
            if wall[name] is None:
                cpu[name] = max(cpu[name], cpu_seconds(process))
                if process.poll() is not None:
                    wall[name] = now
            samples[name].append((now, len(logged(folder))))
        if all(value is not None for value in wall.values()) or now > 60 * minutes:
            break
        time.sleep(every)
    stopped = []
    for name, (process, _) in runs.items():
        if wall[name] is None:
            cpu[name] = max(cpu[name], cpu_seconds(process))
            process.kill()
            process.wait()
            wall[name] = time.monotonic() - began
            stopped.append(name)
    return {"samples": samples, "cpu": cpu, "wall": wall, "stopped": stopped}


def finishing_times(samples: list[tuple[float, int]], count: int) -> list[float]:
    """The first sample time at which the log held ``i + 1`` points, ``i < count``."""
    return [next(t for t, n in samples if n > i) for i in range(count)]


def flattened(row: dict, prefix: str = "") -> dict:
    """``{"a.b": value}`` of a nested row."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(flattened(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def compared_rows(old: list[dict], new: list[dict]) -> dict:
    """The points both finished: ERM rows in combined standard errors, ridges, notes; the others'
    fields that differ (fields the old row leaves empty left out)."""
    new_rows = {point_name(r): r["result"] for r in new}
    erm, differing = [], []
    for record in old:
        name = point_name(record)
        if name not in new_rows:
            continue
        a, b = record["result"], new_rows[name]
        if a.get("erm") is None:
            changed = sorted(
                key
                for key, value in flattened(a).items()
                if value is not None and flattened(b).get(key) != value
            )
            if changed:
                differing.append({"point": name, "fields": changed})
            continue
        ea, eb = a["erm"], b["erm"]
        erm.append(
            {
                "point": name,
                "old": [ea["test_error"], ea["stderr"]],
                "new": [eb["test_error"], eb["stderr"]],
                "combined_stderrs": (eb["test_error"] - ea["test_error"])
                / math.hypot(ea["stderr"], eb["stderr"]),
                "lam_steps": [grid_steps(x, y) for x, y in zip(ea["lam"], eb["lam"], strict=True)],
                "notes_same": ea["notes"] == eb["notes"],
            }
        )
    return {"erm": erm, "other_rows_differing": differing}


def summarise_rows(rows: dict) -> None:
    """Print the comparison of :func:`compared_rows`: the largest ERM difference in combined
    standard errors, the ridges' distance, whether the notes agree, the other rows that differ."""
    if rows["erm"]:
        worst = max(abs(r["combined_stderrs"]) for r in rows["erm"])
        steps = max(max(r["lam_steps"]) for r in rows["erm"])
        same = all(r["notes_same"] for r in rows["erm"])
        print(
            f"{len(rows['erm'])} ERM rows: largest difference {worst:.2f} combined stderrs, "
            f"ridges at most {steps} grid steps apart, notes the same: {same}"
        )
        for r in sorted(rows["erm"], key=lambda r: -abs(r["combined_stderrs"]))[:5]:
            print(f"  {r['point']}: old {r['old']}, new {r['new']}, {r['combined_stderrs']:+.2f}")
    print(f"other rows differing: {rows['other_rows_differing'] or 'none'}")


def report(result: dict, old: list[dict], new: list[dict]) -> dict:
    """The figures of the module docstring, printed and returned."""
    wall, cpu, stopped = result["wall"], result["cpu"], result["stopped"]
    bound = "at least " if "old" in stopped else ""
    for name in ("old", "new"):
        state = "stopped" if name in stopped else "finished"
        count = len(old if name == "old" else new)
        print(f"{name}: {state}, {count} points, wall {wall[name]:.0f} s, CPU {cpu[name]:.0f} s")
    print(f"wall old / new: {bound}x{wall['old'] / wall['new']:.2f}")
    print(f"CPU old / new: {bound}x{cpu['old'] / cpu['new']:.2f}")
    both = min(len(old), len(new))
    times_old = finishing_times(result["samples"]["old"], both)
    times_new = finishing_times(result["samples"]["new"], both)
    if both:
        print(
            f"the first {both} points: old {times_old[-1]:.0f} s, new {times_new[-1]:.0f} s "
            f"(x{times_old[-1] / times_new[-1]:.2f})"
        )
    rows = compared_rows(old, new)
    summarise_rows(rows)
    return {
        **result,
        "finishing_times": {"old": times_old, "new": times_new},
        "points": {"old": [point_name(r) for r in old], "new": [point_name(r) for r in new]},
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="2606b2a", help="git revision of the old code")
    parser.add_argument("--minutes", type=float, default=170.0, help="stop after this long")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument(
        "--logs", nargs=2, metavar=("OLD_OUT", "NEW_OUT"), help="compare these sweeps' rows only"
    )
    parser.add_argument("gap_args", nargs="*", default=["--alpha", "16"], help="after --")
    args = parser.parse_args()
    if args.logs:
        old, new = (log_records(Path(folder)) for folder in args.logs)
        print(f"points: old {len(old)}, new {len(new)}")
        summarise_rows(compared_rows(old, new))
        return
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        old_tree = checkout(args.old, scratch / "old_tree")
        runs = {}
        for name, tree in (("old", old_tree), ("new", ROOT)):
            (scratch / name).mkdir()
            runs[name] = (start(tree, scratch / name, args.gap_args), scratch / name)
        result = watch(runs, args.every, args.minutes)
        figures = report(result, logged(scratch / "old"), logged(scratch / "new"))
    figures["old_revision"] = args.old
    figures["gap_args"] = args.gap_args
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
