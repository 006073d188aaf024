import itertools
import json
import sys
import time

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()
from bayes_slr.experiments.amp import AMPOptions, amp_point
from bayes_slr.models.spec import LengthLaw, SLRConfig

out = sys.argv[1]
plan = json.loads(sys.argv[2])  # list of {variant, nu, Ds, alphas, seeds, opts}
import os

done = set()
if os.path.exists(out):
    for line in open(out):
        r = json.loads(line)
        done.add((r["variant"], float(r["nu"]), r["D"], float(r["alpha"]), r["seed"]))
for block in plan:
    for D, a, s in itertools.product(block["Ds"], block["alphas"], block["seeds"]):
        if (block["variant"], float(block["nu"]), D, float(a), s) in done:
            continue
        cfg = SLRConfig(
            block["variant"],
            D,
            LengthLaw.fixed(block.get("L", 3)),
            float(block["nu"]),
            block.get("Delta", 0.1),
        )
        t = time.time()
        try:
            r = amp_point(cfg, a, s, AMPOptions(**block.get("opts", {})))
        except Exception as exc:
            r = {"alpha": a, "D": D, "seed": s, "failed": repr(exc)}
        r.update(
            variant=block["variant"],
            nu=block["nu"],
            wall=time.time() - t,
            opts=block.get("opts", {}),
        )
        with open(out, "a") as f:
            f.write(json.dumps(r) + "\n")
