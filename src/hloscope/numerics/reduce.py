"""Reduce: the smallest module that still shows a problem, with the inputs that show it.

``reduce_module(module, inputs, prop)`` shrinks greedily while the *property* ``prop`` (a
function of a ``Candidate``: module, inputs, device grid) holds, as LLVM's bugpoint,
``mlir-reduce`` and C-Reduce do (Note [Reducing]). Properties: ``Nonfinite`` (an instruction
makes a NaN or an infinity), ``DiffersFromXla`` (hloscope's outputs differ from XLA:CPU's),
``DiffersFrom`` (its values differ from a reference module's namesakes: a module one edit away
from the reference, say) and ``Command`` (a shell command given the candidate's path exits 0).

Note [Reducing]
    Every step is a small IR pass of reduce_passes.py, tried and kept only when the property
    still holds and the module got smaller (instructions, then devices, then parameters):

    1. *Focus*: a property that knows where the problem is says so (the first non-finite
       value's instruction, the first value that differs), and the module is cut at that
       instruction with its operands made parameters (their values from a run of the
       candidate), or, inside a loop or call, that instruction isolated.
    2. *Cut*: the entry's root becomes an earlier instruction (bisection over the entry's
       order: the earliest cut where the property holds, if it holds at both ends). A while
       loop of the entry becomes one iteration, a call of its body on the state that
       iteration started from (the last iteration, the first, then inwards: at most 8).
    3. *Parameters*: instructions the root reads become parameters holding their values,
       which drops what computed them (all of the root's operands at once first, then one
       instruction at a time, nearest the root first).
    4. *Inline*: a fusion or call in the entry becomes its instructions, so 2 and 3 can reach
       inside it.
    5. *One device*: a module without collectives or device ids runs on one device, with
       the inputs of a device where the property holds.
    Steps repeat until none helps. The result verifies (``hloscope.verify``), and XLA's
    parser reads it when jax is installed; its inputs are written beside it as npz.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hloscope.errors import EvaluationStopped, InputError
from hloscope.interpret.evaluator import RunOptions
from hloscope.interpret.observe import Observer, Site, device_values
from hloscope.ir import Instruction, Module, Opcode
from hloscope.numerics.cut import isolate
from hloscope.numerics.reduce_passes import (
    apply_signature,
    cut_at,
    inline,
    loop_once,
    size_of,
    to_parameters,
    unused_parameters,
)

__all__ = ["Candidate", "Command", "DiffersFrom", "DiffersFromXla", "Nonfinite", "ReduceResult", "reduce_module",
           "write_candidate"]


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A module with the inputs and device grid it runs on (``inputs``: one list per device)."""

    module: Module
    inputs: tuple[tuple[Any, ...], ...]
    replicas: int = 1
    partitions: int = 1

    @property
    def devices(self) -> int:
        return self.replicas * self.partitions

    @property
    def size(self) -> tuple[int, int, int]:
        """What reduce makes smaller, most important first."""
        return size_of(self.module), self.devices, len(self.module.entry.parameters)

    def run_inputs(self) -> list[Any]:
        """The inputs as ``hloscope.run`` takes them."""
        if self.devices == 1:
            return list(self.inputs[0])
        return [list(x) for x in self.inputs]


def _per_device(inputs: Sequence[Any], n: int) -> tuple[tuple[Any, ...], ...]:
    per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    if per_device:
        return tuple(tuple(x) for x in inputs)
    return tuple(tuple(inputs) for _ in range(n))


def _run(cand: Candidate, hooks: Sequence[Any] = (), options: RunOptions | None = None) -> Any:
    from hloscope.interpret.run import run

    opts = options or RunOptions()
    opts = dataclasses.replace(opts, hooks=[*opts.hooks, *hooks])
    return run(cand.module, cand.run_inputs(), replicas=cand.replicas, partitions=cand.partitions, options=opts)


class _EntryValues(Observer):
    """The values of the entry's instructions, per device (what step 3 makes inputs of)."""

    def __init__(self, module: Module, n: int) -> None:
        super().__init__(module, n, computations=[module.entry])
        self.values: dict[str, dict[int, Any]] = {}

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        kept = self.values.setdefault(inst.name, {})
        for d, v in zip(site.devices, device_values(result, site)):
            kept[d] = v


def entry_values(cand: Candidate, options: RunOptions | None = None) -> dict[str, dict[int, Any]]:
    """Every entry instruction's value on every device, from one run of ``cand``."""
    watch = _EntryValues(cand.module, cand.devices)
    _run(cand, [watch], options)
    return watch.values


# --- properties ---------------------------------------------------------------------------------


class Nonfinite:
    """Holds when an instruction makes a NaN or an infinity (``find_nonfinite``; an input that
    already holds one does not count)."""

    name = "nonfinite"

    def __init__(self, options: RunOptions | None = None) -> None:
        self.options = options

    def _watch(self, cand: Candidate) -> Any:
        from hloscope.numerics.nonfinite import NonfiniteWatch

        watch = NonfiniteWatch(cand.module, cand.replicas, cand.partitions, keep_operands=True)
        try:
            _run(cand, [watch], self.options)
        except EvaluationStopped:
            pass
        return watch

    def __call__(self, cand: Candidate) -> bool:
        return self._watch(cand).first() is not None

    def focus(self, cand: Candidate) -> list[Candidate]:
        """Step 1: the birth's instruction alone, on its operands' values."""
        watch = self._watch(cand)
        first = watch.first()
        if first is None:
            return []
        device = first.devices[0]
        birth = watch.births[device]
        inst = birth.inst
        out = []
        if inst.computation is cand.module.entry and inst is not cand.module.entry.root:
            out.append(_cut_with_parameters(cand, inst, None))
        alone = inst is cand.module.entry.root and all(o.opcode is Opcode.PARAMETER for o in inst.operands)
        if birth.operands is not None and not alone:
            module = isolate(cand.module, inst.name)
            out.append(Candidate(module, (tuple(birth.operands),)))
        return [c for c in out if c is not None]


class DiffersFromXla:
    """Holds when hloscope's outputs differ from XLA:CPU's beyond the tolerance (run in a
    child process, ``hloscope.xla.worker``)."""

    name = "differs-from-xla"

    def __init__(self, tolerances: dict | None = None, options: RunOptions | None = None) -> None:
        self.tolerances = tolerances
        self.options = options

    def __call__(self, cand: Candidate) -> bool:
        from hloscope.errors import HloscopeError
        from hloscope.numerics.summary import leaves
        from hloscope.numerics.tolerances import difference, tolerance_for
        from hloscope.xla.worker import run_on_xla

        ours = _run(cand, options=self.options)
        try:
            theirs = run_on_xla(cand.module.to_text(), cand.run_inputs(), replicas=cand.replicas,
                                partitions=cand.partitions, per_device=cand.devices > 1).outputs
        except HloscopeError:
            return False  # XLA refuses the candidate: not the problem we are after
        for x, y in zip(leaves(ours if cand.devices == 1 else tuple(ours)),
                        leaves(theirs if cand.devices == 1 else tuple(theirs))):
            if difference(y, x, tolerance_for(x.dtype, overrides=self.tolerances))[2] > 1:
                return True
        return False


class _Reference(Observer):
    """Every value of a reference run by instruction name and device, each execution."""

    def __init__(self, module: Module, n: int) -> None:
        super().__init__(module, n, fused=True)
        self.values: dict[tuple[str, int], list[Any]] = {}
        self.opcodes: dict[str, Opcode] = {}

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        self.opcodes.setdefault(inst.name, inst.opcode)
        for d, v in zip(site.devices, device_values(result, site)):
            self.values.setdefault((inst.name, d), []).append(v)

    def matches(self, name: str, device: int, value: Any, tolerances: dict | None) -> bool | None:
        """Whether ``value`` is one of ``name``'s values (any execution) on ``device``; None
        when the reference has none of that name."""
        runs = self.values.get((name, device)) or self.values.get((name, 0))
        if not runs:
            return None
        written = self.opcodes.get(name) is Opcode.CONSTANT
        return any(_same(r, value, tolerances, written) for r in runs)


def _same(x: Any, y: Any, tolerances: dict | None, written: bool = False) -> bool:
    """Two values within the tolerance (Note [Comparing values]; ``written``: constants,
    compared with rtol alone)."""
    from hloscope.numerics.summary import leaves
    from hloscope.numerics.tolerances import difference, tolerance_for

    xs, ys = leaves(x), leaves(y)
    if len(xs) != len(ys):
        return False
    for a, b in zip(xs, ys):
        tol = tolerance_for(b.dtype, overrides=tolerances)
        if tol is not None and written:
            tol = {**tol, "atol": 0.0}
        if a.shape != b.shape or difference(a, b, tol)[2] > 1:
            return False
    return True


class _Differs(Observer):
    """Stops the run at the first value that is none of its namesake's in the reference."""

    def __init__(self, module: Module, n: int, ref: _Reference, tolerances: dict | None) -> None:
        super().__init__(module, n, fused=True)
        self.ref = ref
        self.tolerances = tolerances
        self.found: tuple[Instruction, int] | None = None

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        if self.ref.opcodes.get(inst.name) is not inst.opcode or inst.opcode in (Opcode.TUPLE, Opcode.PARAMETER):
            return
        for d, v in zip(site.devices, device_values(result, site)):
            if self.ref.matches(inst.name, d, v, self.tolerances) is False:
                self.found = (inst, d)
                raise EvaluationStopped("a value differs from the reference")


_ITERATION = re.compile(r"^(.+)\.iteration(\d+)$")


class DiffersFrom:
    """Holds when a value of the candidate is none of the values of the reference module's
    instruction of the same name and opcode, while every input the reduction made (a
    parameter standing for an instruction, or for a loop's state) holds one of the
    reference's values of what it stands for: the difference must be made inside the
    candidate, not brought in. A module one edit away from the reference keeps the names,
    and reduce keeps them too. The reference runs once, on ``inputs``."""

    name = "differs-from"

    def __init__(self, reference: Module, inputs: Sequence[Any], *, replicas: int | None = None,
                 partitions: int | None = None, tolerances: dict | None = None,
                 options: RunOptions | None = None) -> None:
        from hloscope.interpret.run import default_grid

        r0, p0 = default_grid(reference)
        r, p = replicas or r0, partitions or p0
        self.reference = reference
        self.ref = _Reference(reference, r * p)
        self.tolerances = tolerances
        self.options = options
        _run(Candidate(reference, _per_device(list(inputs), r * p), r, p), [self.ref], options)

    def _clean_inputs(self, cand: Candidate) -> bool:
        for p in cand.module.entry.parameters:
            names = self._stands_for(p.name)
            for d in range(cand.devices):
                value = cand.inputs[d][p.parameter_number]
                known = [self.ref.matches(n, d, value, self.tolerances) for n in names]
                if known and all(k is False for k in known):
                    return False
        return True

    def _stands_for(self, name: str) -> list[str]:
        """The reference instructions whose values a parameter made by reduce holds."""
        for suffix in (".in", ".param"):
            if name.endswith(suffix):
                return [name[: -len(suffix)]]
        m = _ITERATION.match(name)
        if m is not None:
            for comp in self.reference.computations:
                try:
                    loop = comp.instruction(m.group(1))
                except KeyError:
                    continue
                if loop.opcode is Opcode.WHILE:
                    return [loop.operands[0].name, loop.attrs["body"].root.name]
        return []

    def _differs(self, cand: Candidate) -> _Differs:
        watch = _Differs(cand.module, cand.devices, self.ref, self.tolerances)
        try:
            _run(cand, [watch], self.options)
        except EvaluationStopped:
            pass
        return watch

    def __call__(self, cand: Candidate) -> bool:
        return self._clean_inputs(cand) and self._differs(cand).found is not None

    def focus(self, cand: Candidate) -> list[Candidate]:
        found = self._differs(cand).found
        if found is None:
            return []
        inst = found[0]
        entry = cand.module.entry
        if inst.computation is entry:
            c = _cut_with_parameters(cand, inst, None)
            return [c] if c is not None else []
        for user in entry.instructions:  # the entry instruction holding it (a fusion or call)
            if user.opcode in (Opcode.FUSION, Opcode.CALL) and inst.computation in user.called_computations:
                c = _cut_with_parameters(cand, user, None)
                return [c] if c is not None else []
        return []


class Command:
    """Holds when ``command`` (a shell command line) exits 0; ``{}`` in it is the candidate's
    path (HLO text) and ``{inputs}`` its inputs' (npz, written beside it)."""

    name = "command"

    def __init__(self, command: str, timeout: float = 600.0) -> None:
        if "{}" not in command:
            raise InputError(f"the property command must hold {{}} for the candidate's path: {command!r}")
        self.command = command
        self.timeout = timeout
        self._dir = tempfile.TemporaryDirectory(prefix="hloscope-reduce-")  # removed with the property
        self.tmp = Path(self._dir.name)

    def __call__(self, cand: Candidate) -> bool:
        hlo = self.tmp / "candidate.hlo"
        npz = self.tmp / "candidate.npz"
        write_candidate(cand, hlo, npz)
        line = self.command.replace("{inputs}", shlex.quote(str(npz))).replace("{}", shlex.quote(str(hlo)))
        try:
            return subprocess.run(line, shell=True, timeout=self.timeout, capture_output=True).returncode == 0
        except subprocess.TimeoutExpired:
            return False


# --- the steps (Note [Reducing]) -------------------------------------------------------------------


def _cut_with_parameters(cand: Candidate, inst: Instruction, values: dict[str, dict[int, Any]] | None
                         ) -> Candidate | None:
    """``cand`` cut at entry instruction ``inst`` with its operands made parameters."""
    module = cut_at(cand.module, inst.name) if inst is not cand.module.entry.root else cand.module
    names = [o.name for o in module.entry.root.operands
             if o.opcode not in (Opcode.PARAMETER, Opcode.CONSTANT)]
    names = list(dict.fromkeys(names))
    if not names:
        return dataclasses.replace(cand, module=module) if module is not cand.module else None
    values = values if values is not None else entry_values(cand)
    return _with_parameters(dataclasses.replace(cand, module=module), names, values)


def _with_parameters(cand: Candidate, names: Sequence[str], values: dict[str, dict[int, Any]]) -> Candidate | None:
    if any(n not in values for n in names):
        return None
    module, sig = to_parameters(cand.module, names)
    inputs = tuple(tuple(apply_signature(cand.inputs[d], sig, [values[n][d] for n in names]))
                   for d in range(cand.devices))
    module, sig = unused_parameters(module)
    inputs = tuple(tuple(apply_signature(x, sig, ())) for x in inputs)
    return Candidate(module, inputs, cand.replicas, cand.partitions)


def _cuts(cand: Candidate, prop: Callable[[Candidate], bool], log: Callable[[str], None]) -> Candidate | None:
    """Step 2: the earliest cut of the entry where the property holds (bisection)."""
    entry = cand.module.entry
    order = [i for i in entry.instructions if i.opcode not in (Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE)
             and i is not entry.root]
    if not order:
        return None
    best = None
    lo, hi = 0, len(order) - 1
    tried = 0
    while lo <= hi and tried < 24:
        mid = (lo + hi) // 2
        c = dataclasses.replace(cand, module=cut_at(cand.module, order[mid].name))
        tried += 1
        if prop(c):
            best, hi = c, mid - 1
        else:
            lo = mid + 1
    if best is not None:
        log(f"cut at {best.module.entry.root.name}: {size_of(best.module)} instructions")
    return best


def _parameters(cand: Candidate, prop: Callable[[Candidate], bool], log: Callable[[str], None]) -> Candidate | None:
    """Step 3: instructions the root reads become parameters."""
    entry = cand.module.entry
    root = entry.root
    fed = [o for o in dict.fromkeys(root.operands) if o.opcode not in (Opcode.PARAMETER, Opcode.CONSTANT)
           and o.operands]
    values: dict[str, dict[int, Any]] | None = None
    if fed:
        values = entry_values(cand)
        c = _with_parameters(cand, [o.name for o in fed], values)
        if c is not None and c.size < cand.size and prop(c):
            log(f"operands of {root.name} made parameters: {size_of(c.module)} instructions")
            return c
    # Nearest the root first: the instructions whose ancestors are the most to drop.
    for inst in reversed(entry.instructions):
        if inst is root or inst.opcode in (Opcode.PARAMETER, Opcode.CONSTANT) or not any(
                o.opcode is not Opcode.PARAMETER for o in inst.operands):
            continue
        if values is None:
            values = entry_values(cand)
        c = _with_parameters(cand, [inst.name], values)
        if c is not None and c.size < cand.size and prop(c):
            log(f"{inst.name} made a parameter: {size_of(c.module)} instructions")
            return c
    return None


def _inlines(cand: Candidate, prop: Callable[[Candidate], bool], log: Callable[[str], None]) -> Candidate | None:
    """Step 4: a fusion or call of the entry becomes its instructions."""
    for inst in reversed(cand.module.entry.instructions):
        if inst.opcode in (Opcode.FUSION, Opcode.CALL) and len(inst.called_computations) == 1:
            c = dataclasses.replace(cand, module=inline(cand.module, inst.name))
            if c.size <= cand.size and prop(c):
                log(f"{inst.name} inlined: {size_of(c.module)} instructions")
                return c
    return None


class _LoopStates(Observer):
    """The state each iteration of the entry's while loops starts from (one device's copies),
    within a byte budget."""

    def __init__(self, module: Module, n: int, budget: int = 1 << 30) -> None:
        loops = [i for i in module.entry.instructions if i.opcode is Opcode.WHILE]
        super().__init__(module, n, computations=[module.entry] + [w.attrs["body"] for w in loops])
        self.of_body = {id(w.attrs["body"].root): w.name for w in loops}
        self.states: dict[str, list[tuple[Any, ...]]] = {}
        self.budget = budget

    def _keep(self, name: str, value: Any, site: Site) -> None:
        per = tuple(_copy(v) for v in device_values(value, site))
        size = sum(a.nbytes for v in per for a in _arrays(v))
        if size <= self.budget:
            self.budget -= size
            self.states.setdefault(name, []).append(per)

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        if inst.opcode is Opcode.WHILE and inst.computation is self.module.entry:
            self.states.setdefault(inst.name, [])
            self._keep(inst.name + "#init", operands[0], site)
        name = self.of_body.get(id(inst))
        if name is not None:
            self._keep(name, result, site)


def _arrays(v: Any) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [a for e in v for a in _arrays(e)]
    return [v] if isinstance(v, np.ndarray) else []


def _copy(v: Any) -> Any:
    if isinstance(v, tuple):
        return tuple(_copy(e) for e in v)
    return np.array(v, copy=True) if isinstance(v, np.ndarray) else v


def _iterations_to_try(count: int, most: int = 8) -> list[int]:
    """The last iteration, the first, then inwards from both ends: at most ``most``."""
    order: list[int] = []
    lo, hi = 0, count - 1
    while lo <= hi and len(order) < most:
        order.append(hi)
        if lo != hi and len(order) < most:
            order.append(lo)
        lo, hi = lo + 1, hi - 1
    return order


def _loops(cand: Candidate, prop: Callable[[Candidate], bool], log: Callable[[str], None]) -> Candidate | None:
    """Step 2b: an entry while loop becomes one iteration (a call of its body) on the state
    that iteration started from: the last iteration, the first, then inwards (at most 8)."""
    loops = [i for i in cand.module.entry.instructions if i.opcode is Opcode.WHILE]
    if not loops:
        return None
    watch = _LoopStates(cand.module, cand.devices)
    _run(cand, [watch])
    for w in reversed(loops):
        after = watch.states.get(w.name, [])
        init = watch.states.get(w.name + "#init", [])
        starts = init[:1] + after[:-1]  # the state each iteration started from
        if not starts:
            continue
        for k in _iterations_to_try(len(starts)):
            module, sig = loop_once(cand.module, w.name, k)
            per = starts[k]
            inputs = tuple(tuple(apply_signature(cand.inputs[d], sig, [per[d if len(per) > 1 else 0]]))
                           for d in range(cand.devices))
            c = Candidate(module, inputs, cand.replicas, cand.partitions)
            m2, sig2 = unused_parameters(c.module)
            c = Candidate(m2, tuple(tuple(apply_signature(x, sig2, ())) for x in c.inputs), c.replicas, c.partitions)
            if c.size < cand.size and prop(c):
                log(f"{w.name} as its iteration {k} alone: {size_of(c.module)} instructions")
                return c
    return None


_DEVICE_OPS = frozenset({Opcode.REPLICA_ID, Opcode.PARTITION_ID})


def _one_device(cand: Candidate, prop: Callable[[Candidate], bool], log: Callable[[str], None]) -> Candidate | None:
    """Step 5: no collective and no device id left: one device, with the inputs of a device
    where the property holds."""
    if cand.devices == 1 or any(i.opcode.family is Opcode.ALL_REDUCE.family or i.opcode in _DEVICE_OPS
                                for i in cand.module.instructions()):
        return None
    module = cand.module
    for attr in ("replica_count", "num_partitions"):
        module.attrs.pop(attr, None)
    for d in range(cand.devices):
        c = Candidate(module, (cand.inputs[d],))
        if prop(c):
            log(f"one device (device {d}'s inputs)")
            return c
    return None


# --- the driver ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ReduceResult:
    """The reduced module and its inputs (one list per device), the steps taken, the tests
    run and their time, and the checks of the result (hloscope's verifier, XLA's parser)."""

    candidate: Candidate
    original_size: int
    steps: tuple[str, ...]
    tests: int
    seconds: float
    verified: bool
    xla_parses: bool | None  # None: jax is not installed

    @property
    def module(self) -> Module:
        return self.candidate.module

    @property
    def size(self) -> int:
        return size_of(self.candidate.module)

    def to_json(self) -> dict[str, Any]:
        return {"original_instructions": self.original_size, "instructions": self.size,
                "devices": self.candidate.devices, "parameters": len(self.module.entry.parameters),
                "steps": list(self.steps), "tests": self.tests, "seconds": round(self.seconds, 3),
                "verified": self.verified, "xla_parses": self.xla_parses}


def reduce_module(module: Module, inputs: Sequence[Any], prop: Callable[[Candidate], bool], *,
                  replicas: int | None = None, partitions: int | None = None,
                  log: Callable[[str], None] | None = None, max_steps: int = 200,
                  check_xla: bool = True) -> ReduceResult:
    """Shrink ``module`` (run on ``inputs``, as ``hloscope.run`` takes them) while ``prop``
    holds (Note [Reducing]). Raises InputError when it does not hold to begin with."""
    from hloscope.interpret.run import default_grid

    started = time.perf_counter()
    note = log or (lambda line: None)
    r0, p0 = default_grid(module)
    r, p = replicas or r0, partitions or p0
    tests = 0

    def test(c: Candidate) -> bool:
        nonlocal tests
        tests += 1
        try:
            return bool(prop(c))
        except EvaluationStopped:
            return False
        except Exception as e:  # a candidate the interpreter cannot run does not show the problem
            note(f"  (a candidate failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
            return False

    cand = Candidate(module, _per_device(list(inputs), r * p), r, p)
    if not test(cand):
        raise InputError(f"the property ({getattr(prop, 'name', 'the command')}) does not hold for "
                         f"{module.name} as given: nothing to reduce")
    original = size_of(module)
    steps: list[str] = []

    def step_log(line: str) -> None:
        steps.append(line)
        note(line)

    for _ in range(max_steps):
        found = None
        focus = getattr(prop, "focus", None)
        if focus is not None:
            for c in focus(cand):
                if c.size < cand.size and test(c):
                    found = c
                    step_log(f"focused on {c.module.entry.root.name}: {size_of(c.module)} instructions")
                    break
        for step in (_cuts, _parameters, _loops, _inlines, _one_device):
            if found is not None:
                break
            found = step(cand, test, step_log)
        if found is None or not found.size < cand.size:
            break
        cand = found
    verified = not [d for d in _verify(cand.module) if d.severity == "error"]
    xla = _xla_parses(cand.module.to_text()) if check_xla else None
    return ReduceResult(cand, original, tuple(steps), tests, time.perf_counter() - started, verified, xla)


def _verify(module: Module) -> list[Any]:
    from hloscope.ir.verifier import verify

    return verify(module)


def _xla_parses(text: str) -> bool | None:
    """Whether XLA's parser reads ``text`` (a child process); None without jax."""
    code = ("import sys\nfrom hloscope.xla import client\n"
            "if not client.available(): sys.exit(3)\n"
            "client.parse_hlo_text(open(sys.argv[1]).read())\n")
    with tempfile.TemporaryDirectory(prefix="hloscope-reduce-") as d:
        path = Path(d) / "reduced.hlo"
        path.write_text(text)
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        try:
            proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, timeout=300, env=env)
        except subprocess.TimeoutExpired:
            return False
    if proc.returncode == 3:
        return None
    return proc.returncode == 0


def write_candidate(cand: Candidate, hlo: str | os.PathLike[str], npz: str | os.PathLike[str]) -> None:
    """Write the candidate's module (HLO text) and its inputs (npz: arg0, arg1, ... or per
    device d<k>.arg0 ...; what ``hloscope run --inputs`` reads)."""
    from hloscope.fileio import atomic_write_text
    from hloscope.interpret.npz_io import flatten_named, save_npz

    atomic_write_text(hlo, cand.module.to_text())
    mapping: dict[str, np.ndarray] = {}
    for d, args in enumerate(cand.inputs):
        prefix = f"d{d}." if cand.devices > 1 else ""
        for i, a in enumerate(args):
            mapping.update(flatten_named(f"{prefix}arg{i}", a))
        if cand.devices == 1:
            break
    save_npz(npz, mapping)
