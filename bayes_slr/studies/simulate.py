"""A drawn teacher and SLR data set of one task, and what it looks like (``simulate``)."""

from __future__ import annotations

import math

import numpy as np

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.simulate_records import DataSummary, SimulatedData, SimulateSettings


def simulate_data(config: SLRConfig, settings: SimulateSettings, seed: int) -> SimulatedData:
    """A teacher (``settings.exact_teacher``: ``|k*|^2 = |v*|^2 = D``, else a prior draw) and
    ``settings.N`` sequences of ``config`` drawn with ``seed``: the arrays and their summary."""
    import jax

    from bayes_slr.models.simulate import draw_task_teacher, simulate

    key_teacher, key_data = jax.random.split(jax.random.PRNGKey(seed))
    teacher = draw_task_teacher(key_teacher, config, exact=settings.exact_teacher)
    batch = simulate(key_data, config, teacher, settings.N)
    arrays = {name: np.asarray(value) for name, value in batch._asdict().items()}
    arrays.update(k_star=np.asarray(teacher.k_star), v_star=np.asarray(teacher.v_star))
    at_location = np.take_along_axis(arrays["chi_star"], arrays["eps"][..., None], axis=-1)
    at_location = at_location[..., 0][arrays.get("present", True)].ravel()
    count = at_location.size
    summary = DataSummary(
        shapes={name: "x".join(map(str, a.shape)) for name, a in arrays.items()},
        mean_chi_star_at_location=float(at_location.mean()) if count else math.nan,
        stderr_chi_star_at_location=(
            float(at_location.std(ddof=1) / math.sqrt(count)) if count > 1 else None
        ),
        mean_length=float(arrays["lengths"].mean()),
        var_y=float(arrays["y"].var()),
    )
    return SimulatedData(summary, arrays)
