"""npz files keep every XLA element type and every shape, scalars included."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hloscope.interpret.npz_io import load_npz, save_npz

DTYPES = [np.float32, np.int8, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.int4,
          ml_dtypes.float4_e2m1fn, np.float16, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 3)], ids=str)
def test_round_trip_keeps_shape_and_type(tmp_path, dtype, shape):
    # A narrow-typed scalar came back with shape (1,): ascontiguousarray makes 0-d arrays 1-d.
    x = np.ones(shape, np.float32).astype(dtype)
    save_npz(tmp_path / "a.npz", {"out": x})
    got = load_npz(tmp_path / "a.npz")["out"]
    assert got.shape == shape and got.dtype == np.dtype(dtype)
    assert np.array_equal(got.astype(np.float32), x.astype(np.float32))
