"""The fixed commands whose JSON output is recorded as golden files (issue 10, item 8).

Run ``python tests/experiments/golden/commands.py --record`` to (re)write
``tests/experiments/golden/*.json``;
``tests/experiments/test_golden.py`` re-runs every command and compares. Each entry says how to
compare: ``exact`` (deterministic computation: equal up to float64 round-off) or
``stderr`` (Monte Carlo / MCMC: every number within a few of its recorded standard errors).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from bayes_slr.records import json_text

GOLDEN = Path(__file__).parent

COMMANDS: dict[str, list[str]] = {
    "gap_population": ["gap", "--L", "2", "3", "10", "--json"],
    "gap_spiked_variable": [
        "gap",
        "--variant",
        "spiked",
        "--nu",
        "1",
        "--L",
        "2",
        "4",
        "--variable-length",
        "--json",
    ],
    "bayes_risk_exact": [
        "bayes-risk",
        "--variant",
        "spiked",
        "--L",
        "3",
        "10",
        "--nu",
        "0",
        "1",
        "4",
        "--json",
    ],
    "bayes_risk_max": [
        "bayes-risk",
        "--variant",
        "max",
        "--L",
        "8",
        "--variable-length",
        "--nu",
        "1",
        "inf",
        "--json",
    ],
    "bayes_risk_mc": [
        "bayes-risk",
        "--L",
        "5",
        "--nu",
        "0.5",
        "2",
        "--method",
        "mc",
        "--samples",
        "20000",
        "--json",
    ],
    "theory_small": [
        "theory",
        "--variant",
        "spiked",
        "--nu",
        "2",
        "--L",
        "3",
        "--Delta",
        "0.1",
        "--activation",
        "softmax",
        "--alpha",
        "2",
        "--lam",
        "1",
        "--bayes",
        "--mc-samples",
        "512",
        "--replicates",
        "4",
        "--json",
    ],
}
"""Name -> bayes-slr arguments. Posterior runs are recorded by ``POSTERIOR`` below."""

POSTERIOR: dict[str, list[str]] = {
    "posterior_gibbs": [
        "posterior",
        "--variant",
        "spiked",
        "--D",
        "12",
        "--L",
        "3",
        "--nu",
        "2",
        "--Delta",
        "0.1",
        "--alpha",
        "4",
        "--sampler",
        "gibbs",
        "--chains",
        "2",
        "--warmup",
        "200",
        "--samples",
        "200",
        "--N-test",
        "4000",
        "--no-erm",
        "--seed",
        "3",
        "--json",
    ],
    "posterior_nuts": [
        "posterior",
        "--variant",
        "spiked",
        "--D",
        "8",
        "--L",
        "3",
        "--nu",
        "2",
        "--Delta",
        "0.1",
        "--alpha",
        "4",
        "--sampler",
        "nuts",
        "--chains",
        "2",
        "--warmup",
        "150",
        "--samples",
        "150",
        "--N-test",
        "4000",
        "--no-erm",
        "--init",
        "informed",
        "--seed",
        "3",
        "--json",
    ],
}


def run_command(arguments: list[str]) -> dict:
    """Run ``bayes-slr arguments`` in this process and return its JSON output."""
    from bayes_slr.cli.main import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(arguments)
    if code != 0:
        raise RuntimeError(f"bayes-slr {' '.join(arguments)} exited {code}")
    return json.loads(buffer.getvalue())


def record() -> None:
    """Write one golden file per command."""
    for name, arguments in {**COMMANDS, **POSTERIOR}.items():
        output = run_command(arguments)
        record = {"arguments": arguments, "output": output}
        (GOLDEN / f"{name}.json").write_text(json_text(record, indent=1) + "\n")
        print(f"recorded {name}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python tests/experiments/golden/commands.py --record")
    record()
