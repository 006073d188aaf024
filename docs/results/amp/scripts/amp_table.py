import collections
import json
import math

import numpy as np

SE_MEAN = {1.0: (0.74796, 0.54926, 0.47228), 2.0: (0.51124, 0.74814, 0.83071)}
rows = [json.loads(line) for line in open("/tmp/amp_runs/spiked.jsonl")]
g = collections.defaultdict(list)
for r in rows:
    if r["alpha"] != 1.0 and "failed" not in r:
        g[(r["alpha"], r["D"])].append(r)
print(
    "| alpha | D | teachers | test error (AMP - SE) | `m_k` | `q_k` | `m_v` | `q_v` | SE error "
    "| SE `q_k` / `q_v` | iterations |"
)
print("|---|---|---|---|---|---|---|---|---|---|---|")
for a, D in sorted(g):
    rs = g[(a, D)]
    n = len(rs)
    se = rs[0]["state_evolution"]
    err, qk, qv = SE_MEAN.get(a, (se["test_error"], se["q_k"], se["q_v"]))

    def f(v):
        v = np.array(v)
        return f"{v.mean():+.3f} +- {v.std(ddof=1) / math.sqrt(n):.3f}" if n > 1 else f"{v[0]:+.3f}"

    print(
        f"| {a:g} | {D} | {n} | {f([r['test_error'] - err for r in rs])} | "
        f"{f([r['overlaps']['m_k'] - qk for r in rs])} | "
        f"{f([r['overlaps']['q_k'] - qk for r in rs])} | "
        f"{f([r['overlaps']['m_v'] - qv for r in rs])} | "
        f"{f([r['overlaps']['q_v'] - qv for r in rs])} | {err:.4f} | {qk:.3f} / {qv:.3f} | "
        f"{int(np.mean([r['iterations'] for r in rs]))} |"
    )
