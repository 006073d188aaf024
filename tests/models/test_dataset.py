"""Bring-your-own data: the reader accepts what ``simulate`` writes and a plain ``X, y`` pair,
refuses bad files by
naming the array, splits reproducibly, resolves the task; the held-out estimator agrees with the
teacher route."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.errors import ConfigError
from bayes_slr.models.dataset import (
    UNKNOWN_LOCATION,
    load_dataset,
    split_holdout,
    training_and_test,
)
from bayes_slr.models.scoring import excess_test_error, held_out_error, zero_predictor
from bayes_slr.models.simulate import draw_teacher, simulate

CONFIG = SLRConfig("spiked", 6, LengthLaw.uniform(4), 2.0, 0.1)
N = 50


@pytest.fixture(scope="module")
def drawn():
    """A teacher and a batch of CONFIG, as ``simulate`` draws them."""
    teacher = draw_teacher(jax.random.PRNGKey(0), CONFIG.D)
    return teacher, simulate(jax.random.PRNGKey(1), CONFIG, teacher, N)


def _simulate_arrays(drawn) -> dict[str, np.ndarray]:
    """The arrays ``bayes-slr simulate`` writes (its config record included)."""
    teacher, batch = drawn
    arrays = {name: np.asarray(value) for name, value in batch._asdict().items()}
    record = {"config": {**CONFIG.to_dict(), "N": N, "exact_teacher": False}, "seed": 0}
    return {
        **arrays,
        "k_star": np.asarray(teacher.k_star),
        "v_star": np.asarray(teacher.v_star),
        "config": np.asarray(json.dumps(record)),
    }


def _write(tmp_path, arrays: dict[str, np.ndarray], name: str = "data.npz"):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_reads_what_simulate_writes(drawn, tmp_path):
    teacher, batch = drawn
    data = load_dataset(_write(tmp_path, _simulate_arrays(drawn)))
    assert (data.N, data.Lbar, data.D) == (N, 4, 6)
    np.testing.assert_array_equal(data.X, np.asarray(batch.X))
    np.testing.assert_array_equal(data.lengths, np.asarray(batch.lengths))
    np.testing.assert_array_equal(data.eps, np.asarray(batch.eps))
    np.testing.assert_array_equal(data.teacher.k_star, np.asarray(teacher.k_star))
    assert data.provenance["config"]["variant"] == "spiked"
    again = data.as_batch()
    np.testing.assert_allclose(again.z_star, batch.z_star, rtol=1e-12, atol=1e-12)


def test_plain_pair_with_float32_and_padding(tmp_path):
    """X and y alone (any real dtype): every length is Lbar; given lengths zero the padding."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5, 3, 2)).astype(np.float32), rng.normal(size=5)
    data = load_dataset(_write(tmp_path, {"X": X, "y": y}))
    assert data.X.dtype == np.float64 and data.teacher is None and data.provenance == {}
    assert np.all(data.lengths == 3) and np.all(data.eps == UNKNOWN_LOCATION)
    assert np.all(np.isnan(np.asarray(data.as_batch().z_star)))
    lengths = np.array([1, 2, 3, 3, 1], dtype=np.int64)
    padded = load_dataset(_write(tmp_path, {"X": X, "y": y, "lengths": lengths}, "padded.npz"))
    assert (
        np.all(padded.X[0, 1:] == 0) and np.all(padded.X[1, 2] == 0) and np.all(padded.X[2] == X[2])
    )


def _bad(drawn, change: dict[str, object]) -> dict[str, np.ndarray]:
    arrays = _simulate_arrays(drawn)
    for name, value in change.items():
        if value is None:
            arrays.pop(name)
        else:
            arrays[name] = value
    return arrays


X_SHAPE = (N, 4, 6)
BAD = {
    "no X": ({"X": None}, "has no array X (needed: X of shape (N, Lbar, D)"),
    "no y": ({"y": None}, "has no array y"),
    "X 2-d": (
        {"X": np.zeros((N, 4))},
        "array X must have shape (N, Lbar, D) with every size >= 1, got (50, 4)",
    ),
    "X empty": (
        {"X": np.zeros((0, 4, 6)), "y": np.zeros(0)},
        "array X must have shape (N, Lbar, D)",
    ),
    "X text": ({"X": np.full(X_SHAPE, "a")}, "array X must hold real numbers, got dtype <U1"),
    "X complex": (
        {"X": np.zeros(X_SHAPE, complex)},
        "array X must hold real numbers, got dtype complex128",
    ),
    "X NaN": (
        {"X": np.where(np.arange(6) == 2, np.nan, np.ones(X_SHAPE))},
        "array X has NaN or inf entries",
    ),
    "y inf": ({"y": np.r_[np.inf, np.zeros(N - 1)]}, "array y has NaN or inf entries (1 of them)"),
    "y N mismatch": (
        {"y": np.zeros(N - 1)},
        "array y must have shape (N,) = (50,) to match X, got (49,)",
    ),
    "y 2-d": (
        {"y": np.zeros((N, 1))},
        "array y must have shape (N,) = (50,) to match X, got (50, 1)",
    ),
    "y bool": ({"y": np.zeros(N, bool)}, "array y must hold real numbers, got dtype bool"),
    "lengths N mismatch": (
        {"lengths": np.ones(N + 1, int)},
        "array lengths must have shape (N,) = (50,) to match X",
    ),
    "lengths zero": (
        {"lengths": np.r_[0, np.ones(N - 1, int)], "eps": None},
        "array lengths must lie in 1..Lbar = 1..4, got 0 at sequence 0",
    ),
    "lengths above Lbar": (
        {"lengths": np.r_[np.ones(N - 1, int), 5], "eps": None},
        "array lengths must lie in 1..Lbar = 1..4, got 5 at sequence 49",
    ),
    "lengths float": (
        {"lengths": np.ones(N)},
        "array lengths must hold integers, got dtype float64",
    ),
    "eps beyond length": (
        {"lengths": np.ones(N, int), "eps": np.r_[np.zeros(N - 1, int), 1]},
        "array eps must lie in 0..length-1 (0-based locations), got 1 at sequence 49",
    ),
    "k_star alone": (
        {"v_star": None},
        "array v_star is missing (give both k_star and v_star, or neither)",
    ),
    "v_star alone": ({"k_star": None}, "array k_star is missing"),
    "k_star length": (
        {"k_star": np.zeros(5)},
        "array k_star must have shape (D,) = (6,), got (5,)",
    ),
    "v_star NaN": ({"v_star": np.full(6, np.nan)}, "array v_star has NaN or inf entries"),
    "config not JSON": ({"config": np.asarray("{variant")}, "array config is not JSON"),
    "config a list": (
        {"config": np.asarray("[1, 2]")},
        "array config must be a JSON object, got list",
    ),
}


@pytest.mark.parametrize("change, message", BAD.values(), ids=BAD.keys())
def test_bad_arrays_are_refused_by_name(drawn, tmp_path, change, message):
    with pytest.raises(ConfigError) as info:
        load_dataset(_write(tmp_path, _bad(drawn, change)))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bad_files_are_refused(drawn, tmp_path):
    good = _write(tmp_path, _simulate_arrays(drawn))
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    text = tmp_path / "text.npz"
    text.write_text("X,y\n1,2\n")
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    objects = _write(
        tmp_path, {"X": np.zeros((2, 1, 1)), "y": np.array([1, "a"], dtype=object)}, "objects.npz"
    )
    cases = {
        corrupt: "is not a .npz archive",
        text: "is not a .npz archive",
        single: "is a single .npy array, not a .npz archive",
        objects: "array y of",
        tmp_path / "missing.npz": "does not exist",
    }
    for path, message in cases.items():
        with pytest.raises(ConfigError, match="^`data`: ") as info:
            load_dataset(path)
        assert message in str(info.value), path


def test_split_is_a_reproducible_partition(tmp_path):
    rng = np.random.default_rng(1)
    data = load_dataset(_write(tmp_path, {"X": rng.normal(size=(20, 2, 3)), "y": np.arange(20.0)}))
    train, test = split_holdout(data, 0.25, seed=3)
    assert (train.N, test.N) == (15, 5)
    assert sorted(np.r_[train.y, test.y]) == list(np.arange(20.0))
    np.testing.assert_array_equal(split_holdout(data, 0.25, seed=3)[1].y, test.y)
    assert not np.array_equal(split_holdout(data, 0.25, seed=4)[1].y, test.y)
    for fraction in (0.0, 1.0, 0.01, 0.99, math.nan):
        with pytest.raises(ConfigError, match="holdout must"):
            split_holdout(data, fraction, seed=0)
    assert training_and_test(data._replace(teacher=object()), 0.25, 0)[1] is None


def test_held_out_error_is_the_plain_mean_and_the_pair_formula():
    """Independent route: numpy means of (y - f)^2 and of the cross-replicate products (chunked
    evaluation).
    """
    n, G = 200, 4
    batch = simulate(
        jax.random.PRNGKey(2), CONFIG, draw_teacher(jax.random.PRNGKey(3), CONFIG.D), n
    )
    X, y = np.asarray(batch.X), np.asarray(batch.y)
    single = held_out_error(CONFIG, batch, lambda X, lengths: 0.3 * X[:, 0, 0], chunk_size=64)
    residual = (y - 0.3 * X[:, 0, 0]) ** 2
    assert single.value == pytest.approx(residual.mean() - CONFIG.Delta, rel=1e-12)
    assert single.stderr == pytest.approx(residual.std(ddof=1) / math.sqrt(n), rel=1e-12)
    paired = held_out_error(CONFIG, batch, lambda X, lengths: X[:, 0, :G], chunk_size=64)
    f = X[:, 0, :G]
    pairs = [(y - f[:, g]) * (y - f[:, h]) for g in range(G) for h in range(G) if g != h]
    assert paired.value == pytest.approx(np.mean(pairs) - CONFIG.Delta, rel=1e-10)
    assert paired.stderr_draws > 0 and paired.n_test == n


def test_held_out_error_agrees_with_the_teacher_route():
    """Held-out sequences of a teacher score a predictor as fresh sequences of that teacher do
    (within 4.5 SE).
    """
    teacher = draw_teacher(jax.random.PRNGKey(4), CONFIG.D)
    held_out = simulate(jax.random.PRNGKey(5), CONFIG, teacher, 20_000)

    def predictor(X, lengths):
        return 0.5 * X[:, 0] @ teacher.v_star / math.sqrt(CONFIG.D)

    for predict in (zero_predictor, predictor):
        by_data = held_out_error(CONFIG, held_out, predict)
        by_teacher = excess_test_error(
            jax.random.PRNGKey(6), CONFIG, teacher, predict, N_test=20_000
        )
        assert abs(by_data.value - by_teacher.value) < 4.5 * math.hypot(
            by_data.stderr, by_teacher.stderr
        )
