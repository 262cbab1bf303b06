"""Regression tests for what the differential fuzzer (hloscope.testing.fuzz) found in the
verifier, shape inference and cost analysis, one small module each, checked without XLA."""
from __future__ import annotations

import pytest

import hloscope as hs
from hloscope.ir.shape_inference import infer_shape, shape_text


def _errors(body: str) -> list[str]:
    m = hs.parse(f"HloModule m\n\n{body}")
    return [d.message for d in hs.verify(m) if d.severity == "error"]


def _entry(*lines: str, extra: str = "") -> str:
    return extra + "ENTRY e {\n" + "\n".join("  " + ln for ln in lines) + "\n}\n"


@pytest.mark.parametrize("op,etype", [
    ("sine", "s32"), ("floor", "s8"), ("is-finite", "u16"), ("abs", "u32"), ("sign", "u64"),
    ("count-leading-zeros", "bf16"), ("popcnt", "f32"), ("not", "f32"), ("negate", "pred"),
    ("real", "s32"), ("reduce-precision", "s32"),
])
def test_unary_ops_check_their_element_type(op: str, etype: str) -> None:
    attrs = ", exponent_bits=5, mantissa_bits=2" if op == "reduce-precision" else ""
    result = "pred" if op == "is-finite" else etype
    errors = _errors(_entry(f"p = {etype}[2] parameter(0)", f"ROOT r = {result}[2] {op}(p){attrs}"))
    assert any(f"{op} needs" in e for e in errors), errors


@pytest.mark.parametrize("op,etype", [
    ("subtract", "pred"), ("power", "pred"), ("atan2", "s32"), ("and", "f32"), ("xor", "c64"),
    ("shift-left", "f32"), ("shift-right-logical", "c64"), ("complex", "s32"),
])
def test_binary_ops_check_their_element_type(op: str, etype: str) -> None:
    errors = _errors(_entry(f"p = {etype}[2] parameter(0)", f"ROOT r = {etype}[2] {op}(p, p)"))
    assert any(f"{op} needs" in e for e in errors), errors


@pytest.mark.parametrize("etype,ctype,ok", [
    ("f32", "FLOAT", True), ("f32", "TOTALORDER", True), ("f32", "SIGNED", False),
    ("s8", "SIGNED", True), ("s8", "UNSIGNED", False), ("u8", "UNSIGNED", True),
    ("pred", "UNSIGNED", True), ("u16", "FLOAT", False), ("c64", "FLOAT", True),
    ("c64", "TOTALORDER", False),
])
def test_comparison_type_fits_the_operands(etype: str, ctype: str, ok: bool) -> None:
    errors = _errors(_entry(f"p = {etype}[2] parameter(0)",
                            f"ROOT r = pred[2] compare(p, p), direction=EQ, type={ctype}"))
    assert (not errors) == ok, errors


def test_dynamic_slice_start_indices_share_one_type() -> None:
    errors = _errors(_entry("p = f32[4,4] parameter(0)", "i = s32[] parameter(1)", "j = s64[] parameter(2)",
                            "ROOT r = f32[2,2] dynamic-slice(p, i, j), dynamic_slice_sizes={2,2}"))
    assert any("share one element type" in e for e in errors), errors


SCATTER = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

"""


@pytest.mark.parametrize("updates,ok", [("f32[2,3]", True), ("f32[2,4]", False), ("f32[3,3]", False)])
def test_scatter_updates_fit_the_window_and_the_indices(updates: str, ok: bool) -> None:
    errors = _errors(_entry(
        "p = f32[4,3] parameter(0)", "i = s32[2,1] parameter(1)", f"u = {updates} parameter(2)",
        "ROOT r = f32[4,3] scatter(p, i, u), update_window_dims={1}, inserted_window_dims={0}, "
        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add", extra=SCATTER))
    assert (not errors) == ok, errors


@pytest.mark.parametrize("sizes,ok", [("{1,3}", True), ("{2,3}", False), ("{1,4}", False)])
def test_gather_checks_slice_sizes(sizes: str, ok: bool) -> None:
    errors = _errors(_entry(
        "p = f32[4,3] parameter(0)", "i = s32[2,1] parameter(1)",
        "ROOT r = f32[2,3] gather(p, i), offset_dims={1}, collapsed_slice_dims={0}, "
        f"start_index_map={{0}}, index_vector_dim=1, slice_sizes={sizes}"))
    assert (not errors) == ok, errors


def test_reduce_takes_its_result_type_from_the_reducer_and_forbids_mixed_precision() -> None:
    reducer = SCATTER
    text = "HloModule m\n\n" + _entry("p = f32[4] parameter(0)", "z = bf16[] constant(0)",
                                      "ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add",
                                      extra=reducer)
    m = hs.parse(text)
    assert shape_text(infer_shape(m.entry.root)) == "f32[]"  # the reducer's, as XLA infers it
    errors = [d.message for d in hs.verify(m) if d.severity == "error"]
    assert any("mixes floating-point types" in e for e in errors), errors
    # reduce-window may mix (XLA's verifier allows it there).
    rw = "HloModule m\n\n" + _entry("p = f32[4] parameter(0)", "z = bf16[] constant(0)",
                                    "ROOT r = f32[3] reduce-window(p, z), window={size=2}, to_apply=add",
                                    extra=reducer)
    assert not [d for d in hs.verify(hs.parse(rw)) if d.severity == "error"]


def test_cost_counts_inverse_and_hyperbolic_functions_as_transcendental() -> None:
    for op in ("acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh"):
        m = hs.parse("HloModule m\n\n" + _entry("p = f32[3] parameter(0)", f"ROOT r = f32[3] {op}(p)"))
        c = hs.cost(m).total
        assert (c.flops, c.transcendentals) == (0, 3), op


def test_cost_of_a_layoutless_identity_transpose_is_a_bitcast() -> None:
    m = hs.parse("HloModule m\n\n" + _entry("p = f32[3] parameter(0)",
                                            "ROOT t = f32[3] transpose(p), dimensions={0}"))
    assert hs.cost(m).total.bytes_accessed == 0
    m = hs.parse("HloModule m\n\n" + _entry("p = f32[2,3] parameter(0)",
                                            "ROOT t = f32[3,2] transpose(p), dimensions={1,0}"))
    assert hs.cost(m).total.bytes_accessed == 48
