"""ArviZ on a posterior's tree as ArviZ users call it: ``az.plot_trace(post.tree)``,
``az.plot_dist``, ``az.summary`` on the defaults at ``D = 20`` (every coordinate of ``k`` and
``v`` would ask for 44 subplots, above ArviZ's 40), the vectors one call away, and a file written
with ``k`` and ``v`` in ``posterior`` read into the same layout."""

from __future__ import annotations

import arviz as az
import matplotlib
import numpy as np
import pytest
import xarray as xr

import bayes_slr
from bayes_slr.inference.posterior_io import OVERLAPS, VECTORS_GROUP, load_posterior, save_posterior

matplotlib.use("Agg")
pytestmark = pytest.mark.filterwarnings("ignore::bayes_slr.BayesSLRWarning")  # 20 draws a chain


@pytest.fixture(scope="module")
def tree():
    post = bayes_slr.posterior(
        D=20, alpha=1, chains=2, warmup=20, samples=20, N_test=100, erm=False, progress=False
    )
    return post.tree


def test_the_default_plots_and_summary_show_the_overlaps(tree):
    import matplotlib.pyplot as plt

    assert tree["posterior"].sizes == {"chain": 2, "draw": 20}
    assert tree[VECTORS_GROUP]["k"].shape == (2, 20, 20)
    az.plot_trace(tree)
    az.plot_dist(tree)
    az.plot_trace(tree, group=VECTORS_GROUP, coords={"dim": [0, 1]})
    summary = az.summary(tree)
    assert sorted(summary.index) == sorted(OVERLAPS)
    plt.close("all")


def test_a_file_with_the_vectors_in_posterior_is_read_into_this_layout(tree, tmp_path):
    old = tree.copy()
    vectors = tree[VECTORS_GROUP].to_dataset()
    old["posterior"] = xr.DataTree(
        xr.merge([tree["posterior"].to_dataset(), vectors]), children=None
    )
    old["posterior"].attrs.update(tree["posterior"].attrs)
    del old[VECTORS_GROUP]
    path = save_posterior(old, tmp_path / "old.nc")
    loaded = load_posterior(path)
    assert "k" not in loaded["posterior"] and set(loaded["posterior"].data_vars) == set(OVERLAPS)
    np.testing.assert_array_equal(loaded[VECTORS_GROUP]["v"].values, vectors["v"].values)
