import json
import sys

import jax
import numpy as np

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()
from bayes_slr.formulas.replica_bayes import bayes_state_evolution_history
from bayes_slr.inference import amp
from bayes_slr.models.simulate import draw_teacher
from bayes_slr.models.spec import LengthLaw, SLRConfig

alpha = float(sys.argv[1])
T = int(sys.argv[2])
se = bayes_state_evolution_history(
    SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1),
    alpha=alpha,
    start=(1e-3, 1e-3),
    iterations=T,
    damping=1.0,
    mc_samples=65536,
)
print("SE", np.round(se, 4).tolist(), flush=True)
for D in [int(x) for x in sys.argv[3].split(",")]:
    cfg = SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, 0.1)
    for seed in range(int(sys.argv[4])):
        kt, kd, ks = jax.random.split(jax.random.PRNGKey(seed), 3)
        teacher = draw_teacher(kt, D, exact=True)
        data = amp.amp_data(kd, cfg, teacher, round(alpha * D))
        r = amp.run_amp(
            ks, data, cfg, teacher=teacher, damping=1.0, adaptive=False, max_iter=T, tol=1e-12
        )
        h = np.asarray(r.history)[: T + 1]
        print(
            json.dumps(
                {
                    "D": D,
                    "seed": seed,
                    "dm_k": (h[:, 0] - se[:, 0]).round(4).tolist(),
                    "dq_k": (h[:, 1] - se[:, 0]).round(4).tolist(),
                    "dm_v": (h[:, 2] - se[:, 1]).round(4).tolist(),
                    "dq_v": (h[:, 3] - se[:, 1]).round(4).tolist(),
                }
            ),
            flush=True,
        )
