"""Each shrinking step of reduce on its own (hloscope.numerics.reduce_passes, cut)."""
from __future__ import annotations

import numpy as np

import hloscope as hs
from hloscope.numerics.cut import isolate, isolate_computation, with_outputs
from hloscope.numerics.reduce_passes import (
    apply_signature,
    cut_at,
    inline,
    loop_once,
    size_of,
    to_parameters,
    unused_parameters,
)
from tests.numerics.test_compare import DENORMAL
from tests.numerics.test_nonfinite import LOOP, X


def _ok(m: hs.Module) -> None:
    assert not [d for d in hs.verify(m) if d.severity == "error"], hs.verify(m)
    hs.parse(m.to_text())  # prints and reads back


def test_cut_at_drops_what_the_new_root_does_not_need() -> None:
    m = hs.parse(DENORMAL)
    cut = cut_at(m, "y")
    assert cut.entry.root.name == "y" and [i.name for i in cut.entry.instructions] == ["x", "two", "tb", "y"]
    assert [c.name for c in cut.computations] == ["main"]  # the fused computation went with f
    _ok(cut)
    assert size_of(m) == 9  # the module given is unchanged


def test_to_parameters_and_unused_parameters() -> None:
    m = hs.parse(DENORMAL)
    out, sig = to_parameters(m, ["y"])
    assert [p.name for p in out.entry.parameters] == ["x", "y.in"] and sig.kept == (0, None)
    assert "two" not in {i.name for i in out.entry.instructions}
    out, sig2 = unused_parameters(out)
    assert [p.name for p in out.entry.parameters] == ["y.in"] and sig2.kept == (1,)
    _ok(out)
    y = np.arange(4, dtype=np.float32)
    inputs = apply_signature(apply_signature([X], sig, [y]), sig2, [])
    assert len(inputs) == 1 and inputs[0] is y
    np.testing.assert_array_equal(hs.run(out, inputs), hs.run(cut_at(m, "r"), [y / 2]))


def test_inline_keeps_names_and_values() -> None:
    m = hs.parse(DENORMAL)
    out = inline(m, "f")
    assert {"s", "l"} <= {i.name for i in out.entry.instructions} and len(out.computations) == 1
    _ok(out)
    x = np.array([1, 2, 3, 4], np.float32)
    np.testing.assert_array_equal(hs.run(out, [x]), hs.run(m, [x]))


def test_loop_once_is_one_iteration_on_the_state_given() -> None:
    m = hs.parse(LOOP)
    out, sig = loop_once(m, "w", 2)
    assert [p.name for p in out.entry.parameters] == ["x", "w.iteration2"] and sig.kept == (0, None)
    _ok(out)
    state = (np.int32(2), np.array([4.0, 6.0, 8.0, 10.0], np.float32))
    got = hs.run(out, [X, state])
    np.testing.assert_allclose(got, np.log(state[1] * 0.5 - 1), rtol=1e-6)


def test_isolate_and_cut_down_modules() -> None:
    m = hs.parse(LOOP)
    one = isolate(m, "x2")  # inside the loop body
    assert [p.name for p in one.entry.parameters] == ["x.param", "hb.param"] and one.entry.root.name == "x2"
    _ok(one)
    body = isolate_computation(m, "fused_log", outputs="values")
    assert body.entry.root.opcode.text == "tuple" and len(body.entry.root.operands) == 4
    _ok(body)
    cut = with_outputs(hs.parse(DENORMAL), ["y", "f"])
    assert [o.name for o in cut.entry.root.operands] == ["y", "f"]
    _ok(cut)
