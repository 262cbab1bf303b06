"""reduction against jax.lax on the CPU: reduce, reduce-window, select-and-scatter, sort, top_k."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

from hloscope.interpret import reduction
from hloscope.testing.tolerances import REDUCTION
from hloscope.testing.tolerances import assert_close as _assert_close

RNG = np.random.default_rng(1)

def assert_close(ours: np.ndarray, theirs, scale: float = 1.0) -> None:
    _assert_close(ours, theirs, REDUCTION, scale)


def data(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -(2**30)), min(info.max, 2**30), shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


# Vectorized reducers, following the protocol in Note [Vectorized computations].
def add(a, b):
    return (a[0] + b[0],)


def argmax_reducer(a, b):
    """jax's argmax-style variadic reducer: larger value wins, ties pick the smaller index."""
    (av, ai), (bv, bi) = a, b
    pick_a = (av > bv) | ((av == bv) & (ai < bi))
    return np.where(pick_a, av, bv), np.where(pick_a, ai, bi)


def jax_argmax_reducer(a, b):
    (av, ai), (bv, bi) = a, b
    pick_a = (av > bv) | ((av == bv) & (ai < bi))
    return lax.select(pick_a, av, bv), lax.select(pick_a, ai, bi)


KNOWN_LAX = {"add": lax.add, "max": lax.max, "min": lax.min, "multiply": lax.mul,
             "and": lax.bitwise_and, "or": lax.bitwise_or}
INIT = {"add": 0, "max": -np.inf, "min": np.inf, "multiply": 1, "and": -1, "or": 0}


@pytest.mark.parametrize(
    "known,dtype",
    [("add", np.float32), ("add", ml_dtypes.bfloat16), ("add", np.int32), ("max", np.float32),
     ("min", np.int8), ("multiply", np.float16), ("or", np.bool_), ("and", np.uint8),
     ("max", ml_dtypes.bfloat16)],
)
@pytest.mark.parametrize("dims", [(1,), (0, 2), ()])
def test_reduce_known(known, dtype, dims):
    x = data((3, 40, 5), dtype)
    if np.dtype(dtype).kind in "iu" and known in ("max", "min"):
        init = np.iinfo(dtype).min if known == "max" else np.iinfo(dtype).max
    elif np.dtype(dtype) == np.bool_:
        init = known == "and"
    else:
        init = INIT[known]
    init = np.asarray(init).astype(dtype)  # -1 is all ones for "and"
    (ours,) = reduction.reduce([x], [init], dims, known=known)
    theirs = lax.reduce(x, init, KNOWN_LAX[known], dims)
    if known == "add" and np.dtype(dtype) == ml_dtypes.bfloat16:
        # A sum rounded to bf16 at every step depends on its order, and XLA:CPU's is its own
        # (TreeReductionRewriter: windows of 32, then their sums); the bound that holds for any
        # order scales with the sum of magnitudes, not with the (possibly cancelling) result.
        magnitude = np.abs(x.astype(np.float64)).sum(axis=tuple(dims))
        error = np.abs(ours.astype(np.float64) - np.asarray(theirs, np.float64))
        assert ours.dtype == theirs.dtype
        assert (error <= 2 * float(ml_dtypes.finfo(dtype).eps) * magnitude).all(), error.max()
        return
    assert_close(ours, theirs)


def test_reduce_bf16_add_does_not_saturate():
    x = np.ones(1000, ml_dtypes.bfloat16)
    (ours,) = reduction.reduce([x], [np.asarray(0, x.dtype)], (0,), known="add")
    assert_close(ours, lax.reduce(x, x.dtype.type(0), lax.add, (0,)))
    assert float(ours) == 1000.0


def test_reduce_callable_matches_known_and_combines_init_once():
    x = data((4, 7), np.float32)
    (ours,) = reduction.reduce([x], [np.float32(1.5)], (1,), reducer=add)
    assert_close(ours, lax.reduce(x, np.float32(1.5), lax.add, (1,)))
    (empty,) = reduction.reduce([np.zeros((3, 0), np.float32)], [np.float32(2)], (1,), reducer=add)
    assert_close(empty, np.full(3, 2, np.float32))


def test_reduce_variadic_argmax():
    x = RNG.integers(0, 4, (5, 9)).astype(np.float32)  # many ties
    idx = np.broadcast_to(np.arange(9, dtype=np.int32), x.shape).copy()
    inits = (np.float32(-np.inf), np.int32(0))
    ours = reduction.reduce([x, idx], inits, (1,), reducer=argmax_reducer)
    theirs = lax.reduce((x, idx), inits, jax_argmax_reducer, (1,))
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t)


WINDOW_CASES = [
    # window, strides, padding, base_dilation, window_dilation
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((3, 3), (1, 2), ((1, 1), (0, 2)), (1, 1), (1, 1)),
    ((2, 3), (1, 1), ((1, 0), (2, 1)), (2, 1), (1, 2)),
    ((1, 4), (3, 1), ((0, 0), (3, 3)), (1, 3), (1, 1)),
]


@pytest.mark.parametrize("window,strides,padding,base,wdil", WINDOW_CASES)
@pytest.mark.parametrize("known", ["max", "add"])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_reduce_window_known(window, strides, padding, base, wdil, known, dtype):
    x = data((5, 7), dtype)
    init = np.asarray(INIT[known], dtype)
    (ours,) = reduction.reduce_window([x], [init], window, strides, base, wdil, padding, known=known)
    theirs = lax.reduce_window(x, init, KNOWN_LAX[known], window, strides, padding, base, wdil)
    assert_close(ours, theirs)


@pytest.mark.parametrize("window,strides,padding,base,wdil", WINDOW_CASES)
def test_reduce_window_callable_skips_padding_with_non_identity_init(window, strides, padding, base, wdil):
    # init 1 is not add's identity: XLA combines it once and skips padding and holes.
    x = data((5, 7), np.float32)
    init = np.float32(1)
    (ours,) = reduction.reduce_window([x], [init], window, strides, base, wdil, padding, reducer=add)
    theirs = lax.reduce_window(x, init, lambda a, b: a + b, window, strides, padding, base, wdil)
    assert_close(ours, theirs)
    (known,) = reduction.reduce_window([x], [init], window, strides, base, wdil, padding, known="add")
    assert_close(known, theirs)


def test_reduce_window_variadic_argmax_pool():
    x = RNG.integers(0, 3, (6, 6)).astype(np.float32)
    idx = np.arange(36, dtype=np.int32).reshape(6, 6)
    inits = (np.float32(-np.inf), np.int32(0))
    args = ((3, 3), (2, 2), ((1, 1), (1, 1)))
    ours = reduction.reduce_window([x, idx], inits, args[0], args[1], None, None, args[2],
                                   reducer=argmax_reducer)
    theirs = lax.reduce_window((x, idx), inits, jax_argmax_reducer, *args)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_reduce_window_folds_in_window_order(dtype):
    # XLA:CPU folds each window left to right into the init value: a running sum keeps
    # 1e30 - 1e30 + 1 = 1, and bf16 rounds after every step (256 + 1 + 1 ... stays 256).
    # (Windows of at most 16: XLA rewrites longer cumulative windows into two levels.)
    x = np.array([1e30, -1e30, 1, 3, 256, 1, 1, 1, 1, -2, 0.5, 7], np.float32).astype(dtype)
    init = np.asarray(0, dtype)
    args = ((12,), (1,), ((11, 0),))
    (known,) = reduction.reduce_window([x], [init], *args[:2], None, None, args[2], known="add")
    (general,) = reduction.reduce_window([x], [init], *args[:2], None, None, args[2], reducer=add)
    theirs = jax.jit(lambda v: lax.reduce_window(v, init, lax.add, *args))(x)
    np.testing.assert_array_equal(known.astype(np.float32), np.asarray(theirs).astype(np.float32))
    np.testing.assert_array_equal(general.astype(np.float32), np.asarray(theirs).astype(np.float32))


def test_reduce_window_empty_output():
    (ours,) = reduction.reduce_window([np.ones((2,), np.float32)], [np.float32(0)], (3,), known="add")
    assert ours.shape == (0,)


@pytest.mark.parametrize(
    "window,strides,padding",
    [((2, 2), (2, 2), ((0, 0), (0, 0))), ((3, 3), (1, 1), ((1, 1), (1, 1))),
     ((3, 2), (2, 1), ((1, 0), (0, 1)))],
)
@pytest.mark.parametrize("use_known", [True, False])
def test_select_and_scatter_matches_max_pool_gradient(window, strides, padding, use_known):
    # Small integers make ties common, which pins down the "first maximum wins" rule of ge.
    x = RNG.integers(0, 3, (6, 7)).astype(np.float32)

    def pool(v):
        return lax.reduce_window(v, -jnp.inf, lax.max, window, strides, padding)

    out, vjp = jax.vjp(pool, x)
    g = RNG.standard_normal(out.shape).astype(np.float32)
    (theirs,) = vjp(g)
    kwargs = dict(known_select="ge", known_scatter="add") if use_known else dict(
        select=np.greater_equal, scatter=lambda a, b: (a[0] + b[0],))
    ours = reduction.select_and_scatter(x, g, np.float32(0), window, strides, padding, **kwargs)
    assert_close(ours, theirs)


def test_select_and_scatter_tie_rules():
    x = np.array([1.0, 1.0, 1.0, 0.0], np.float32)
    src = np.array([5.0], np.float32)
    first = reduction.select_and_scatter(x, src, np.float32(0), (4,), (1,), None, known_select="ge",
                                         known_scatter="add")
    last = reduction.select_and_scatter(x, src, np.float32(0), (4,), (1,), None, known_select="gt",
                                        known_scatter="add")
    np.testing.assert_array_equal(first, [5, 0, 0, 0])
    np.testing.assert_array_equal(last, [0, 0, 5, 0])


# jax's sort comparator: -0.0 == 0.0, all NaNs equal and last, otherwise total order; lexicographic
# over the first num_keys operands.
def _jax_sort_key(x):
    x = np.where(x == 0, np.zeros((), x.dtype), x)
    x = np.where(np.isnan(x), np.full((), np.nan, x.dtype), x)
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}"))
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def jax_like_comparator(num_keys):
    def less(lhs, rhs):
        result = None
        for lk, rk in reversed(list(zip(lhs[:num_keys], rhs[:num_keys], strict=True))):
            if lk.dtype.kind == "f":
                lk, rk = _jax_sort_key(lk), _jax_sort_key(rk)
            lt = lk < rk
            result = lt if result is None else lt | ((lk == rk) & result)
        return result

    return less


def special_floats(shape):
    x = RNG.integers(-3, 4, shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[RNG.integers(0, flat.size, 6)] = np.nan
    flat[RNG.integers(0, flat.size, 4)] = -0.0
    flat[RNG.integers(0, flat.size, 2)] = -np.inf
    return x


@pytest.mark.parametrize("shape,dimension", [((37,), 0), ((4, 33), 1), ((17, 3), 0), ((5, 1), 1)])
@pytest.mark.parametrize("is_stable", [True, False])
def test_sort_general_comparator_single_key(shape, dimension, is_stable):
    x = special_floats(shape)
    payload = np.arange(x.size, dtype=np.int32).reshape(shape)
    ours = reduction.sort([x, payload], dimension, jax_like_comparator(1), is_stable=is_stable)
    theirs = lax.sort((x, payload), dimension=dimension, is_stable=is_stable, num_keys=1)
    assert_close(ours[0], theirs[0])
    if is_stable:
        assert_close(ours[1], theirs[1])


def test_sort_general_comparator_two_keys():
    k0 = RNG.integers(0, 3, (3, 50)).astype(np.int32)
    k1 = special_floats((3, 50))
    payload = np.arange(150, dtype=np.int32).reshape(3, 50)
    ours = reduction.sort([k0, k1, payload], 1, jax_like_comparator(2), is_stable=True)
    theirs = lax.sort((k0, k1, payload), dimension=1, is_stable=True, num_keys=2)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, ml_dtypes.bfloat16])
def test_sort_known_fast_path(dtype):
    x = data((4, 64), dtype) if np.dtype(dtype).kind in "iu" else \
        RNG.integers(-5, 5, (4, 64)).astype(dtype)
    payload = np.arange(x.size, dtype=np.int32).reshape(x.shape)
    ours = reduction.sort([x, payload], 1, known=("LT", "TOTALORDER"), is_stable=True)
    theirs = lax.sort((x, payload), dimension=1, is_stable=True, num_keys=1)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t)
    general = reduction.sort([x, payload], 1, jax_like_comparator(1), is_stable=True)
    np.testing.assert_array_equal(general[1], ours[1])


def test_sort_known_total_order_and_descending():
    x = np.array([np.nan, -0.0, 0.0, -np.inf, 1.0, -np.nan, np.inf, -1.0], np.float32)
    (asc,) = reduction.sort([x], 0, known=("LT", "TOTALORDER"))
    bits = asc.view(np.uint32)
    expected = np.array([-np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(bits, expected.view(np.uint32))
    (desc,) = reduction.sort([x], 0, known=("GT", "TOTALORDER"))
    np.testing.assert_array_equal(desc.view(np.uint32), expected[::-1].view(np.uint32))
    two = reduction.sort([np.array([1, 0, 1, 0]), np.array([3, 2, 1, 0])], 0, known=("LT", "SIGNED", 2))
    np.testing.assert_array_equal(two[1], [0, 2, 1, 3])


@pytest.mark.parametrize("dtype", [np.float32, np.int32, ml_dtypes.bfloat16])
def test_top_k(dtype):
    x = RNG.integers(-4, 4, (3, 20)).astype(dtype)
    if np.dtype(dtype) != np.int32:
        x[0, [2, 5]] = [np.nan, -0.0]
    ours = reduction.top_k(x, 5)
    theirs = lax.top_k(x, 5)
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1])


def test_top_k_nan_and_signed_zero_order():
    x = np.array([1.0, np.nan, 3.0, -np.nan, 3.0, -0.0, 0.0], np.float32)
    values, indices = reduction.top_k(x, 7)
    theirs = lax.top_k(x, 7)
    np.testing.assert_array_equal(indices, theirs[1])
    np.testing.assert_array_equal(values.view(np.uint32), np.asarray(theirs[0]).view(np.uint32))


def test_sort_with_inconsistent_comparator_still_permutes():
    # IEEE "<" with NaNs is not a strict weak order; XLA leaves the order unspecified, but the
    # result must still be a permutation of the input.
    x = special_floats((3, 45))
    payload = np.broadcast_to(np.arange(45, dtype=np.int32), x.shape).copy()
    _, perm = reduction.sort([x, payload], 1, lambda lhs, rhs: lhs[0] < rhs[0])
    np.testing.assert_array_equal(np.sort(perm, axis=1), payload)


def test_reduce_of_no_dimensions_is_its_operand_as_on_xla_cpu() -> None:
    """XLA:CPU drops a reduce that reduces nothing; its init value is never combined in."""
    import hloscope

    m = hloscope.parse("""HloModule r
mul {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT c = c64[] multiply(a, b)
}
ENTRY e {
  p = c64[2] parameter(0)
  one = c64[] constant((1, 0))
  ROOT r = c64[2] reduce(p, one), dimensions={}, to_apply=mul
}""")
    x = np.array([complex(-np.inf, 2.5), 3 + 4j], np.complex64)
    out = hloscope.run(m, [x])
    np.testing.assert_array_equal(out, x)
