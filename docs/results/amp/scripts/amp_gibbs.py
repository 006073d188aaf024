import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()
from bayes_slr.inference import amp
from bayes_slr.inference.predictive import posterior_mean_predictor, thin_draws
from bayes_slr.inference.samplers import run_gibbs
from bayes_slr.models.scoring import excess_error_given_teacher
from bayes_slr.models.simulate import draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import LengthLaw, SLRConfig

D = int(sys.argv[1])
alpha = float(sys.argv[2])
seeds = range(int(sys.argv[3]))
cfg = SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, 0.1)
for seed in seeds:
    t = time.time()
    kt, kd, ks, kg, ke = jax.random.split(jax.random.PRNGKey(100 + seed), 5)
    teacher = draw_teacher(kt, D, exact=True)
    batch = simulate(kd, cfg, teacher, round(alpha * D))
    data = amp.AMPData(batch.X, batch.y, batch.mask)
    r = amp.run_amp(ks, data, cfg, teacher=teacher, tol=1e-8)
    draws = run_gibbs(kg, cfg, batch, chains=4, warmup=300, samples=300)
    k_mean, v_mean = draws.k.mean(axis=(0, 1)), draws.v.mean(axis=(0, 1))
    W = np.asarray(r.state.W).T  # (D, 2): the state stores rows
    half = draws.k.shape[0] // 2

    def split(x):
        return float(x[:half].mean(axis=(0, 1)) @ x[half:].mean(axis=(0, 1)) / D)

    q_gk, q_gv = split(draws.k), split(draws.v)

    # |W_amp - <W>|^2/D with the Monte Carlo noise of <W> removed: E|a - b_hat|^2 = |a-b|^2 +
    # Var(b_hat)
    def dist(a, x):
        b1, b2 = x[:half].mean(axis=(0, 1)), x[half:].mean(axis=(0, 1))
        return float(((a - b1) @ (a - b2)) / D)

    amp_f = amp.amp_predictor(cfg, r.state, own_tilt=False)
    gk = thin_draws(draws.k, 200)
    gv = thin_draws(draws.v, 200)

    def stat(b):
        fa = amp_f(b.X, b.lengths)
        fg = posterior_mean_predictor(cfg, gk, gv, b.X, b.lengths)
        ea = excess_error_given_teacher(cfg, teacher, b, fa)
        eg = excess_error_given_teacher(cfg, teacher, b, fg)
        return jnp.stack([ea, eg, ea - eg], axis=1)

    m = streamed_mean(stat, ke, cfg, teacher, 20000)
    print(
        json.dumps(
            {
                "seed": seed,
                "conv": bool(r.converged),
                "it": int(r.state.iteration),
                "q_amp": [float(W[:, 0] @ W[:, 0] / D), float(W[:, 1] @ W[:, 1] / D)],
                "q_gibbs": [q_gk, q_gv],
                "m_amp": [float(W[:, 0] @ teacher.k_star / D), float(W[:, 1] @ teacher.v_star / D)],
                "m_gibbs": [float(k_mean @ teacher.k_star / D), float(v_mean @ teacher.v_star / D)],
                "dist": [dist(W[:, 0], draws.k), dist(W[:, 1], draws.v)],
                "err_amp": float(m.mean[0]),
                "err_gibbs": float(m.mean[1]),
                "diff": float(m.mean[2]),
                "diff_se": float(m.stderr[2]),
                "sec": round(time.time() - t, 1),
            }
        ),
        flush=True,
    )
