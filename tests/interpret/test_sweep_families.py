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
