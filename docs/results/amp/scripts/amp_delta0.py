import json
import sys

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()
from bayes_slr.experiments.amp import AMPOptions, amp_point
from bayes_slr.models.spec import LengthLaw, SLRConfig

D = int(sys.argv[1])
for alpha in [float(a) for a in sys.argv[2].split(",")]:
    for init in ("random", "informed"):
        r = amp_point(
            SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, 0.0),
            alpha,
            0,
            AMPOptions(init=init, history=False, n_test=10000, se_samples=16384),
        )
        se = r["state_evolution"]
        print(
            json.dumps(
                {
                    "alpha": alpha,
                    "init": init,
                    "err": round(r["test_error"], 4),
                    "se_err": round(se["test_error"], 4),
                    "ov": {k: round(v, 4) for k, v in r["overlaps"].items()},
                    "se_q": [round(se["q_k"], 4), round(se["q_v"], 6)],
                    "it": r["iterations"],
                    "conv": r["converged"],
                    "res": r["residual"],
                    "d": r["final_damping"],
                }
            ),
            flush=True,
        )
