import json

from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.models.spec import LengthLaw, SLRConfig

cfg = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0)
for alpha in (1.0, 1.02, 1.05, 1.1, 1.15, 1.2, 1.25, 1.5, 1.75, 2.0):
    out = {}
    for init in ("random", "informed"):
        p = bayes_replica_point(cfg, alpha=alpha, init=init, mc_samples=16384, seed=0)
        out[init] = (
            round(p.test_error, 4),
            round(p.overlaps["q_k"], 4),
            round(p.overlaps["q_v"], 6),
            p.converged,
            p.diagnostics.iterations,
        )
    print(alpha, json.dumps(out), flush=True)
