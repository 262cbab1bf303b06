"""The in-place gemm (numpy's own BLAS through ctypes, scipy's as the fallback) against numpy,
over every layout the callers hand it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hloscope.interpret import blas, linalg

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 1e-4, np.float64: 1e-12, np.complex64: 1e-4, np.complex128: 1e-12}


def _numpy_wheel_blas() -> bool:
    info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return info.get("name") == "scipy-openblas" and "USE64BITINT" in info.get("openblas configuration", "")


def _values(rng: np.random.Generator, shape: tuple[int, int], dtype) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _laid_out(x: np.ndarray, how: str) -> np.ndarray:
    """The same values as a C array, a Fortran array, a row-strided slice or a non-BLAS view."""
    if how == "c":
        return np.ascontiguousarray(x)
    if how == "f":
        return np.asfortranarray(x)
    if how == "rows":  # leading dimension wider than the row
        wide = np.zeros((x.shape[0], x.shape[1] + 3), x.dtype)
        wide[:, : x.shape[1]] = x
        return wide[:, : x.shape[1]]
    every_other = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)  # no unit stride: refused
    every_other[:, ::2] = x
    return every_other[:, ::2]


@pytest.mark.skipif(not _numpy_wheel_blas(), reason="numpy not built with the ILP64 scipy-openblas of its wheels")
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_wheels_blas_is_found(dtype) -> None:
    assert blas._function(np.dtype(dtype)) is not None


@settings(max_examples=150, deadline=None)
@given(m=st.integers(1, 9), k=st.integers(1, 9), n=st.integers(1, 9),
       dtype=st.sampled_from(DTYPES), la=st.sampled_from(["c", "f", "rows", "strided"]),
       lb=st.sampled_from(["c", "f", "rows", "strided"]), lc=st.sampled_from(["c", "rows", "f"]),
       alpha=st.sampled_from([1.0, -0.5, 2.0]), beta=st.sampled_from([1.0, 0.0, 0.25]),
       seed=st.integers(0, 2**16))
def test_gemm_matches_numpy(m, k, n, dtype, la, lb, lc, alpha, beta, seed) -> None:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "c":  # complex gemms take alpha and beta by pointer
        alpha, beta = alpha * (1 - 0.5j), beta * (1 + 0.25j)
    a = _laid_out(_values(rng, (m, k), dtype), la)
    b = _laid_out(_values(rng, (k, n), dtype), lb)
    c = _laid_out(_values(rng, (m, n), dtype), lc)
    before = c.copy()
    want = alpha * (a @ b) + beta * before
    done = blas.gemm(c, a, b, alpha, beta)
    if not done:
        np.testing.assert_array_equal(c, before)  # refused: untouched
        assert "strided" in (la, lb) or lc == "f" or not _numpy_wheel_blas()
        return
    np.testing.assert_allclose(c, want, rtol=TOL[dtype], atol=TOL[dtype] * 10)


def test_refuses_overlap_and_read_only() -> None:
    x = np.ones((4, 4), np.float32)
    assert not blas.gemm(x, x, np.ones((4, 4), np.float32))
    ro = np.zeros((2, 2), np.float32)
    ro.flags.writeable = False
    assert not blas.gemm(ro, np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    assert not blas.gemm(np.zeros((2, 2), np.float16), np.ones((2, 3), np.float16), np.ones((3, 2), np.float16))
    assert not blas.gemm(np.zeros((2, 2), np.float32), np.ones((2, 3), np.float64), np.ones((3, 2), np.float32))


@pytest.mark.parametrize("reachable", [True, False])
def test_matmul_accumulate_either_blas(monkeypatch, reachable) -> None:
    """With numpy's BLAS out of reach, scipy's does the same accumulation."""
    if not reachable:
        monkeypatch.setattr(blas, "gemm", lambda *a, **k: False)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 64)).astype(np.float32).T  # the weight-gradient shape: k = 16
    b = rng.standard_normal((16, 48)).astype(np.float32)
    c = rng.standard_normal((64, 48)).astype(np.float32)
    want = c + 0.5 * (a @ b)
    assert linalg.matmul_accumulate(c, a, b, 0.5)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
