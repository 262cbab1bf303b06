"""linalg against jax.lax on the CPU: dot_general, convolution, triangular_solve, cholesky, fft."""
from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import hloscope
from hloscope.interpret import linalg
from hloscope.interpret.linalg import ConvDimLabels
from hloscope.testing.tolerances import LINALG
from hloscope.testing.tolerances import assert_close as _assert_close

RNG = np.random.default_rng(2)

def assert_close(ours: np.ndarray, theirs, scale: float = 1.0) -> None:
    _assert_close(ours, theirs, LINALG, scale)


def data(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return RNG.integers(-100 if dtype.kind == "i" else 0, 100, shape).astype(dtype)
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


DOT_CASES = [
    # lhs shape, rhs shape, (lhs_batch, rhs_batch, lhs_contracting, rhs_contracting)
    ((4, 5), (5, 3), ((), (), (1,), (0,))),
    ((2, 4, 5), (2, 5, 3), ((0,), (0,), (2,), (1,))),
    ((3, 2, 6, 4), (4, 6, 2, 5), ((1,), (2,), (2, 3), (1, 0))),
    ((7,), (7,), ((), (), (0,), (0,))),
    ((3, 4), (5,), ((), (), (), ())),  # outer product
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,dims", DOT_CASES)
@pytest.mark.parametrize(
    "in_dtype,out_dtype",
    [(np.float32, np.float32), (ml_dtypes.bfloat16, ml_dtypes.bfloat16),
     (ml_dtypes.bfloat16, np.float32), (np.float16, np.float16), (np.int8, np.int32),
     (np.int32, np.int32), (np.complex64, np.complex64)],
)
def test_dot_general(lhs_shape, rhs_shape, dims, in_dtype, out_dtype):
    lhs, rhs = data(lhs_shape, in_dtype), data(rhs_shape, in_dtype)
    lb, rb, lc, rc = dims
    ours = linalg.dot_general(lhs, rhs, lb, rb, lc, rc, out_dtype)
    preferred = None if out_dtype == in_dtype else out_dtype
    theirs = lax.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), preferred_element_type=preferred)
    assert_close(ours, theirs)


def test_dot_int32_wraps():
    lhs = np.full((1, 4), 2**30, np.int32)
    rhs = np.full((4, 1), 3, np.int32)
    ours = linalg.dot_general(lhs, rhs, (), (), (1,), (0,), np.int32)
    assert_close(ours, lax.dot(lhs, rhs))


def test_dot_bf16_rounds_once():
    # 256 ones plus small terms: accumulating in bf16 would lose the small terms entirely.
    lhs = np.concatenate([np.ones(256), np.full(64, 0.5)]).astype(ml_dtypes.bfloat16)[None]
    ours = linalg.dot_general(lhs, lhs.T.copy(), (), (), (1,), (0,), ml_dtypes.bfloat16)
    assert float(ours[0, 0]) == 272.0
    assert_close(ours, lax.dot(lhs, lhs.T))


def test_parse_dim_labels():
    assert linalg.parse_dim_labels("b01f_01io->b01f") == ConvDimLabels(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    assert linalg.parse_dim_labels("0bf_oi0->0bf") == ConvDimLabels(1, 2, (0,), 1, 0, (2,), 1, 2, (0,))
    assert linalg.parse_dim_labels("bf_io->bf") == ConvDimLabels(0, 1, (), 0, 1, (), 0, 1, ())
    assert linalg.parse_dim_labels("bf10_oi01->bf01").lhs_spatial == (3, 2)
    with pytest.raises(ValueError, match="dim_labels"):
        linalg.parse_dim_labels("b0f_0i->b0f")


def labels_from_jax(lhs_shape, rhs_shape, specs) -> ConvDimLabels:
    dn = lax.conv_dimension_numbers(lhs_shape, rhs_shape, specs)
    ls, rs, os_ = dn.lhs_spec, dn.rhs_spec, dn.out_spec
    return ConvDimLabels(ls[0], ls[1], tuple(ls[2:]), rs[1], rs[0], tuple(rs[2:]), os_[0], os_[1], tuple(os_[2:]))


def run_conv(lhs, rhs, specs, strides, padding, lhs_dil, rhs_dil, fgc=1, bgc=1, preferred=None, reversal=None):
    labels = labels_from_jax(lhs.shape, rhs.shape, specs)
    window = [
        dict(size=rhs.shape[d], stride=s, pad_low=lo, pad_high=hi, lhs_dilation=ld, rhs_dilation=rd,
             window_reversal=bool(reversal and reversal[i]))
        for i, (d, s, (lo, hi), ld, rd) in enumerate(zip(labels.rhs_spatial, strides, padding, lhs_dil, rhs_dil, strict=True))
    ]
    out_dtype = preferred or lhs.dtype
    ours = linalg.convolution(lhs, rhs, window=window, dim_labels=labels, feature_group_count=fgc,
                              batch_group_count=bgc, out_dtype=out_dtype)
    theirs = lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, specs,
                                      feature_group_count=fgc, batch_group_count=bgc,
                                      preferred_element_type=preferred)
    return ours, theirs


CONV_CASES = [
    # lhs shape, rhs shape, specs, strides, padding, lhs_dilation, rhs_dilation, fgc, bgc
    ((2, 3, 9, 8), (4, 3, 3, 2), ("NCHW", "OIHW", "NCHW"), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
    ((2, 9, 8, 3), (3, 2, 3, 4), ("NHWC", "HWIO", "NHWC"), (2, 1), ((1, 2), (0, 1)), (1, 1), (1, 1), 1, 1),
    ((2, 9, 8, 4), (3, 3, 2, 6), ("NHWC", "HWIO", "NHWC"), (1, 2), ((1, 1), (-1, 2)), (2, 1), (1, 2), 2, 1),
    ((4, 3, 7), (4, 3, 2), ("NCH", "OIH", "NCH"), (1,), ((0, 1),), (1,), (1,), 1, 2),
    ((9, 2, 3), (3, 3, 5), ("HNC", "HIO", "HNC"), (2,), ((2, 2),), (1,), (3,), 1, 1),  # 0bf_0io->0bf
    ((7, 2, 4), (6, 2, 3), ("WNC", "OIW", "WNC"), (1,), ((1, 0),), (2,), (1,), 2, 1),  # 0bf_oi0->0bf
    ((3, 5), (6, 5), ("NC", "OI", "NC"), (), (), (), (), 1, 1),  # zero spatial dims
    ((2, 6, 6, 4), (2, 2, 1, 8), ("NHWC", "HWIO", "NHWC"), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 4, 1),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,specs,strides,padding,lhs_dil,rhs_dil,fgc,bgc", CONV_CASES)
def test_convolution(lhs_shape, rhs_shape, specs, strides, padding, lhs_dil, rhs_dil, fgc, bgc):
    lhs, rhs = data(lhs_shape, np.float32), data(rhs_shape, np.float32)
    ours, theirs = run_conv(lhs, rhs, specs, strides, padding, lhs_dil, rhs_dil, fgc, bgc)
    assert_close(ours, theirs)


def test_convolution_spatial_first_labels_text():
    lhs, rhs = data((7, 2, 3), np.float32), data((4, 3, 2), np.float32)
    ours = linalg.convolution(lhs, rhs, window=[(2, 1, 1, 0, 1, 1, False)], dim_labels="0bf_oi0->0bf",
                              out_dtype=np.float32)
    theirs = lax.conv_general_dilated(lhs, rhs, (1,), ((1, 0),), dimension_numbers=("WNC", "OIW", "WNC"))
    assert_close(ours, theirs)


@pytest.mark.parametrize(
    "in_dtype,preferred", [(ml_dtypes.bfloat16, None), (ml_dtypes.bfloat16, np.float32), (np.int8, np.int32)]
)
def test_convolution_dtypes(in_dtype, preferred):
    lhs, rhs = data((2, 3, 8, 8), in_dtype), data((4, 3, 3, 3), in_dtype)
    ours, theirs = run_conv(lhs, rhs, ("NCHW", "OIHW", "NCHW"), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
                            preferred=preferred)
    assert_close(ours, theirs)


def test_convolution_window_reversal_flips_the_kernel():
    lhs, rhs = data((1, 2, 6, 5), np.float32), data((3, 2, 3, 2), np.float32)
    args = (("NCHW", "OIHW", "NCHW"), (1, 1), ((1, 1), (0, 0)), (1, 1), (1, 1))
    ours, _ = run_conv(lhs, rhs, *args, reversal=(True, False))
    _, theirs = run_conv(lhs, np.flip(rhs, 2).copy(), *args)
    assert_close(ours, theirs)


# Note [A window wider than its input] (linalg.py): windows with 4x or more the input's
# spatial positions are summed over the input's positions; strides, padding (negative too),
# both dilations and several spatial dimensions, against jax.
WIDE_WINDOW_CASES = [
    ((3, 3, 4, 5), (6, 12, 12, 5), ("HWNC", "OHWI", "CHWN"), (1, 1), ((10, 10), (10, 10)), (1, 1), (1, 1)),
    ((2, 3, 2, 2), (4, 3, 7, 6), ("NCHW", "OIHW", "NCHW"), (2, 1), ((5, 4), (5, -1)), (1, 1), (1, 1)),
    ((2, 3, 3, 2), (4, 3, 5, 6), ("NCHW", "OIHW", "NCHW"), (1, 3), ((6, 6), (4, 5)), (2, 1), (2, 1)),
    ((1, 2, 3), (3, 2, 16), ("NCH", "OIH", "NCH"), (1,), ((14, 13),), (3,), (1,)),
    ((2, 4, 2), (3, 4, 9), ("NCH", "OIH", "NCH"), (2,), ((8, 9),), (1,), (2,)),
    ((2, 4, 3), (3, 4, 12), ("NCH", "OIH", "NCH"), (1,), ((-1, 12),), (1,), (1,)),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,specs,strides,padding,lhs_dil,rhs_dil", WIDE_WINDOW_CASES)
def test_convolution_of_a_window_wider_than_its_input(lhs_shape, rhs_shape, specs, strides, padding, lhs_dil,
                                                      rhs_dil):
    lhs, rhs = data(lhs_shape, np.float32), data(rhs_shape, np.float32)
    ours, theirs = run_conv(lhs, rhs, specs, strides, padding, lhs_dil, rhs_dil)
    assert ours.shape == theirs.shape and np.abs(np.asarray(theirs)).max() > 0
    assert_close(ours, theirs)
    spatial = len(strides)
    flipped, _ = run_conv(lhs, rhs, specs, strides, padding, lhs_dil, rhs_dil, reversal=(True,) * spatial)
    axes = tuple(i for i, c in enumerate(specs[1]) if c not in "OI")
    _, theirs = run_conv(lhs, np.flip(rhs, axes).copy(), specs, strides, padding, lhs_dil, rhs_dil)
    assert_close(flipped, theirs)


def test_a_window_wider_than_its_input_is_summed_over_the_input(monkeypatch):
    # The case that took over a minute: here small enough to time, and the path it takes.
    called = []
    real = linalg._by_input_positions
    monkeypatch.setattr(linalg, "_by_input_positions", lambda *a: called.append(1) or real(*a))
    lhs, rhs = data((3, 3, 8, 16), np.float32), data((12, 32, 32, 16), np.float32)
    ours, theirs = run_conv(lhs, rhs, ("HWNC", "OHWI", "CHWN"), (1, 1), ((30, 30), (30, 30)), (1, 1), (1, 1))
    assert called and ours.shape == theirs.shape == (12, 32, 32, 8)
    assert_close(ours, theirs)


def spd(batch, n, dtype):
    a = data(batch + (n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_triangular_solve(left_side, lower, transpose_a, unit_diagonal):
    dtype = np.complex64 if transpose_a == "ADJOINT" else np.float32
    a = data((2, 5, 5), dtype) + 4 * np.eye(5, dtype=dtype)  # garbage in the other triangle
    b = data((2, 5, 3) if left_side else (2, 3, 5), dtype)
    ours = linalg.triangular_solve(a, b, left_side, lower, unit_diagonal, transpose_a)
    theirs = lax.linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                         transpose_a=transpose_a != "NO_TRANSPOSE",
                                         conjugate_a=transpose_a == "ADJOINT", unit_diagonal=unit_diagonal)
    assert_close(ours, theirs, scale=10)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cholesky(lower, dtype):
    a = spd((3,), 6, dtype)
    # Only one triangle may be read: spoil the other.
    spoil = np.triu(np.ones((6, 6)), 1) if lower else np.tril(np.ones((6, 6)), -1)
    a_spoiled = (a + 100 * spoil).astype(dtype)
    ours = linalg.cholesky(a_spoiled, lower)
    theirs = lax.linalg.cholesky(a if lower else a, symmetrize_input=False)
    if not lower:
        theirs = jnp.conj(jnp.swapaxes(theirs, -1, -2))
    assert_close(ours, theirs, scale=10)


@pytest.mark.parametrize("lower", ["true", "false"])
@pytest.mark.parametrize("ty", ["f16", "f32", "f64"])
def test_cholesky_not_positive_definite_is_nan_everywhere_as_xla_cpu(lower, ty):
    # The HLO op on XLA:CPU (CholeskyExpander) fills both triangles with NaN; we left zeros
    # in the other triangle (jax's LAPACK path does that, but it is another op).
    from hloscope.xla import client

    text = f"""HloModule chol
ENTRY e {{
  a = {ty}[2,3,3] parameter(0)
  ROOT c = {ty}[2,3,3] cholesky(a), lower={lower}
}}"""
    a = np.stack([np.eye(3) * 4, -np.eye(3)]).astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[ty])
    ours = hloscope.run(hloscope.parse(text), [a])
    theirs = client.compile_and_run(text, [a])
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours[0], np.eye(3) * 2)
    assert np.isnan(ours[1]).all()


@pytest.mark.parametrize(
    "fft_type,shape,length,in_dtype",
    [("FFT", (3, 8), (8,), np.complex64), ("IFFT", (2, 4, 6), (4, 6), np.complex64),
     ("RFFT", (3, 10), (10,), np.float32), ("IRFFT", (3, 6), (10,), np.complex64),
     ("RFFT", (2, 4, 6), (4, 6), np.float32), ("IRFFT", (2, 4, 4), (4, 6), np.complex64)],
)
def test_fft(fft_type, shape, length, in_dtype):
    x = data(shape, in_dtype)
    ours = linalg.fft(x, fft_type, length)
    theirs = lax.fft(x, fft_type, length)
    assert_close(ours, theirs, scale=5)


def test_complex_dot_with_infinite_parts_sums_the_products():
    # (-2 - 1i)(1 + inf i) = inf - inf i as XLA forms it, (ac - bd) + (ad + bc)i; BLAS's
    # complex kernels return NaN there.
    a = np.array([[1, -2 - 1j, 0, 3]], np.complex128)
    b = np.array([[0.5j], [complex(1, np.inf)], [3j], [-1]], np.complex128)
    got = linalg.dot_general(a, b, (), (), (1,), (0,), np.complex128)
    assert got.shape == (1, 1) and got[0, 0] == complex(np.inf, -np.inf)
    real = RNG.standard_normal((2, 3, 4)) + 1j * RNG.standard_normal((2, 3, 4))
    assert_close(linalg.dot_general(real.astype(np.complex64), real.astype(np.complex64), (0,), (0,), (2,), (2,),
                                    np.complex64),
                 lax.dot_general(real.astype(np.complex64), real.astype(np.complex64), (((2,), (2,)), ((0,), (0,)))))
