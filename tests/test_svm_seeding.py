"""The native seeding helpers against the published rules written in NumPy."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_ext._fast._smo import (
    KernelColumns,
    gather_block,
    is_symmetric,
    split_rows,
    update_gradient,
)
from sklearn_ext.svm._kernel_store import KernelStore
from sklearn_ext.svm._seeding import _mir, seed_pair
from sklearn_ext.svm._solver import PairProblem, repair_equality, solve_pair

_FORM = {np.float64: "dense", np.float32: "dense32"}


def _reference_sir(store, t_rows, r_rows, y_t, y_r, alpha_r, C_t, rng):
    """SIR in NumPy, as the package ran it before the loop moved to Cython."""
    n_t = t_rows.shape[0]
    alpha_t = np.zeros(n_t)
    if n_t == 0:
        return alpha_t
    leaving = np.flatnonzero(alpha_r > 0)
    if leaving.shape[0] == 0:
        return alpha_t
    leaving = leaving[np.argsort(-alpha_r[leaving], kind="stable")]
    score = np.where(
        y_r[leaving][:, None] == y_t[None, :],
        store.block(r_rows[leaving], t_rows),
        -np.inf,
    )
    used = np.zeros(n_t, dtype=bool)
    for j, p in enumerate(leaving):
        row = score[j]
        q = int(np.argmax(row))
        if not np.isfinite(row[q]):
            free = np.flatnonzero(~used)
            q = int(rng.choice(free)) if free.shape[0] else int(rng.integers(n_t))
        alpha_t[q] += alpha_r[p]
        if not used[q]:
            used[q] = True
            score[:, q] = -np.inf
    return np.minimum(alpha_t, C_t)


def _reference_seed_pair(store, previous, idx, y, C, *, seeding, rng):
    """``seed_pair`` for "sir", "keep" and "mir" with NumPy position tables."""
    n = store.n_samples
    pos_prev = np.full(n, -1, dtype=np.intp)
    pos_prev[previous.idx] = np.arange(previous.idx.shape[0])
    pos_new = np.full(n, -1, dtype=np.intp)
    pos_new[idx] = np.arange(idx.shape[0])
    in_s = pos_prev[idx] >= 0
    s_rows, t_rows = idx[in_s], idx[~in_s]
    r_rows = previous.idx[pos_new[previous.idx] < 0]
    alpha_prev_s = previous.alpha[pos_prev[s_rows]]
    alpha_r = previous.alpha[pos_prev[r_rows]]
    y_s, y_t, y_r = y[in_s], y[~in_s], previous.y[pos_prev[r_rows]]
    C_s, C_t = C[in_s], C[~in_s]
    if seeding == "keep":
        alpha_t = np.zeros(t_rows.shape[0])
    elif seeding == "sir":
        alpha_t = _reference_sir(store, t_rows, r_rows, y_t, y_r, alpha_r, C_t, rng)
    else:
        f_s = y_s * previous.G[pos_prev[s_rows]]
        alpha_t = _mir(
            store,
            s_rows,
            t_rows,
            r_rows,
            y_s,
            y_t,
            y_r,
            alpha_prev_s,
            alpha_r,
            C_s,
            C_t,
            f_s,
            previous.rho,
        )
    alpha = np.empty(idx.shape[0])
    alpha[in_s] = alpha_prev_s
    alpha[~in_s] = np.clip(alpha_t, 0.0, C_t)
    repair_equality(alpha, y, C, prefer=~in_s)
    G_s = np.ascontiguousarray(previous.G[pos_prev[s_rows]])
    delta_s = alpha[in_s] - alpha_prev_s
    moved_s = delta_s != 0
    changed = np.concatenate([s_rows[moved_s], t_rows, r_rows]).astype(np.intp)
    delta_ya = np.concatenate(
        [(y_s * delta_s)[moved_s], y_t * alpha[~in_s], -(y_r * alpha_r)]
    )
    keep = delta_ya != 0
    update_gradient(
        store.columns,
        np.ascontiguousarray(s_rows),
        np.ascontiguousarray(y_s),
        G_s,
        np.ascontiguousarray(changed[keep]),
        np.ascontiguousarray(delta_ya[keep]),
    )
    G = np.empty(idx.shape[0])
    G[in_s] = G_s
    sv = alpha > 0
    G_t = np.full(t_rows.shape[0], -1.0)
    update_gradient(
        store.columns,
        np.ascontiguousarray(t_rows),
        np.ascontiguousarray(y_t),
        G_t,
        np.ascontiguousarray(idx[sv]),
        np.ascontiguousarray(y[sv] * alpha[sv]),
    )
    G[~in_s] = G_t
    return alpha, G


def _store(X, form):
    """Kernel stores of every form: dense, float32, bounded columns, callable."""
    if form == "dense":
        return KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=10)
    if form == "float32":
        return KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=10, dtype=np.float32)
    # A budget of a few columns: kernel values computed natively or by Python.
    budget = 6 * 8 * X.shape[0] / 2**20
    if form == "columns":
        return KernelStore(X, "rbf", 0.3, 3, 0.0, cache_size=budget)
    return KernelStore(
        X,
        lambda A, B: np.exp(-0.3 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)),
        0.0,
        3,
        0.0,
        cache_size=budget,
    )


@pytest.mark.parametrize("form", ["dense", "float32", "columns", "callable"])
@pytest.mark.parametrize("seeding", ["sir", "keep", "mir"])
@pytest.mark.parametrize("one_label_added", [False, True])
def test_seed_pair_matches_the_numpy_rules(
    form, seeding, one_label_added, global_random_seed
):
    """Cython seeding gives NumPy's alphas and gradients bit for bit, SIR's
    random replacements included (added points all of one label)."""
    rng = np.random.default_rng(global_random_seed)
    n = 90
    X = rng.normal(size=(n, 4))
    y_all = np.where(rng.random(n) < 0.45, 1.0, -1.0)
    order = rng.permutation(n)
    if one_label_added:
        # The added chunk holds positives only: the negatives leaving with
        # the removed chunk find no point of their label.
        positives = order[y_all[order] > 0]
        t_block = positives[:10]
        rest = np.setdiff1d(order, t_block)
        r_block = rng.choice(rest, 12, replace=False)
    else:
        t_block, r_block = order[:15], order[15:30]
    shared = np.setdiff1d(np.arange(n), np.concatenate([t_block, r_block]))
    # Unsorted rows, as a stored solution's may be.
    prev_idx = rng.permutation(np.concatenate([shared, r_block])).astype(np.intp)
    idx = np.sort(np.concatenate([shared, t_block])).astype(np.intp)
    C_value = 2.0
    store = _store(X, form)
    previous = PairProblem(
        0,
        1,
        prev_idx,
        y_all[prev_idx],
        np.full(prev_idx.shape[0], C_value),
        np.zeros(prev_idx.shape[0]),
    )
    solve_pair(store, previous, tol=1e-3, max_iter=-1, shrinking=True)
    leaving = (previous.alpha > 0) & np.isin(prev_idx, r_block)
    assert np.any(leaving)
    if one_label_added:
        assert np.any(leaving & (previous.y < 0))  # a random replacement
    y, C = y_all[idx], np.full(idx.shape[0], C_value)
    # The same store: with bounded columns, a value read from a cached column
    # and one computed by GEMM may differ in the last bit.
    expected_alpha, expected_G = _reference_seed_pair(
        store,
        previous,
        idx,
        y,
        C,
        seeding=seeding,
        rng=np.random.default_rng(7),
    )
    got = seed_pair(
        store, previous, idx, y, C, seeding=seeding, rng=np.random.default_rng(7)
    )
    assert_array_equal(got.alpha, expected_alpha)
    assert_array_equal(got.G, expected_G)


def test_split_rows_matches_position_tables():
    """Shared, added and removed rows, in the orders the seeding relies on."""
    rng = np.random.default_rng(0)
    n = 50
    prev_idx = rng.permutation(n)[:35].astype(np.intp)
    idx = rng.permutation(n)[:30].astype(np.intp)
    s_new, s_prev, t_new, r_prev = split_rows(n, prev_idx, idx)
    in_prev = np.isin(idx, prev_idx)
    assert_array_equal(s_new, np.flatnonzero(in_prev))
    assert_array_equal(prev_idx[s_prev], idx[s_new])
    assert_array_equal(t_new, np.flatnonzero(~in_prev))
    assert_array_equal(r_prev, np.flatnonzero(~np.isin(prev_idx, idx)))
    # Errors name the argument and the row.
    with pytest.raises(
        ValueError, match=r"^idx must hold rows in \[0, 50\); got row 50"
    ):
        split_rows(n, prev_idx, np.array([0, n], dtype=np.intp))
    with pytest.raises(ValueError, match="^prev_idx must hold rows .* got row -1"):
        split_rows(n, np.array([-1, 2], dtype=np.intp), idx)
    with pytest.raises(ValueError, match="^idx must not repeat a row; got row 3 twice"):
        split_rows(n, prev_idx, np.array([3, 3], dtype=np.intp))
    with pytest.raises(ValueError, match="^prev_idx must not repeat a row; got row 7"):
        split_rows(n, np.array([7, 1, 7], dtype=np.intp), idx)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_symmetric_matrix_read_by_rows_gives_the_column_sums(dtype):
    """Few rows against many columns read the rows' own rows of a symmetric
    matrix: the same sums, bit for bit, as reading the columns."""
    rng = np.random.default_rng(0)
    n = 200
    A = rng.normal(size=(n, n))
    K = np.ascontiguousarray((A + A.T).astype(dtype))
    by_rows = KernelColumns(n, symmetric=True, n_slots=8, **{_FORM[dtype]: K})
    by_cols = KernelColumns(n, symmetric=False, n_slots=8, **{_FORM[dtype]: K})
    assert by_rows.symmetric and not by_cols.symmetric
    rows = rng.choice(n, 15, replace=False).astype(np.intp)
    cols = rng.choice(n, 120, replace=False).astype(np.intp)
    coef = rng.normal(size=120)
    coef[::7] = 0.0
    ones = np.ones(15)
    expected, got = np.full(15, -1.0), np.full(15, -1.0)
    update_gradient(by_cols, rows, ones, expected, cols, coef)
    update_gradient(by_rows, rows, ones, got, cols, coef)
    assert_array_equal(got, expected)
    # The parts a chain reads keep the property.
    assert all(part.symmetric for part in by_rows.partition(2))
    # Gathers read the rows too (15 rows: one full tile of eight and a part).
    assert_array_equal(gather_block(by_rows, rows, cols), K[rows][:, cols])
    assert_array_equal(gather_block(by_cols, rows, cols), K[rows][:, cols])


def test_kernel_store_reads_rows_only_of_a_symmetric_matrix():
    """A precomputed kernel that is not its own transpose is read by columns,
    as before; the store's own matrices are symmetric."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    for dtype in (np.float64, np.float32):
        store = KernelStore(X, "rbf", 0.5, 3, 0.0, cache_size=10, dtype=dtype)
        assert store.columns.symmetric
    K = store.block(np.arange(60), np.arange(60))
    assert KernelStore(K, "precomputed", 0, 3, 0.0, cache_size=10).columns.symmetric
    K[3, 7] += 1e-12
    assert not KernelStore(K, "precomputed", 0, 3, 0.0, cache_size=10).columns.symmetric
    assert not is_symmetric(np.zeros((2, 3)))
    # Bits, not values: -0.0 against 0.0 is a difference.
    Z = np.zeros((3, 3))
    Z[0, 2] = -0.0
    assert not is_symmetric(Z)
