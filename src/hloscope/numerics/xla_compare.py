"""Where hloscope and XLA:CPU part on one module: XLA's intermediate values, from cut-down
modules run in a child process, against hloscope's.

XLA returns only a module's outputs. ``compare_with_xla(module, inputs)`` gets the rest by
cutting (cut.py): the entry's values are made the outputs of copies of the module (in
chunks), run on XLA:CPU through ``hloscope.xla.worker.run_on_xla`` (a child process, so an
XLA crash cannot take hloscope down), and compared in execution order with the values
hloscope's run made (Note [Comparing values] in tolerances.py). The first entry value that
differs is then looked into: a fusion or call is isolated (its computation a module of its
own, every value it makes an output, its operands' values from hloscope's run as the inputs,
as ``run_hlo_module --isolate_instructions`` does) and compared again, down to the innermost
instruction that differs; a while loop's body is isolated on the loop's first state.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hloscope.interpret.evaluator import RunOptions
from hloscope.interpret.observe import Observer, Site, device_values
from hloscope.ir import Computation, Instruction, Module, Opcode
from hloscope.numerics.compare import (
    CompareReport,
    Divergence,
    PairError,
    ValueRef,
    pair_error,
    worst_error,
)
from hloscope.numerics.cut import isolate_computation, with_outputs

__all__ = ["compare_with_xla"]

_CHUNK = 256  # outputs per cut-down module
_COLLECTIVE = Opcode.ALL_REDUCE.family


class _Keep(Observer):
    """Keeps the first value (per device) of the instructions of one computation."""

    def __init__(self, module: Module, n: int, comp: Computation) -> None:
        super().__init__(module, n, computations=[comp])
        self.values: dict[int, dict[int, Any]] = {}

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        kept = self.values.setdefault(id(inst), {})
        for d, v in zip(site.devices, device_values(result, site)):
            kept.setdefault(d, v)


def _values(comp: Computation) -> list[Instruction]:
    """The instructions of ``comp`` whose values are compared: arrays, parameters aside."""
    return [i for i in comp.instructions if i.opcode not in (Opcode.PARAMETER, Opcode.TUPLE)
            and not any(s.element_type in ("token", "opaque") for _, s in i.shape.leaves())]


def _per_device(outputs: Any, n: int) -> list[Any]:
    return list(outputs) if n > 1 else [outputs]


def _run_xla(module: Module, inputs: Sequence[Any], r: int, p: int, per_device: bool) -> list[Any]:
    from hloscope.xla.worker import run_on_xla

    got = run_on_xla(module.to_text(), list(inputs), replicas=r, partitions=p, per_device=per_device)
    return _per_device(got.outputs, r * p)


def _first_difference(module: Module, comp: Computation, ours: _Keep, theirs: dict[int, list[Any]],
                      tolerances: dict | None, *, every: bool = False
                      ) -> tuple[list[PairError], PairError | None, Instruction | None]:
    """Each compared pair of ``comp``'s values (up to the first that differs, or ``every``
    one), and the first that differs with its instruction."""
    errors = []
    first: tuple[PairError, Instruction] | None = None
    for inst in _values(comp):
        kept = ours.values.get(id(inst))
        xla = theirs.get(id(inst))
        if not kept or xla is None:
            continue
        errs = [pair_error(inst, inst, xla[d], kept[d], tolerances, 0, (d,)) for d in sorted(kept) if d < len(xla)]
        err = worst_error(errs)
        if err is None:
            continue
        errors.append(err)
        if not err.agrees and first is None:
            first = (err, inst)
            if not every:
                break
    return errors, (first[0] if first else None), (first[1] if first else None)


def compare_with_xla(module: Module, inputs: Sequence[Any] = (), *, replicas: int | None = None,
                     partitions: int | None = None, tolerances: dict | None = None,
                     options: RunOptions | None = None, depth: int = 4, chunk: int = _CHUNK) -> CompareReport:
    """Compare every value of ``module``'s entry computation as hloscope and XLA:CPU compute
    it on ``inputs`` (module docstring), looking into the first that differs; the report's
    ``a`` side is XLA:CPU, ``b`` hloscope. Needs jax (the XLA worker runs in a child process).
    """
    from hloscope.interpret.run import default_grid, run

    r0, p0 = default_grid(module)
    r, p = replicas or r0, partitions or p0
    n = r * p
    per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    options = options or RunOptions()
    keep = _Keep(module, n, module.entry)
    run(module, list(inputs), replicas=r, partitions=p, options=dataclasses.replace(options, hooks=[*options.hooks, keep]))
    values = [i for i in _values(module.entry) if id(i) in keep.values]
    theirs: dict[int, list[Any]] = {}
    for start in range(0, len(values), chunk):
        part = values[start:start + chunk]
        outs = _run_xla(with_outputs(module, [i.name for i in part]), inputs, r, p, per_device)
        for k, inst in enumerate(part):
            theirs[id(inst)] = [o[k] for o in outs]
    errors, first, inst = _first_difference(module, module.entry, keep, theirs, tolerances, every=True)
    divergence = None
    if first is not None and inst is not None:
        device = first.devices[0] if first.devices else 0
        reads = {id(o): keep.values.get(id(o), {}).get(device) for o in inst.operands}
        within: list[ValueRef] = []
        found, err = _look_inside(module, inst, first, reads, device, tolerances, options, depth, within)
        at = errors.index(first)
        divergence = Divergence(ValueRef.of(found), ValueRef.of(found), err, first.devices, (),
                                tuple(reversed(errors[max(0, at - 6):at])), tuple(errors[at + 1:at + 7]), (),
                                tuple(within))
    agreeing = [e for e in errors if e.agrees]
    worst = max(agreeing, key=lambda e: e.error) if agreeing else None
    return CompareReport("XLA:CPU", "hloscope", len(values), len(errors), len(values) - len(errors), len(values),
                         worst, divergence, tuple(errors))


def _look_inside(module: Module, inst: Instruction, err: PairError, reads: dict[int, Any], device: int,
                 tolerances: dict | None, options: RunOptions, depth: int,
                 within: list[ValueRef]) -> tuple[Instruction, PairError]:
    """The innermost instruction under ``inst`` (a fusion, call or while loop) whose value
    differs between hloscope and XLA, its computation isolated and run on ``reads`` (hloscope's
    values of ``inst``'s operands on ``device``); ``within`` collects the instructions passed."""
    if depth <= 0:
        return inst, err
    if inst.opcode in (Opcode.FUSION, Opcode.CALL):
        comp = inst.called_computations[0]
    elif inst.opcode is Opcode.WHILE:
        comp = inst.attrs["body"]
    else:
        return inst, err
    if any(i.opcode.family is _COLLECTIVE or i.opcode in (Opcode.REPLICA_ID, Opcode.PARTITION_ID)
           for i in comp.instructions):
        return inst, err  # its values depend on the other devices: it cannot run alone
    operands = [reads.get(id(op)) for op in inst.operands]
    if any(o is None for o in operands):
        return inst, err
    from hloscope.interpret.run import run

    cut = isolate_computation(module, comp.name, outputs="values")
    inner = _Keep(cut, 1, cut.entry)
    try:
        run(cut, operands, options=dataclasses.replace(options, hooks=[inner]))
        outs = _run_xla(cut, operands, 1, 1, False)[0]
    except Exception:  # the piece may not run alone (XLA refuses it): stop at the whole
        return inst, err
    theirs = {id(v): [outs[k]] for k, v in enumerate(_values(cut.entry))}
    _, first, found = _first_difference(cut, cut.entry, inner, theirs, tolerances)
    if first is None or found is None:
        return inst, err
    within.append(ValueRef.of(inst))
    by_name = {i.name: i for i in comp.instructions}
    original = by_name.get(found.name, found)
    copies = {i.name: i for i in cut.entry.instructions}
    reads = {id(o): inner.values.get(id(copies.get(o.name)), {}).get(0) for o in original.operands}
    return _look_inside(module, original, dataclasses.replace(first, devices=(device,)), reads, device,
                        tolerances, options, depth - 1, within)
