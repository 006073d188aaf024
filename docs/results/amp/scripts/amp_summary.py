import collections
import json
import math
import sys

import numpy as np

SE_MEAN = {
    1.0: (0.74796, 0.75018, 0.54926, 0.47228),
    2.0: (0.51124, 0.51281, 0.74814, 0.83071),
}  # 4 SE seeds x 65536
rows = []
for f in sys.argv[1:]:
    for line in open(f):
        r = json.loads(line)
        if "failed" in r:
            print("FAILED", r)
            continue
        rows.append(r)
groups = collections.defaultdict(list)
for r in rows:
    groups[(r["variant"], str(r["nu"]), r["alpha"], r["D"])].append(r)
print(
    "variant nu alpha D n | err-SE (sd/sqrt n) | pmf-SE | m_k-q_k* | q_k-q_k* | m_v-q_v* | "
    "q_v-q_v* | conv | iters | SE err"
)
for key in sorted(groups):
    g = groups[key]
    n = len(g)
    se = g[0]["state_evolution"]
    a = key[2]
    if key[0] == "spiked" and a in SE_MEAN:
        se_err, se_pmf, qk, qv = SE_MEAN[a]
    else:
        se_err, se_pmf, qk, qv = (
            se["test_error"],
            se["posterior_mean_f_error"],
            se["q_k"],
            se["q_v"],
        )

    def stat(vals):
        v = np.array(vals)
        return f"{v.mean():+.4f}±{(v.std(ddof=1) / math.sqrt(n) if n > 1 else float('nan')):.4f}"

    print(
        *key,
        n,
        "|",
        stat([r["test_error"] - se_err for r in g]),
        "|",
        stat([r["posterior_mean_f_error"] - se_pmf for r in g]),
        "|",
        stat([r["overlaps"]["m_k"] - qk for r in g]),
        "|",
        stat([r["overlaps"]["q_k"] - qk for r in g]),
        "|",
        stat([r["overlaps"]["m_v"] - qv for r in g]),
        "|",
        stat([r["overlaps"]["q_v"] - qv for r in g]),
        "|",
        sum(r["converged"] for r in g),
        "|",
        int(np.mean([r["iterations"] for r in g])),
        "|",
        round(se_err, 4),
    )
