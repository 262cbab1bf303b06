"""Reducing a fuzzer failure to a small module that still fails the same way, and the repro
text written for it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.ir.dtypes import PRIMITIVE_TYPES
from hloscope.ir.shape import ArrayShape, Shape, TupleShape
from hloscope.testing.fuzz.checks import (
    Failure,
    Outcome,
    check_case,
    compare_arrays,
    leaves_of,
    producer_of,
    run_hloscope,
)
from hloscope.testing.fuzz.model import BINARY_TYPES, UNARY_TYPES, A, Case, Comp, Inst, literal_text
from hloscope.testing.xla_worker import XlaWorker

# --------------------------------------------------------------------------------------------
# Reducing a failure to a small module


def _called(comp: Comp, names: set[str]) -> set[str]:
    import re

    found = set()
    for inst in comp.insts:
        for tok in re.findall(r"[\w.-]+", inst.attrs):
            if tok in names:
                found.add(tok)
    return found


def _rebuild(case: Case, insts: list[Inst], root: str, inputs: dict[str, Any]) -> Case:
    """A case with entry ``insts`` (parameters renumbered, dead code and unused computations
    dropped); ``inputs`` maps parameter names to their values."""
    by_name = {i.name: i for i in insts}
    live: set[str] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n not in live:
            live.add(n)
            stack.extend(by_name[n].operands)
    kept = [dataclasses.replace(i) for i in insts if i.name in live]
    kept.sort(key=lambda i: i.opcode != "parameter")
    values = []
    for k, inst in enumerate(i for i in kept if i.opcode == "parameter"):
        inst.number = k
        values.append(inputs[inst.name])
    entry = Comp(case.entry.name, kept, root)
    names = {c.name for c in case.comps[:-1]}
    reach, todo = set(), [entry]
    while todo:
        for n in _called(todo.pop(), names) - reach:
            reach.add(n)
            todo.append(next(c for c in case.comps if c.name == n))
    comps = [c for c in case.comps[:-1] if c.name in reach] + [entry]
    return Case(case.seed, comps, values, case.mutation)


def _param_inputs(case: Case) -> dict[str, Any]:
    return {i.name: v for i, v in zip((i for i in case.entry.insts if i.opcode == "parameter"),
                                       case.inputs)}


def _zeros(shape: Shape) -> Any:
    if isinstance(shape, TupleShape):
        return tuple(_zeros(s) for s in shape.elements)
    return np.zeros(shape.dimensions, PRIMITIVE_TYPES[shape.element_type].dtype)


def _as_parameter(inst: Inst, value: Any) -> tuple[Inst, Any]:
    return Inst(inst.name, inst.shape, "parameter", [], number=0), \
        value if value is not None else _zeros(inst.shape)


def reduce_case(case: Case, failure: Failure, worker: XlaWorker, *, compile_verdict: bool = False,
                log: Callable[[str], None] = lambda s: None) -> Case:
    """A smaller case that still fails like ``failure``: the failing instruction cut out with
    its operands as parameters, other instructions replaced by parameters holding their values,
    root elements dropped, and elementwise arrays shrunk to the differing elements."""
    checks = failure.check + ("b" if failure.check != "b" else "")

    def same(f: Failure) -> bool:
        if failure.check == "d":
            return f.check == "d" and f.kind == failure.kind
        return f.signature == failure.signature

    def fails(c: Case) -> Outcome | None:
        out = check_case(c, worker, checks, compile_verdict=compile_verdict)
        return out if any(same(f) for f in out.failures) else None

    values: dict[str, Any] = dict(_param_inputs(case))
    first = check_case(case, worker, checks, compile_verdict=compile_verdict)
    if first.values is not None:
        values.update(first.values[0])
    best = case
    # 1. Cut the culprit out: its operands become parameters (values as hloscope computed them).
    if failure.inst and failure.inst in {i.name for i in case.entry.insts}:
        tgt = case.entry.inst(failure.inst)
        for keep_constants in (False, True):
            insts, inputs = [], {}
            for o in dict.fromkeys(tgt.operands):
                src = case.entry.inst(o)
                if src.opcode == "constant" and keep_constants:
                    insts.append(src)
                    continue
                p, v = _as_parameter(src, values.get(o))
                insts.append(p)
                inputs[o] = v
            cut = _rebuild(case, insts + [tgt], tgt.name, inputs)
            if fails(cut):
                best = cut
                log(f"cut to {tgt.opcode}")
                break
    # 2. Replace instructions by parameters and drop root elements while the failure stays.
    changed = True
    while changed:
        changed = False
        entry = best.entry
        inputs = _param_inputs(best)
        root = entry.inst(entry.root)
        cands: list[Case] = []
        if root.opcode == "tuple":
            for k in range(len(root.operands)):
                ops = root.operands[:k] + root.operands[k + 1:]
                if not ops:
                    continue
                if len(ops) == 1:
                    cands.append(_rebuild(best, entry.insts, ops[0], inputs))
                else:
                    new_root = dataclasses.replace(root, operands=ops, shape=TupleShape(
                        tuple(entry.inst(o).shape for o in ops)))
                    cands.append(_rebuild(best, [new_root if i is root else i for i in entry.insts],
                                          entry.root, inputs))
        for inst in reversed(entry.insts):
            if inst.opcode in ("parameter",) or inst is root or inst.name == failure.inst:
                continue
            p, v = _as_parameter(inst, values.get(inst.name))
            cands.append(_rebuild(best, [p if i is inst else i for i in entry.insts], entry.root,
                                  {**inputs, inst.name: v}))
        for cand in cands:
            if len(cand.text()) < len(best.text()) and fails(cand):
                best, changed = cand, True
                log(f"reduced to {len(best.entry.insts)} instructions")
                break
    if failure.check == "e":
        best = _shrink_elements(best, fails, log)
    return best


_ELEMENTWISE = frozenset(UNARY_TYPES) | frozenset(BINARY_TYPES) | {
    "compare", "select", "clamp", "convert", "reduce-precision"}


def _shrink_elements(case: Case, fails: Callable[[Case], Outcome | None],
                     log: Callable[[str], None]) -> Case:
    """For an elementwise root over parameters, keep only one differing element."""
    e = case.entry
    root = e.inst(e.root)
    if root.opcode not in _ELEMENTWISE or not isinstance(root.shape, ArrayShape) or root.shape.rank == 0:
        return case
    dims = root.shape.dimensions
    ops = [e.inst(o) for o in root.operands]
    if any(o.opcode != "parameter" or not isinstance(o.shape, ArrayShape)
           or o.shape.dimensions not in (dims, ()) for o in ops):
        return case
    out = fails(case)
    if out is None or out.values is None:
        return case
    mine, theirs = out.values[0][root.name], out.values[1][root.name]
    inputs = _param_inputs(case)
    for flat in list(np.flatnonzero(_mismatch_mask(np.asarray(mine), np.asarray(theirs), root.opcode)))[:8]:
        idx = np.unravel_index(flat, dims)
        insts, new_inputs = [], {}
        for inst in e.insts:
            s = inst.shape
            if isinstance(s, ArrayShape) and s.dimensions == dims and (inst.opcode == "parameter" or inst is root):
                inst = dataclasses.replace(inst, shape=A(s.element_type, (1,)))
            insts.append(inst)
            if inst.opcode == "parameter":
                v = np.asarray(inputs[inst.name])
                new_inputs[inst.name] = v[idx].reshape(1) if v.shape == dims else v
        cand = _rebuild(case, insts, e.root, new_inputs)
        if fails(cand):
            log("shrunk to one element")
            return cand
    return case


def _mismatch_mask(ours: np.ndarray, theirs: np.ndarray, opcode: str) -> np.ndarray:
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        return np.ones(ours.shape, dtype=bool)
    flat_a, flat_b = ours.reshape(-1), theirs.reshape(-1)
    return np.array([compare_arrays(flat_a[k:k + 1], flat_b[k:k + 1], opcode) is not None
                     for k in range(flat_a.size)]).reshape(ours.shape)


def describe_repro(small: Case, failure: Failure, worker: XlaWorker) -> str:
    """The repro text of a reduced case, its comment saying what differs. For check e the
    module is also run with its inputs as constants, which XLA folds with its evaluator
    (HloEvaluator) instead of compiling: when the evaluator sides with hloscope, the difference
    is XLA:CPU's compiled code against XLA's own reference, and the comment says so."""
    again = next((f for f in check_case(small, worker, failure.check + "b").failures
                  if f.check == failure.check), failure)
    head = f"seed {small.seed}: [{again.check}] {again.kind} @ {again.where}: {again.detail}"
    text = repro_text(small, head)
    if failure.check != "e":
        return text
    import hloscope as hs

    try:
        module = hs.parse(text)
        status, reply = worker.call("run-optimized", text, [])
        ours = run_hloscope(module, [])
    except Exception as e:
        return repro_text(small, f"{head} | evaluator check failed: {e}")
    if status != "ok":
        return repro_text(small, f"{head} | XLA with constant inputs: {status}")
    folded, optimized = reply
    root = module.entry.root
    mine = compare_arrays(_first_leaf_of(ours), _first_leaf_of(folded), producer_of(root))
    if f" {root.opcode.text}(" in optimized.split("ENTRY", 1)[-1] or "fusion(" in optimized:
        verdict = ("with constant inputs XLA:CPU still compiles it (not folded): "
                   + ("then it agrees with hloscope" if mine is None else "same difference"))
    elif mine is None:
        verdict = ("XLA's evaluator (constant inputs, folded) agrees with hloscope: only XLA:CPU's "
                   "compiled code differs")
    else:
        verdict = "XLA's evaluator (constant inputs, folded) differs from hloscope too"
    return repro_text(small, f"{head} | {verdict}")


def _first_leaf_of(value: Any) -> np.ndarray:
    return next(leaves_of(value))[1]


def repro_text(case: Case, comment: str) -> str:
    """``case`` as a self-contained module: entry parameters become constants holding their
    inputs, under a one-line comment."""
    inputs = _param_inputs(case)
    insts = []
    for inst in case.entry.insts:
        if inst.opcode == "parameter" and isinstance(inst.shape, ArrayShape):
            lit = literal_text(np.asarray(inputs[inst.name]), inst.shape.element_type)
            inst = Inst(inst.name, inst.shape, "constant", [], literal=lit)
        insts.append(inst)
    entry = Comp(case.entry.name, insts, case.entry.root)
    body = Case(case.seed, case.comps[:-1] + [entry], [], None).text()
    return f"// {comment}\n{body}"
