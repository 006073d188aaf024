"""``bayes-slr simulate``: draw a teacher and an SLR data set, save it as ``.npz``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

from bayes_slr.cli.common import add_task_arguments, integer, make_config, print_json
from bayes_slr.errors import check_int
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.records import atomic_write, check_output_file, provenance


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``simulate`` subcommand."""
    parser = subparsers.add_parser("simulate", help="simulate an SLR data set (.npz)")
    add_task_arguments(parser)
    parser.add_argument("--N", type=integer, default=1000, help="number of sequences, >= 1")
    parser.add_argument("--seed", type=integer, default=0, help="seed of the teacher and the data")
    parser.add_argument(
        "--exact-teacher",
        action="store_true",
        help="teacher with |k*|^2 = |v*|^2 = D and k* orthogonal to v* (default: prior draw)",
    )
    parser.add_argument("--out", type=Path, help="output .npz file")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Validate everything, simulate, then write the file atomically and summarise."""
    config = make_config(args, L=args.L, nu=args.nu, D=args.D)
    N = check_int("N", args.N, 1)
    out = check_output_file(args.out, force=args.force) if args.out is not None else None
    key_teacher, key_data = jax.random.split(jax.random.PRNGKey(args.seed))
    teacher = draw_teacher(key_teacher, config.D, exact=args.exact_teacher)
    batch = simulate(key_data, config, teacher, N)
    meta = provenance({**config.to_dict(), "N": N, "exact_teacher": args.exact_teacher}, args.seed)
    arrays = {name: np.asarray(value) for name, value in batch._asdict().items()}
    arrays.update(k_star=np.asarray(teacher.k_star), v_star=np.asarray(teacher.v_star))
    if out is not None:
        atomic_write(out, lambda tmp: _save_npz(tmp, arrays, meta))
    chi_at_location = arrays["chi_star"][np.arange(N), arrays["eps"]]
    summary = {
        "config": meta["config"],
        "seed": args.seed,
        "out": None if out is None else str(out),
        "shapes": {name: "x".join(map(str, a.shape)) for name, a in arrays.items()},
        "mean_chi_star_at_location": float(chi_at_location.mean()),
        "stderr_chi_star_at_location": float(chi_at_location.std(ddof=1) / np.sqrt(N))
        if N > 1
        else float("nan"),
        "mean_length": float(arrays["lengths"].mean()),
        "var_y": float(arrays["y"].var()),
    }
    if args.json:
        print_json(summary)
    else:
        for name, value in summary.items():
            print(f"{name}: {value}")


def _save_npz(path: Path, arrays: dict[str, np.ndarray], meta: dict) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, **arrays, config=np.asarray(json.dumps(meta)))
