"""Families of differences the XLA test-corpus sweep (tools/xla_sweep.py) found, each checked
against XLA:CPU on a module of our own that has the same mechanism."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope
from hloscope.interpret import run

client = pytest.importorskip("hloscope.xla.client")
RNG = np.random.default_rng(1)


@pytest.mark.parametrize("epsilon", [0.0, 1e-5, 0.5])
def test_onednn_layer_norm_matches_xla_cpu(epsilon: float) -> None:
    bits = int(np.array([epsilon], np.float32).view(np.int32)[0])
    config = '{\\"onednn_layer_norm_config\\":{\\"rescale\\":\\"SCALE_AND_SHIFT\\"' + (
        f',\\"epsilon_typecast\\":{bits}' if epsilon else "") + "}}"
    text = f"""HloModule ln
ENTRY e {{
  x = f32[3,5,6] parameter(0)
  g = f32[6] parameter(1)
  b = f32[6] parameter(2)
  ROOT y = f32[3,5,6] custom-call(x, g, b), custom_call_target="__onednn$layernorm", backend_config="{config}"
}}"""
    x = (RNG.standard_normal((3, 5, 6)) * 3 + 1).astype(np.float32)
    x[0, 0] = 2.0  # a constant row: its variance is 0, so epsilon alone decides
    g, b = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
    ours = run(hloscope.parse(text), [x, g, b])
    theirs = client.compile_and_run(text, [x, g, b])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_bf16_sum_over_many_short_dimensions_folds_in_order_as_xla_cpu() -> None:
    # No reduced dimension is longer than 32, so XLA:CPU folds all 17765 elements of a row in
    # order; hloscope fell back to pairwise sums beyond 16384 steps (-2240 for XLA's -64).
    # (f16 over several dimensions is summed in another order: Note [XLA:CPU's reduction order].)
    import ml_dtypes

    dtype, np_dtype = "bf16", ml_dtypes.bfloat16
    text = f"""HloModule narrow_sum
add {{
  x = {dtype}[] parameter(0)
  y = {dtype}[] parameter(1)
  ROOT s = {dtype}[] add(x, y)
}}
ENTRY e {{
  a = {dtype}[2,5,11,17,19] parameter(0)
  z = {dtype}[] constant(0)
  ROOT r = {dtype}[2] reduce(a, z), dimensions={{1,2,3,4}}, to_apply=add
}}"""
    for x in (np.full((2, 5, 11, 17, 19), 0.126, np.float32), RNG.standard_normal((2, 5, 11, 17, 19))):
        x = x.astype(np_dtype)
        ours = run(hloscope.parse(text), [x])
        theirs = client.compile_and_run(text, [x])
        np.testing.assert_array_equal(np.asarray(ours, np.float32), np.asarray(theirs, np.float32))
