"""Where a NaN or an infinity is born: the first instruction, in execution order, whose result
holds one while its operands held none.

``find_nonfinite(module, inputs)`` runs the module with a ``NonfiniteWatch`` (an observer,
Note [Observers] in interpret/evaluator.py) and stops as soon as it knows the answer. The
answer names the instruction and its computation, the devices where it happened, the loop
iterations it sits in, the instruction inside a fusion that made it (found by evaluating the
fused computation again on the fusion's operands: fused values are never observed during the
run, which keeps the watch cheap), its op_name and source line, and what each operand held.

Note [Births]
    A value holding a NaN is *born* non-finite when no operand held a NaN, and a value holding
    an infinity (and no NaN) when no operand held a NaN or an infinity. So ``log(-1)`` and
    ``0 / 0`` are births, and so is ``inf - inf``: infinities are often meant (a -inf constant
    as the start of a max-reduction, a -inf mask before a softmax) while a NaN almost never
    is, and the NaN a fully masked softmax row makes (``exp(-inf - -inf)``) must be found.
    Constants and parameters are not births: a constant holds what the program says, and an
    input that already held a NaN or an infinity is reported as such when no instruction made
    one (``kind == "input"``; a NaN constant likewise, ``kind == "constant"``).

Note [Which devices]
    In lockstep every device's value is checked at once, so the first birth is found with
    every device where it happened, and the run stops there. Run device by device (the
    per-device executor), the devices advance at their own pace between collectives: the
    watch records each device's first birth and its position (the number of instructions the
    device had evaluated), and stops once every device has either made one or gone past the
    earliest; the answer is the earliest birth, with every device whose first birth was the
    same instruction in the same loop iterations.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from hloscope.errors import EvaluationStopped
from hloscope.interpret.evaluator import EvalContext, RunOptions, evaluate, run_to_completion
from hloscope.interpret.observe import LoopIteration, Observer, Site, device_values
from hloscope.ir import Computation, Instruction, Module, Opcode
from hloscope.ir import replica_groups as grid
from hloscope.ir.source_location import op_name_and_source
from hloscope.numerics.summary import ValueSummary, leaves, nonfinite_per_device, summarize

__all__ = ["FirstNonfinite", "InputRecord", "InstructionRecord", "NonfiniteWatch", "find_nonfinite"]


@dataclasses.dataclass(frozen=True)
class InstructionRecord:
    """One instruction of a finding: where it is, what it says, and what it read and made (on
    one device: the first where it happened)."""

    name: str
    opcode: str
    computation: str
    text: str
    op_name: str | None
    source: str | None
    result: tuple[tuple[str, ValueSummary], ...]  # (label, summary) per array of the result
    operands: tuple[tuple[str, ValueSummary], ...]  # (operand name, summary) per array read

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "opcode": self.opcode, "computation": self.computation,
                "text": self.text, "op_name": self.op_name, "source": self.source,
                "result": [{"value": k, **s.to_json()} for k, s in self.result],
                "operands": [{"operand": k, **s.to_json()} for k, s in self.operands]}


@dataclasses.dataclass(frozen=True)
class InputRecord:
    """An entry parameter (or constant) that held a NaN or an infinity before anything ran."""

    name: str
    number: int | None  # the parameter number; None for a constant
    devices: tuple[int, ...]
    summary: ValueSummary

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "parameter_number": self.number, "devices": list(self.devices),
                **self.summary.to_json()}


@dataclasses.dataclass(frozen=True)
class FirstNonfinite:
    """Where the run first held a NaN or an infinity (Note [Births]).

    ``kind`` is "instruction" (``instruction`` made it; ``fused`` is the instruction inside
    it that did, when it is a fusion), "input" (no instruction made one, but an entry
    parameter held one: ``inputs``) or "constant" (a constant of the module holds a NaN).
    ``devices`` are the devices where it happened (empty for a value of a global program, a
    sharded module not partitioned yet) and ``loops`` the while loops around it,
    outermost first, with the iteration. ``inputs`` lists every input that held one, whatever
    the kind.
    """

    kind: str
    devices: tuple[int, ...]
    instruction: InstructionRecord | None = None
    fused: InstructionRecord | None = None
    loops: tuple[LoopIteration, ...] = ()
    inputs: tuple[InputRecord, ...] = ()

    @property
    def op_name(self) -> str | None:
        """The op_name of what made it: the fused instruction's, else the instruction's."""
        for rec in (self.fused, self.instruction):
            if rec is not None and rec.op_name:
                return rec.op_name
        return None

    @property
    def source(self) -> str | None:
        """``file:line`` in the user's program, from the metadata (fused instruction first)."""
        for rec in (self.fused, self.instruction):
            if rec is not None and rec.source:
                return rec.source
        return None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "devices": list(self.devices),
                "instruction": None if self.instruction is None else self.instruction.to_json(),
                "fused": None if self.fused is None else self.fused.to_json(),
                "loops": [lp.to_json() for lp in self.loops],
                "op_name": self.op_name, "source": self.source,
                "inputs": [i.to_json() for i in self.inputs]}

    def describe(self) -> str:
        """The finding in a few lines of plain text."""
        lines = []
        on = (f" on device{'s' if len(self.devices) != 1 else ''} {_ranges(self.devices)}" if self.devices
              else " (a value of the global program)")
        if self.kind == "instruction" and self.instruction is not None:
            inst = self.instruction
            lines.append(f"first non-finite value: {inst.name} ({inst.opcode}) in computation "
                         f"{inst.computation}{on}")
            if self.loops:
                lines.append("  in " + ", ".join(f"iteration {lp.iteration} of {lp.loop}" for lp in self.loops))
            if self.fused is not None:
                lines.append(f"  made by {self.fused.name} ({self.fused.opcode}) inside the fusion: "
                             f"{self.fused.text}")
            else:
                lines.append(f"  {inst.text}")
            if self.op_name:
                lines.append(f"  op_name: {self.op_name}")
            if self.source:
                lines.append(f"  source: {self.source}")
            rec = self.fused or inst
            for label, s in rec.result:
                lines.append(f"  result{' ' + label if label else ''}: {s.describe()}")
            for label, s in rec.operands:
                lines.append(f"  operand {label}: {s.describe()}")
        elif self.kind == "constant" and self.inputs:
            c = self.inputs[0]
            lines.append(f"no instruction made a NaN or an infinity, but constant {c.name} holds one: "
                         f"{c.summary.describe()}")
        else:
            lines.append("no instruction made a NaN or an infinity: an input already held one")
        if self.kind != "constant":
            for rec in self.inputs:
                lines.append(f"  input parameter {rec.number} ({rec.name}) on device(s) {_ranges(rec.devices)}: "
                             f"{rec.summary.describe()}")
        return "\n".join(lines)


def _ranges(devices: Sequence[int]) -> str:
    """``0-3,6`` for devices 0, 1, 2, 3 and 6."""
    out: list[str] = []
    ds = sorted(devices)
    i = 0
    while i < len(ds):
        j = i
        while j + 1 < len(ds) and ds[j + 1] == ds[j] + 1:
            j += 1
        out.append(str(ds[i]) if i == j else f"{ds[i]}-{ds[j]}")
        i = j + 1
    return ",".join(out)


# --- the watch ---------------------------------------------------------------------------------


def _flags(value: Any, devices: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(has NaN, has NaN or infinity) per device over the arrays of ``value``; None: all finite."""
    found = None
    for leaf in leaves(value):
        f = nonfinite_per_device(leaf, devices if leaf.ndim > 0 else 1)
        if f is None:
            continue
        nan, inf = np.broadcast_to(f[0], (devices,)), np.broadcast_to(f[1], (devices,))
        found = (nan, nan | inf) if found is None else (found[0] | nan, found[1] | nan | inf)
    return found


@dataclasses.dataclass
class _Birth:
    position: int
    inst: Instruction
    loops: tuple[LoopIteration, ...]
    record: InstructionRecord
    fused: InstructionRecord | None
    operands: list[Any] | None = None  # the operands' values (keep_operands), of one device
    per_device: bool = True  # False: a global program's value (Note [Global programs] in spmd.py)


class NonfiniteWatch(Observer):
    """An observer that finds the first non-finite value (Note [Births]) and, with ``stop``,
    ends the run (``EvaluationStopped``) once it knows it (Note [Which devices]).

    Pass it in ``RunOptions(hooks=[watch])`` to any run; ``first()`` is then the answer
    (``find_nonfinite`` does this). ``computations`` limits the watch to those computations
    (the fused computation it evaluates again to find the instruction inside a fusion).
    """

    def __init__(self, module: Module, replicas: int = 1, partitions: int = 1, *, stop: bool = True,
                 computations: list[Computation] | None = None, keep_operands: bool = False) -> None:
        super().__init__(module, replicas * partitions, computations=computations)
        self.replicas, self.partitions = replicas, partitions
        self.stop = stop
        self.keep_operands = keep_operands  # keep each birth's operand values (reduce isolates it)
        # A sharded program not partitioned yet runs as one global program: its values are no
        # device's, except inside manual regions (Note [Global programs] in spmd.py).
        self.global_run = False
        self.births: dict[int, _Birth] = {}  # device -> its first birth
        self.constants: list[InputRecord] = []  # constants holding a NaN
        self._constants_seen: set[int] = set()

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        if inst.opcode is Opcode.CONSTANT:
            self._constant(site, inst, result)
            return
        flags = _flags(result, len(site.devices))
        if flags is not None:
            self._check(site, inst, operands, result, flags)
        if self.births and self.stop:
            self._maybe_stop()

    def _check(self, site: Site, inst: Instruction, operands: list[Any], result: Any,
               flags: tuple[np.ndarray, np.ndarray]) -> None:
        n = len(site.devices)
        nan, bad = flags
        op_nan = np.zeros(n, bool)
        op_bad = np.zeros(n, bool)
        for o in operands:
            f = _flags(o, n)
            if f is not None:
                op_nan |= f[0]
                op_bad |= f[1]
        born = (nan & ~op_nan) | (bad & ~op_bad)
        new = [k for k in np.flatnonzero(born) if site.devices[k] not in self.births]
        if not new:
            return
        k = new[0]
        ops = [device_values(o, site)[k] for o in operands]
        value = device_values(result, site)[k]
        record = _record(inst, ops, value)
        fused = None
        if inst.opcode is Opcode.FUSION:
            fused = self._inside(site, site.devices[k], inst, ops)
        kept = [np.array(o, copy=True) if isinstance(o, np.ndarray) else o for o in ops] if self.keep_operands else None
        per_device = not self.global_run or site.context.in_region
        for j in new:
            self.births[site.devices[j]] = _Birth(site.position, inst, site.loops, record, fused,
                                                  kept if j == k else None, per_device)

    def _inside(self, site: Site, device: int, fusion: Instruction, operands: list[Any]) -> InstructionRecord | None:
        """The instruction inside ``fusion`` that made the non-finite value: the fused
        computation evaluated again, on ``device``'s operands, under a watch of its own."""
        comp = fusion.called_computations[0]
        inner = NonfiniteWatch(self.module, stop=False, computations=[comp])
        outer = site.context
        options = dataclasses.replace(outer.options, hooks=[inner], progress=None)
        ctx = EvalContext(self.module, options, grid.process_id(device, outer.num_partitions),
                          outer.num_replicas, outer.num_partitions)
        try:
            run_to_completion(evaluate(ctx, comp, list(operands)), comp)
        except EvaluationStopped:
            pass
        found = inner.first()
        if found is None:
            return None
        return found.fused if found.fused is not None else found.instruction

    def _constant(self, site: Site, inst: Instruction, result: Any) -> None:
        if id(inst) in self._constants_seen:
            return
        self._constants_seen.add(id(inst))
        flags = _flags(result, len(site.devices))
        if flags is not None and flags[0].any():
            arrays = leaves(device_values(result, site)[0])
            self.constants.append(InputRecord(inst.name, None, site.devices, summarize(arrays[0])))

    def _maybe_stop(self) -> None:
        first = min(b.position for b in self.births.values())
        for d in range(self.num_devices):
            if d not in self.births and self.position(d) <= first:
                return
        raise EvaluationStopped("the first non-finite value is found")

    def position(self, device: int) -> int:
        """How many watched instructions ``device`` has evaluated (lockstep's included)."""
        return self._positions.get(-1, 0) + self._positions.get(device, 0)

    def first(self) -> FirstNonfinite | None:
        """The earliest birth, with every device whose first birth was the same (Note [Which
        devices]); None when no instruction made a NaN or an infinity."""
        if not self.births:
            return None
        device, birth = min(self.births.items(), key=lambda kv: (kv[1].position, kv[0]))
        same = tuple(sorted(d for d, b in self.births.items() if b.inst is birth.inst and b.loops == birth.loops))
        if not birth.per_device:
            same = ()  # the global program's value: every device's shard of it, or none
        return FirstNonfinite("instruction", same, birth.record, birth.fused, birth.loops)


def _labelled(prefix: str, value: Any) -> list[tuple[str, ValueSummary]]:
    arrays = leaves(value)
    if len(arrays) == 1 and not isinstance(value, tuple):
        return [(prefix, summarize(arrays[0]))]
    return [(f"{prefix}{{{i}}}", summarize(a)) for i, a in enumerate(arrays)]


def _record(inst: Instruction, operands: list[Any], result: Any) -> InstructionRecord:
    op_name, source = op_name_and_source(inst)
    try:
        text = inst.to_text(metadata=False)
    except Exception:  # printing must never hide the finding
        text = repr(inst)
    ops = [s for o, v in zip(inst.operands, operands, strict=True) for s in _labelled(o.name, v)]
    return InstructionRecord(inst.name, inst.opcode.text, inst.computation.name if inst.computation else "?",
                             text, op_name, source, tuple(_labelled("", result) if isinstance(result, tuple)
                                                          else [("", summarize(leaves(result)[0]))]),
                             tuple(ops))


# --- the entry point ---------------------------------------------------------------------------


def input_records(module: Module, inputs: Sequence[Any], num_devices: int) -> tuple[InputRecord, ...]:
    """Entry parameters that hold a NaN or an infinity (``inputs`` as ``hloscope.run`` takes
    them: one list for every device, or one list per device)."""
    params = module.entry.parameters
    per_device = num_devices > 1 and len(inputs) == num_devices and all(isinstance(x, list) for x in inputs)
    lists = list(inputs) if per_device else [list(inputs)]
    out = []
    for i, p in enumerate(params):
        bad_devices = []
        first = None
        for d, args in enumerate(lists):
            if i < len(args) and _flags(args[i], 1) is not None:
                bad_devices.append(d)
                if first is None:
                    first = next(a for a in leaves(args[i]) if _flags(a, 1) is not None)
        if first is not None:
            devices = tuple(bad_devices) if per_device else tuple(range(num_devices))
            out.append(InputRecord(p.name, p.parameter_number, devices, summarize(first)))
    return tuple(out)


def find_nonfinite(module: Module, inputs: Sequence[Any] = (), *, replicas: int | None = None,
                   partitions: int | None = None, options: RunOptions | None = None) -> FirstNonfinite | None:
    """Run ``module`` on ``inputs`` (as ``hloscope.run`` takes them) until the first NaN or
    infinity an instruction makes (Note [Births]); None when the run stays finite.

    The run stops as soon as the answer is known, so it costs at most one run with the watch
    (measured in benchmarks/numerics.py). ``options`` are the run's (executor, float
    environment, ...); its hooks are kept.
    """
    from hloscope.interpret.run import default_grid, is_global_run, run

    r0, p0 = default_grid(module)
    r = replicas or r0
    p = partitions or p0
    inputs_held = input_records(module, inputs, r * p)
    watch = NonfiniteWatch(module, r, p)
    watch.global_run = r * p > 1 and is_global_run(module, inputs, r * p)
    options = options or RunOptions()
    options = dataclasses.replace(options, hooks=[*options.hooks, watch])
    try:
        run(module, inputs, replicas=r, partitions=p, options=options)
    except EvaluationStopped:
        pass
    return conclude(watch, inputs_held)


def conclude(watch: NonfiniteWatch, inputs_held: tuple[InputRecord, ...]) -> FirstNonfinite | None:
    """The answer of a run ``watch`` observed, given what its inputs held."""
    first = watch.first()
    if first is not None:
        return dataclasses.replace(first, inputs=inputs_held)
    if inputs_held:
        devices = tuple(sorted({d for rec in inputs_held for d in rec.devices}))
        return FirstNonfinite("input", devices, inputs=inputs_held)
    if watch.constants:
        return FirstNonfinite("constant", watch.constants[0].devices, inputs=tuple(watch.constants))
    return None
