"""The fuzzer's checks (a-e, see ``hloscope.testing.fuzz``), and how outputs are compared
(Note [Comparing outputs], Note [Legitimate differences] in ``hloscope.testing.fuzz``).
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.ir.shape import ArrayShape, Shape
from hloscope.testing.fuzz.model import PARSER_INFERS, Case, Comp, literal_text, shape_text
from hloscope.testing.xla_worker import XlaWorker

# --------------------------------------------------------------------------------------------
# The checks


@dataclasses.dataclass
class Failure:
    """One disagreement: which check, its class, the opcode (and type) it is pinned on, details."""

    check: str
    kind: str
    where: str
    detail: str
    inst: str = ""  # the instruction it is pinned on, when one is

    @property
    def signature(self) -> tuple[str, str, str]:
        return self.check, self.kind, self.where

    def __str__(self) -> str:
        return f"[{self.check}] {self.kind} @ {self.where}: {self.detail}"


@dataclasses.dataclass
class Outcome:
    """What ``check_case`` found: failures, and per check ``pass``/``fail``/``skip`` plus notes
    (XLA aborts, XLA:CPU refusing a module hloscope and XLA's parser hold valid, ...)."""

    failures: list[Failure] = dataclasses.field(default_factory=list)
    status: dict[str, str] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    xla_valid: bool | None = None
    values: tuple[dict[str, Any], dict[str, Any]] | None = None  # (hloscope's, XLA's) by name


def _parse_shape(text: str) -> Shape:
    from hloscope.text import parse_shape

    return parse_shape(text)


def _where(inst: Any) -> str:
    """``opcode`` plus the element types involved, the key failures are classed by."""
    def types(s: Shape) -> str:
        return ",".join(leaf.element_type for _, leaf in s.leaves())

    ops = "/".join(dict.fromkeys(types(o.shape) for o in inst.operands))
    return f"{inst.opcode.text}({ops})->{types(inst.shape)}"


def check_case(case: Case, worker: XlaWorker, checks: str = "abcde", *,
               compile_verdict: bool = False) -> Outcome:
    """Run the checks named in ``checks`` on ``case`` (see the module docstring)."""
    import hloscope as hs
    from hloscope.ir.shape_inference import ShapeInferenceError, infer_shape, same_shape

    out = Outcome()
    text = case.text()
    try:
        module = hs.parse(text)
        printed = hs.to_text(module)
    except Exception as e:
        out.failures.append(Failure("a", "hloscope-parse", "-", f"{type(e).__name__}: {e}"))
        out.status["a"] = "fail"
        return out
    insts = {i.name: i for c in module.computations for i in c.instructions}

    # (a) XLA reads hloscope's printing as the module it reads from the original text.
    status, orig = worker.call("parse", text)
    if status == "abort":
        out.notes.append(f"xla-abort parse: {orig}")
        return out
    if status != "ok":
        out.notes.append(f"xla-rejects-original: {str(orig)[:200]}")
    if "a" in checks:
        s2, back = worker.call("parse", printed)
        out.status["a"] = "pass"
        if s2 in ("abort", "timeout"):
            out.notes.append(f"xla-{s2} parse of the printing: {back}")
            out.status["a"] = "skip"
        elif s2 != "ok":
            out.failures.append(Failure("a", "xla-rejects-printed", "-", str(back)[:500]))
        elif status == "ok" and back[0].split("\n", 1)[1] != orig[0].split("\n", 1)[1]:
            a_lines = orig[0].splitlines()
            b_lines = back[0].splitlines()
            diff = next(((x, y) for x, y in zip(a_lines, b_lines) if x != y), ("", ""))
            out.failures.append(Failure("a", "printed-differs", "-",
                                        f"XLA reads {diff[0].strip()!r} from the original, "
                                        f"{diff[1].strip()!r} from hloscope's printing"))
        if any(f.check == "a" for f in out.failures):
            out.status["a"] = "fail"

    # (b), (c): XLA's verdict and inferred shapes from the shapeless text.
    s3, inferred = worker.call("parse", case.text(shapeless=True))
    if s3 == "abort":
        out.notes.append(f"xla-abort shapeless parse: {inferred}")
        return out
    xla_reason = None
    shapes: dict[str, Shape] = {}
    all_shapes: dict[str, Shape] = {}
    if s3 != "ok":
        xla_reason = str(inferred).replace("\n", " ")[:300]
    else:
        for name, (_, st) in inferred[1].items():
            shapes[name] = _parse_shape(st)
        all_shapes = dict(shapes)
        omitted = case.inferred()
        shapes = {n: s for n, s in shapes.items() if n in omitted}
        for name, s in shapes.items():
            inst = insts.get(name)
            if inst is not None and not same_shape(s, inst.shape) and xla_reason is None:
                xla_reason = (f"{name}: XLA infers {shape_text(s)}, declared "
                              f"{shape_text(inst.shape)}")
    xla_valid = xla_reason is None
    diagnostics = [d for d in hs.verify(module) if d.severity == "error"]
    if xla_valid and (compile_verdict or diagnostics):
        # Note [XLA's verdict]: the parser's shape inference is laxer than XLA:CPU (mixed float
        # precision, declared shapes it does not infer), so a disagreement asks the compiler.
        s4, msg = worker.call("compile", text)
        if s4 == "error" and _verifier_message(str(msg)):
            xla_valid, xla_reason = False, f"XLA:CPU's verifier: {str(msg)[:300]}"
        elif s4 in ("abort", "timeout"):
            out.notes.append(f"xla-{s4} compile: {msg}")
            return out  # no verdict from XLA: nothing to compare
    if xla_valid and (case.mutation or "").startswith("comparison-type:"):
        # HloVerifier's rule ("Expected comparison type ..."); XLA:CPU applies it only to
        # compares that survive its StableHLO round trip (empty or constant ones are folded
        # away first), so the compiler is no reliable judge of it.
        xla_valid, xla_reason = False, "HloVerifier: the comparison type does not fit the operands"
    if xla_valid and diagnostics and all(_folded_before_verifying(insts.get(d.instruction or ""), d.message)
                                         for d in diagnostics):
        xla_valid, xla_reason = False, "HloVerifier: mixed float precision (checked as written)"
    out.xla_valid = xla_valid
    if "b" in checks:
        out.status["b"] = "pass"
        if xla_valid and diagnostics:
            inst = insts.get(diagnostics[0].instruction or "")
            out.failures.append(Failure("b", "hloscope-rejects-valid", _where(inst) if inst else "-",
                                        diagnostics[0].message[:400], getattr(inst, "name", "")))
        elif not xla_valid and not diagnostics:
            out.failures.append(Failure("b", "hloscope-accepts-invalid",
                                        case.mutation or "-", str(xla_reason)))
        if any(f.check == "b" for f in out.failures):
            out.status["b"] = "fail"
    if "c" in checks and s3 == "ok":
        out.status["c"] = "pass"
        for name, s in shapes.items():
            inst = insts.get(name)
            if inst is None or inst.opcode.text not in PARSER_INFERS:
                continue
            # Compare only where hloscope sees the operands XLA saw.
            if not all(same_shape(all_shapes.get(o.name, o.shape), o.shape) for o in inst.operands):
                continue
            try:
                mine = infer_shape(inst)
            except ShapeInferenceError as e:
                if not xla_valid:
                    continue  # XLA's inference is laxer than its verifier (mixed precision)
                out.failures.append(Failure("c", "hloscope-cannot-infer", _where(inst), f"{name}: {e}", name))
                continue
            if mine is not None and not same_shape(mine, s):
                out.failures.append(Failure("c", "inferred-shape", _where(inst),
                                            f"{name}: XLA {shape_text(s)}, hloscope {shape_text(mine)}",
                                            name))
        if any(f.check == "c" for f in out.failures):
            out.status["c"] = "fail"
    if not xla_valid or diagnostics:
        return out

    # (d) cost analysis, on valid modules only (XLA's may CHECK-fail on malformed ones).
    if "d" in checks:
        s5, cost = worker.call("cost", text)
        if s5 != "ok":
            out.notes.append(f"xla-cost-{s5}: {str(cost)[:200]}")
        else:
            mine = hs.cost(module).total
            out.status["d"] = "pass"
            for key, got in (("flops", mine.flops), ("transcendentals", mine.transcendentals),
                             ("bytes accessed", mine.bytes_accessed)):
                want = float(cost.get(key, 0.0))
                if not math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-9):
                    culprit = _cost_culprit(module, key)
                    out.failures.append(Failure("d", f"cost-{key.split()[0]}", culprit,
                                                f"XLA {want:g}, hloscope {got:g}"))
                    out.status["d"] = "fail"

    # (e) execution.
    if "e" in checks:
        _check_execution(case, module, worker, out)
    return out


def _folded_before_verifying(inst: Any, message: str) -> bool:
    """Whether XLA:CPU, having accepted a module hloscope rejects for mixing float precisions,
    only did so because it folded the empty instruction away before its verifier ran (Note
    [XLA's verdict]); the verifier's rule is then taken as written."""
    if inst is None or "mixes floating-point types" not in message:
        return False
    return any(leaf.element_count == 0 for s in [inst.shape, *(o.shape for o in inst.operands)]
               for _, leaf in s.leaves())


def _verifier_message(msg: str) -> bool:
    """Whether XLA:CPU refused a module for being malformed (its conversion to StableHLO or its
    verifier), not for lacking a kernel."""
    keys = ("error: loc(", "Expected instruction to have shape", "INVALID_ARGUMENT",
            "mixed precision", "hlo verifier")
    return any(k in msg for k in keys)


def _cost_culprit(module: Any, key: str) -> str:
    """The opcodes with a nonzero share of ``key`` (the reducer narrows them down to one)."""
    from hloscope.analysis.cost import analyze_cost

    per = analyze_cost(module).per_instruction
    attr = {"flops": "flops", "transcendentals": "transcendentals", "bytes accessed": "bytes_accessed"}[key]
    ops = sorted({i.opcode.text for i, c in per.items() if getattr(c, attr)})
    return ",".join(ops) or "-"


# --------------------------------------------------------------------------------------------
# Comparing outputs (Note [Comparing outputs])


def _tolerance_tables() -> dict[str, dict[np.dtype[Any], dict[str, float]]]:
    """The project's per-dtype tables (``hloscope.testing.tolerances``), widened to the types
    the fuzzer adds: fp8 (two units in the last place), c64 and c128 (as f32 and f64)."""
    from hloscope.testing import tolerances as mod

    extra = {np.dtype(ml_dtypes.float8_e4m3fn): dict(rtol=2 ** -2, atol=2 ** -6),
             np.dtype(ml_dtypes.float8_e5m2): dict(rtol=2 ** -1, atol=2 ** -14)}
    tables = {}
    for name in ("REDUCTION", "LINALG"):
        table = dict(getattr(mod, name))
        table.setdefault(np.dtype(np.complex64), table[np.dtype(np.float32)])
        table.setdefault(np.dtype(np.complex128), table[np.dtype(np.float64)])
        for k, v in extra.items():
            table.setdefault(k, v)
        tables[name] = table
    return tables


_TOLERANCES: dict[str, dict[np.dtype[Any], dict[str, float]]] = {}

# Opcodes whose float results must be bit-exact: they move or pick values, or are exact
# operations (negate, abs, max, min, compare) whose results have one right answer.
_EXACT = frozenset({
    "parameter", "constant", "broadcast", "reshape", "transpose", "slice", "concatenate", "pad",
    "reverse", "dynamic-slice", "dynamic-update-slice", "gather", "tuple", "get-tuple-element",
    "copy", "bitcast-convert", "select", "clamp", "sort", "negate", "abs", "maximum", "minimum",
    "compare", "iota", "real", "imag", "is-finite", "sign", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "convert", "reduce-precision", "complex", "not", "and", "or", "xor",
})
_LINALG = frozenset({"dot", "convolution"})


# Exact for real operands only: a complex sign divides by |z|, which rounds.
_EXACT_FOR_REAL = frozenset({"sign"})


def _table_for(opcode: str, dtype: np.dtype[Any] | None = None) -> dict[np.dtype[Any], dict[str, float]] | None:
    if opcode in _EXACT and not (opcode in _EXACT_FOR_REAL and dtype is not None and dtype.kind == "c"):
        return None
    if not _TOLERANCES:
        _TOLERANCES.update(_tolerance_tables())
    return _TOLERANCES["LINALG" if opcode in _LINALG else "REDUCTION"]


def leaves_of(value: Any, prefix: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """(shape index, array) of every leaf of a value (tuples nest)."""
    if isinstance(value, tuple):
        for k, v in enumerate(value):
            yield from leaves_of(v, (*prefix, k))
    else:
        yield prefix, np.asarray(value)


def _as_float(a: np.ndarray) -> Any:
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


_LOW_FLOATS = tuple(np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                           ml_dtypes.float8_e5m2))


def _is_floating(dtype: np.dtype[Any]) -> bool:
    return dtype.kind in "cf" or dtype in _LOW_FLOATS


def _tiny(dtype: np.dtype[Any]) -> float:
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64 if dtype == np.complex128 else dtype)
    return float(ml_dtypes.finfo(real).tiny)


def _flush(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """``x`` (float64) with the subnormals of ``dtype`` replaced by zeros of their sign."""
    return np.where(np.abs(x) < _tiny(dtype), np.copysign(0.0, x), x)


def compare_arrays(ours: np.ndarray, theirs: np.ndarray, opcode: str) -> str | None:
    """None when ``ours`` matches XLA's ``theirs`` for a result of ``opcode``, else what differs
    (the first differing element, with both values)."""
    if ours.dtype != theirs.dtype:
        return f"dtype {ours.dtype} vs XLA's {theirs.dtype}"
    if ours.shape != theirs.shape:
        return f"shape {ours.shape} vs XLA's {theirs.shape}"
    if ours.size == 0:
        return None
    kind = ours.dtype.kind
    if not _is_floating(ours.dtype):
        bad = ours != theirs
    else:
        a, b = _as_float(ours), _as_float(theirs)
        parts = [(a.real, b.real), (a.imag, b.imag)] if kind == "c" else [(a, b)]
        table = _table_for(opcode, ours.dtype)
        tol = table.get(ours.dtype) if table is not None else None
        bad = np.zeros(ours.shape, dtype=bool)
        for x, y in parts:
            nan = np.isnan(x) | np.isnan(y)
            # Note [Legitimate differences]: XLA:CPU runs with subnormals flushed to zero.
            x, y = _flush(x, ours.dtype), _flush(y, ours.dtype)
            bad |= np.isnan(x) != np.isnan(y)
            if tol is None:
                # Bit-exact, -0.0 included (signbit), NaNs equal as NaNs.
                bad |= ~nan & ((x != y) | (np.signbit(x) != np.signbit(y)))
            else:
                inf = np.isinf(x) | np.isinf(y)
                bad |= inf & ~nan & (x != y)
                fin = ~nan & ~inf
                with np.errstate(invalid="ignore", over="ignore"):
                    bad |= fin & (np.abs(x - y) > tol["atol"] + tol["rtol"] * np.abs(y))
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())}/{bad.size} elements differ, first at {list(idx)}: "
            f"hloscope {ours[idx]!r}, XLA {theirs[idx]!r}")


def producer_of(inst: Any) -> str:
    """The opcode whose arithmetic produced ``inst``'s value (through get-tuple-element)."""
    while inst.opcode.text == "get-tuple-element":
        inst = inst.operands[0]
    if inst.opcode.text in ("while", "conditional", "call"):
        return "add"  # bodies are elementwise arithmetic: the elementwise tolerance
    return inst.opcode.text


def _named_values(module: Any, value: Any) -> dict[str, Any]:
    """The root's value split by the instructions it holds (Note [Comparing outputs])."""
    root = module.entry.root
    if root.opcode.text == "tuple":
        return {o.name: v for o, v in zip(root.operands, value)}
    return {root.name: value}


def _check_execution(case: Case, module: Any, worker: XlaWorker, out: Outcome) -> None:
    import hloscope as hs


    status, theirs = worker.call("run", case.text(), case.inputs)
    if status in ("abort", "timeout"):
        out.notes.append(f"xla-{status} run: {theirs}")
        return
    if status == "error":
        msg = str(theirs).replace("\n", " ")
        if _verifier_message(msg):
            out.failures.append(Failure("b", "hloscope-accepts-invalid", case.mutation or "-",
                                        f"XLA:CPU refuses: {msg[:400]}"))
            out.status["b"] = "fail"
        else:
            out.notes.append(f"xla-cpu-refuses: {msg[:300]}")
        return
    out.status["e"] = "pass"
    try:
        ours = run_hloscope(module, case.inputs)
    except Exception as e:
        inst = getattr(e, "instruction", None)
        where = _where(inst) if inst is not None else "-"
        out.failures.append(Failure("e", "hloscope-run-error", where,
                                    f"{type(e).__name__}: {str(e).splitlines()[0][:300]}",
                                    getattr(inst, "name", "")))
        out.status["e"] = "fail"
        return
    out.values = (_named_values(module, ours), _named_values(module, theirs))
    failure = _compare_outputs(module, *out.values)
    if failure is not None:
        flushed = _flushed_case(case)
        if flushed is not None:
            # Note [Legitimate differences]: XLA:CPU treats subnormal inputs as zeros (DAZ).
            try:
                again = _compare_outputs(module, _named_values(
                    module, run_hloscope(hs.parse(flushed.text()), flushed.inputs)), out.values[1])
            except Exception:
                again = failure
            if again is None:
                out.notes.append(f"xla-cpu-flushes-subnormal-inputs: {failure}")
                return
        out.failures.append(failure)
        out.status["e"] = "fail"


def run_hloscope(module: Any, inputs: list[Any]) -> Any:
    """``hloscope.run`` of ``module`` with numpy's IEEE warnings silenced (check e's side)."""
    import hloscope as hs

    # Overflow and NaN warnings are numpy doing IEEE arithmetic, as XLA does silently.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return hs.run(module, inputs)


def _flushed_case(case: Case) -> Case | None:
    """``case`` with the subnormals of its inputs and constants flushed to signed zeros, or
    None when it has none."""
    inputs = [_flush_input(v) for v in case.inputs]
    changed = any(a is not b for a, b in zip(inputs, case.inputs))
    comps = []
    for comp in case.comps:
        insts = []
        for inst in comp.insts:
            if inst.value is not None and isinstance(inst.shape, ArrayShape):
                v = _flush_input(inst.value)
                if v is not inst.value:
                    inst = dataclasses.replace(inst, value=v, literal=literal_text(v, inst.shape.element_type))
                    changed = True
            insts.append(inst)
        comps.append(Comp(comp.name, insts, comp.root))
    return Case(case.seed, comps, inputs, case.mutation) if changed else None


def _flush_input(v: Any) -> Any:
    """``v`` with its subnormals replaced by signed zeros (``v`` itself when it has none)."""
    if isinstance(v, tuple):
        out = tuple(_flush_input(x) for x in v)
        return v if all(a is b for a, b in zip(out, v)) else out
    a = np.asarray(v)
    if not _is_floating(a.dtype) or a.size == 0:
        return v
    wide = _as_float(a)
    parts = [wide.real, wide.imag] if a.dtype.kind == "c" else [wide]
    if not any(((np.abs(p) < _tiny(a.dtype)) & (p != 0)).any() for p in parts):
        return v
    flat = [_flush(p, a.dtype) for p in parts]
    if a.dtype.kind != "c":
        return flat[0].astype(a.dtype)
    out = np.empty(a.shape, a.dtype)  # not re + 1j * im: 1j * inf is nan + inf j
    out.real, out.imag = flat
    return out


def _compare_outputs(module: Any, mine_by: dict[str, Any], theirs_by: dict[str, Any]) -> Failure | None:
    """The first instruction whose value differs (Note [Comparing outputs]), as a failure."""
    insts = {i.name: i for i in module.entry.instructions}
    # Whether each value is bit-identical in both: an exact operation (max, compare, convert,
    # data movement) of operands that differ in rounding may differ too, legitimately.
    exact: dict[str, bool] = {}
    for name in mine_by:  # instruction order: the first difference is the culprit
        inst = insts[name]
        inputs_exact = all(exact.get(o.name, True) for o in inst.operands)
        exact[name] = True
        for (path, a), (_, b) in zip(leaves_of(mine_by[name]), leaves_of(theirs_by[name])):
            exact[name] &= compare_arrays(a, b, "copy") is None
            if inputs_exact:
                msg, kind = compare_arrays(a, b, producer_of(inst)), "value"
            elif _is_floating(a.dtype):
                msg, kind = compare_arrays(a, b, "add"), "value-of-inexact-operands"
            else:
                continue  # integers or pred from operands that differ in rounding: no verdict
            if msg is not None:
                return Failure("e", kind, _where(inst), f"{name}{list(path) if path else ''}: {msg}", name)
    return None
