import json
import resource
import sys
import time

t0 = time.perf_counter()
from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()
from bayes_slr.experiments.amp import AMPOptions, amp_point, check_point
from bayes_slr.inference import amp
from bayes_slr.models.spec import LengthLaw, SLRConfig

D, alpha, dtype = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
config = SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, 0.1)
options = AMPOptions(dtype=dtype, state_evolution=False, history=False)
check_point(config, alpha, options)
t1 = time.perf_counter()
row = amp_point(config, alpha, 0, options)
t2 = time.perf_counter()
print(
    json.dumps(
        {
            "D": D,
            "alpha": alpha,
            "dtype": dtype,
            "N": row["N"],
            "NLD": row["N"] * 3 * D,
            "point_s": round(t2 - t1, 1),
            "gamp_s": round(row["seconds"], 1),
            "iterations": row["iterations"],
            "converged": row["converged"],
            "test_error": round(row["test_error"], 4),
            "stderr": round(row["stderr"], 4),
            "overlaps": {k: round(v, 4) for k, v in row["overlaps"].items()},
            "estimated_GiB": round(amp.memory_bytes(config, row["N"], dtype) / 2**30, 2),
            "peak_rss_GiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "process_s": round(t2 - t0, 1),
        }
    ),
    flush=True,
)
