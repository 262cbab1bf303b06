"""Reduce-window and select-and-scatter of scalars, which XLA writes without ``window=`` (its
parser gives them the empty window): found in XLA's own parser tests, where the cost analysis
failed on the missing attribute. Cost, run and report, each against XLA."""
from __future__ import annotations

import numpy as np
import pytest

import hloscope
from hloscope.analysis.cost import analyze_cost
from hloscope.ir.attributes import NO_WINDOW, window_of

REDUCE_WINDOW = """HloModule reduce_window_scalar
add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}
ENTRY e {
  x = f32[] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[] reduce-window(x, one), to_apply=add
}"""

VARIADIC = """HloModule reduce_window_variadic
add2 {
  a1 = f32[] parameter(0)
  a2 = s32[] parameter(1)
  b1 = f32[] parameter(2)
  b2 = s32[] parameter(3)
  sum1 = f32[] add(a1, b1)
  sum2 = s32[] add(a2, b2)
  ROOT t = (f32[], s32[]) tuple(sum1, sum2)
}
ENTRY e {
  x = f32[] parameter(0)
  i = s32[] parameter(1)
  one = f32[] constant(1)
  two = s32[] constant(2)
  ROOT r = (f32[], s32[]) reduce-window(x, i, one, two), to_apply=add2
}"""

SELECT_AND_SCATTER = """HloModule select_and_scatter_scalar
ge {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT c = pred[] compare(lhs, rhs), direction=GE
}
add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}
ENTRY e {
  x = f32[] constant(42)
  s = f32[] constant(5)
  init = f32[] constant(2)
  ROOT r = f32[] select-and-scatter(x, s, init), select=ge, scatter=add
}"""
# Constants, as in XLA's test: with parameters XLA:CPU aborts compiling it (jaxlib 0.10.2,
# "parameter number 1 already allocated in this computation").

INPUTS = {REDUCE_WINDOW: [np.float32(42)], VARIADIC: [np.float32(42), np.int32(7)],
          SELECT_AND_SCATTER: []}


def test_no_window_is_the_empty_window_and_prints_as_written():
    m = hloscope.parse(REDUCE_WINDOW)
    r = m.entry.root
    assert "window" not in r.attrs and window_of(r.attrs) is NO_WINDOW
    assert "window=" not in m.to_text()  # XLA prints no empty window either


@pytest.mark.parametrize("text", [REDUCE_WINDOW, VARIADIC, SELECT_AND_SCATTER], ids=["single", "variadic", "s&s"])
def test_cost_matches_xla(text):
    from tests.analysis.test_cost import _xla_cost

    ours, xla = analyze_cost(hloscope.parse(text)).total, _xla_cost(text)
    assert (ours.flops, ours.transcendentals, ours.bytes_accessed) == (
        xla.get("flops", 0.0), xla.get("transcendentals", 0.0), xla.get("bytes accessed", 0.0))


def test_a_reduce_window_of_scalars_is_its_operands_as_on_xla_cpu():
    # XLA:CPU's simplifier replaces it by its operands: the init is never folded in.
    assert hloscope.run(hloscope.parse(REDUCE_WINDOW), INPUTS[REDUCE_WINDOW]) == 42
    out = hloscope.run(hloscope.parse(VARIADIC), INPUTS[VARIADIC])
    assert [int(v) for v in out] == [42, 7]


@pytest.mark.xla_execute
@pytest.mark.parametrize("text", [REDUCE_WINDOW, VARIADIC, SELECT_AND_SCATTER], ids=["single", "variadic", "s&s"])
def test_run_matches_xla(text):
    from hloscope.xla.worker import run_on_xla

    ours = hloscope.run(hloscope.parse(text), INPUTS[text])
    theirs = run_on_xla(text, INPUTS[text], replicas=1, partitions=1, per_device=False).outputs
    ours = list(ours) if isinstance(ours, (tuple, list)) else [ours]
    theirs = list(theirs) if isinstance(theirs, (tuple, list)) else [theirs]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("text", [REDUCE_WINDOW, VARIADIC, SELECT_AND_SCATTER], ids=["single", "variadic", "s&s"])
def test_every_report_section_is_made(text):
    from hloscope.report.data import collect_report_data

    data = collect_report_data(hloscope.parse(text), jobs=1)
    failed = {k: v["message"] for k, v in data.items() if isinstance(v, dict) and v.get("status") == "error"}
    assert not failed
