"""Peak RSS of the stages of one AMP point, one fresh process per (D, dtype, stage).

Usage: python amp_memory.py D DTYPE STAGE, STAGE one of
  import  (jax and bayes_slr imported, nothing run)
  data    (the training set: amp_data)
  gamp    (amp_data, then run_amp to 1e-6)
  score   (the test scoring alone, chunked as amp_point does: an AMP predictor at the start, 20000
  sequences)
  point   (amp_point without state evolution: simulation + GAMP + 20000 test sequences, both
  predictors)
Spiked nu = 2, L = 3, Delta = 0.1, alpha = 2, seed 0. Prints one JSON line.
"""

import json
import resource
import sys
import time

D, dtype, stage = int(sys.argv[1]), sys.argv[2], sys.argv[3]
import jax

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()
from bayes_slr.experiments.amp import AMPOptions, amp_point
from bayes_slr.inference import amp
from bayes_slr.models.scoring import excess_test_error
from bayes_slr.models.simulate import chunk_sequences, draw_teacher
from bayes_slr.models.spec import LengthLaw, SLRConfig

alpha = 2.0
config = SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, 0.1)
N = round(alpha * D)
t0 = time.perf_counter()
key_teacher, key_data, key_start, key_test = jax.random.split(jax.random.PRNGKey(0), 4)
teacher = draw_teacher(key_teacher, D, exact=True)
if stage in ("data", "gamp"):
    data = jax.block_until_ready(amp.amp_data(key_data, config, teacher, N, dtype=dtype))
    if stage == "gamp":
        jax.block_until_ready(
            amp.run_amp(key_start, data, config, teacher=teacher, tol=1e-6, max_iter=300)
        )
elif stage == "score":
    small = amp.amp_data(key_data, config, teacher, 2, dtype=dtype)
    state = amp.amp_init(key_start, small, config)
    excess_test_error(
        key_test,
        config,
        teacher,
        amp.amp_predictor(config, state),
        N_test=20_000,
        chunk_size=chunk_sequences(config),
    )
elif stage == "point":
    amp_point(config, alpha, 0, AMPOptions(dtype=dtype, state_evolution=False, history=False))
elif stage != "import":
    raise SystemExit(f"unknown stage {stage}")
print(
    json.dumps(
        {
            "D": D,
            "alpha": alpha,
            "N": N,
            "dtype": dtype,
            "stage": stage,
            "tokens_GB": round(N * 3 * D * (4 if dtype == "float32" else 8) / 1e9, 3),
            "estimate_GB": round(amp.memory_bytes(config, N, dtype) / 1e9, 2),
            "peak_rss_GB": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9, 2
            ),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    ),
    flush=True,
)
