"""Trip counts of while loops, from the patterns jax and XLA emit; None when not provable.

Two sources, tried in order:

1. ``backend_config={"known_trip_count":{"n":"2000"}}``, which XLA's while-loop analysis writes
   on optimized modules.
2. A counter: element ``i`` of the loop tuple starts at a constant, the body sets it to itself
   plus a constant step, and the condition compares it (LT, LE, GT, GE, NE) with a bound that
   is a constant or a loop-invariant element that starts at a constant. This is what
   ``lax.fori_loop`` and ``lax.scan`` lower to. Copies, bitcasts, converts and fusions between
   the pieces are looked through (optimized modules wrap the compare and the add in fusions).
"""
from __future__ import annotations

from dataclasses import dataclass

from hloscope.ir import Computation, Instruction, Module, Opcode

__all__ = ["execution_counts", "infer_trip_count", "infer_trip_count_detail", "TripCount"]

# Instructions that pass a scalar through unchanged for our purpose.
_TRANSPARENT = frozenset({Opcode.COPY, Opcode.BITCAST, Opcode.RESHAPE, Opcode.CONVERT})
# Bail out rather than loop forever on a malformed or huge expression graph.
_MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class _Elem:
    """Element ``index`` of the loop-carried tuple (read through the computation's parameter)."""

    index: int


@dataclass(frozen=True, slots=True)
class TripCount:
    """A trip count and how it was found (``"backend_config"`` or ``"counter"``)."""

    n: int
    source: str


def infer_trip_count(while_inst: Instruction) -> int | None:
    """Number of times ``while_inst``'s body runs, or None when it cannot be proven."""
    found = infer_trip_count_detail(while_inst)
    return None if found is None else found.n


def infer_trip_count_detail(while_inst: Instruction) -> TripCount | None:
    """Like :func:`infer_trip_count`, also saying which pattern gave the count."""
    cfg = while_inst.backend_config.json() if while_inst.backend_config is not None else None
    if isinstance(cfg, dict):
        known = cfg.get("known_trip_count")
        if isinstance(known, dict) and "n" in known:
            try:
                return TripCount(int(known["n"]), "backend_config")
            except (TypeError, ValueError):
                pass
    n = _counter_trip_count(while_inst)
    return None if n is None else TripCount(n, "counter")


def _counter_trip_count(w: Instruction) -> int | None:
    cond: Computation = w.attrs["condition"]
    body: Computation = w.attrs["body"]
    init = w.operands[0] if w.operands else None
    if init is None:
        return None
    compare = _find_compare(cond.root, {}, 0)
    if compare is None:
        return None
    direction, lhs, rhs = compare
    # Put the counter on the left.
    if isinstance(rhs, _Elem) and not isinstance(lhs, _Elem):
        lhs, rhs = rhs, lhs
        direction = _FLIP.get(direction, direction)
    if not isinstance(lhs, _Elem):
        return None
    i = lhs.index
    bound = rhs if isinstance(rhs, int) else None
    if isinstance(rhs, _Elem):
        # A loop-invariant bound carried in the tuple (fori_loop with traced bounds).
        if _body_update(body, rhs.index) != ("same",):
            return None
        bound = _init_value(init, rhs.index)
    start = _init_value(init, i)
    update = _body_update(body, i)
    if bound is None or start is None or update is None or update[0] != "add":
        return None
    step = update[1]
    return _count(direction, start, step, bound)


_FLIP = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _count(direction: str, start: int, step: int, bound: int) -> int | None:
    if step == 0:
        return None
    if direction == "LT" and step > 0:
        return max(0, -(-(bound - start) // step))
    if direction == "LE" and step > 0:
        return max(0, (bound - start) // step + 1)
    if direction == "GT" and step < 0:
        return max(0, -(-(start - bound) // -step))
    if direction == "GE" and step < 0:
        return max(0, (start - bound) // -step + 1)
    if direction == "NE" and (bound - start) % step == 0 and (bound - start) // step >= 0:
        return (bound - start) // step
    return None


def _find_compare(inst: Instruction, env: dict[Instruction, object], depth: int) -> tuple[str, object, object] | None:
    """The condition's root compare as (direction, lhs, rhs) with resolved sides."""
    if depth > _MAX_DEPTH:
        return None
    if inst.opcode in _TRANSPARENT:
        return _find_compare(inst.operands[0], env, depth + 1)
    if inst.opcode is Opcode.FUSION:
        fused: Computation = inst.attrs["calls"]
        inner_env = {p: _resolve(o, env, depth + 1) for p, o in zip(fused.parameters, inst.operands, strict=False)}
        return _find_compare(fused.root, inner_env, depth + 1)
    if inst.opcode is Opcode.COMPARE:
        direction = str(inst.attrs.get("direction", ""))
        return direction, _resolve(inst.operands[0], env, depth + 1), _resolve(inst.operands[1], env, depth + 1)
    return None


def _resolve(inst: Instruction, env: dict[Instruction, object], depth: int) -> object:
    """A scalar as an int constant, a loop element ``_Elem``, or None when neither."""
    if depth > _MAX_DEPTH:
        return None
    if inst in env:
        return env[inst]
    op = inst.opcode
    if op in _TRANSPARENT:
        return _resolve(inst.operands[0], env, depth + 1)
    if op is Opcode.CONSTANT:
        return _scalar_constant(inst)
    if op is Opcode.GET_TUPLE_ELEMENT and inst.operands[0].opcode is Opcode.PARAMETER:
        return _Elem(inst.attrs["index"])
    if op is Opcode.PARAMETER and inst.computation is not None:
        return None
    if op is Opcode.FUSION:
        fused: Computation = inst.attrs["calls"]
        inner_env = {p: _resolve(o, env, depth + 1) for p, o in zip(fused.parameters, inst.operands, strict=False)}
        return _resolve(fused.root, inner_env, depth + 1)
    return None


def _scalar_constant(inst: Instruction) -> int | None:
    literal = inst.attrs.get("literal")
    if literal is None or getattr(literal, "elided", False):
        return None
    try:
        value = literal.to_numpy(inst.shape)
    except Exception:  # a literal we cannot decode is simply not a known bound
        return None
    if getattr(value, "size", 0) != 1:
        return None
    v = value.reshape(()).item()
    return int(v) if float(v).is_integer() else None


def _body_update(body: Computation, i: int) -> tuple | None:
    """How the body sets element ``i``: ("same",), ("add", step) or None."""
    root = body.root
    if root.opcode is not Opcode.TUPLE or i >= len(root.operands):
        return None
    return _update_expr(root.operands[i], {}, i, 0)


def _update_expr(inst: Instruction, env: dict[Instruction, object], i: int, depth: int) -> tuple | None:
    if depth > _MAX_DEPTH:
        return None
    if inst in env:
        v = env[inst]
        return ("same",) if v == _Elem(i) else None
    op = inst.opcode
    if op in _TRANSPARENT:
        return _update_expr(inst.operands[0], env, i, depth + 1)
    if op is Opcode.FUSION:
        fused: Computation = inst.attrs["calls"]
        inner_env = {p: _resolve(o, env, depth + 1) for p, o in zip(fused.parameters, inst.operands, strict=False)}
        return _update_expr(fused.root, inner_env, i, depth + 1)
    if op is Opcode.GET_TUPLE_ELEMENT:
        return ("same",) if _resolve(inst, env, depth + 1) == _Elem(i) else None
    if op in (Opcode.ADD, Opcode.SUBTRACT):
        a, b = (_resolve(o, env, depth + 1) for o in inst.operands)
        sign = -1 if op is Opcode.SUBTRACT else 1
        if a == _Elem(i) and isinstance(b, int):
            return ("add", sign * b)
        if op is Opcode.ADD and b == _Elem(i) and isinstance(a, int):
            return ("add", a)
    return None


def _init_value(init: Instruction, i: int) -> int | None:
    """The constant element ``i`` of the while's initial tuple, or None."""
    node = init
    for _ in range(_MAX_DEPTH):
        if node.opcode in _TRANSPARENT:
            node = node.operands[0]
            continue
        break
    if node.opcode is Opcode.TUPLE and i < len(node.operands):
        v = _resolve(node.operands[i], {}, 0)
        return v if isinstance(v, int) else None
    if node.opcode is Opcode.CONSTANT:
        value = node.attrs.get("literal")
        try:
            parts = value.to_numpy(node.shape) if value is not None else None
        except Exception:
            return None
        if isinstance(parts, tuple) and i < len(parts) and getattr(parts[i], "size", 0) == 1:
            v = parts[i].reshape(()).item()
            return int(v) if float(v).is_integer() else None
    return None


def execution_counts(module: Module) -> dict[Computation, int]:
    """How many times each computation runs per execution of the entry computation.

    While bodies and conditions run trip-count times (once when the count is unknown); called,
    branch, async and fused computations run as often as their callers. Callees come before
    their callers in a module's text, so one pass over the computations in reverse written
    order (callers first) propagates every count.
    """
    counts: dict[Computation, int] = {c: 0 for c in module.computations}
    counts[module.entry] = 1
    for comp in reversed(module.computations):
        n = counts.get(comp, 0)
        if n == 0:
            continue
        for inst in comp.instructions:
            called = inst.called_computations
            if not called:
                continue
            k = n
            if inst.opcode is Opcode.WHILE:
                k = n * (infer_trip_count(inst) or 1)
            for c in called:
                counts[c] = counts.get(c, 0) + k
    return counts
