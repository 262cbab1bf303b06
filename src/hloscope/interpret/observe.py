"""Observers: hooks that watch the values a run makes, where they are made, on any executor.

An ``Observer`` is a hook (Note [Observers] in evaluator.py) that accepts lockstep's stacked
values, so a run it watches keeps its executor. It hands its subclass each instruction of the
computations that hold the program's values (Note [Watched computations]) together with where
the value was made: the devices (``Site.devices``) and the loop iterations it sits in
(Note [Loop iterations]). The numerics tools (hloscope.numerics: the first non-finite value,
value statistics, capturing values to compare) are observers; none of them changes a value.

Note [Watched computations]
    The program's values are made by the entry computation and what it calls as control
    flow: while bodies and conditions, conditional branches, call and async computations.
    Fused computations hold values XLA never writes to memory (the fusion's root is the one
    that exists); they are watched only on request. Applied computations (a reduce's or
    scatter's reducer, a sort's comparator, a map's function) are never watched: the
    interpreter evaluates them on whole arrays at once (Note [Vectorized computations] in
    reduction.py), so their "values" are the interpreter's, not the program's, and the
    instruction that applies them (the reduce) is the one observed.

Note [Loop iterations]
    Hooks see instructions, not the entering and leaving of computations, so the loop
    iterations are read off what is seen: a while loop's condition computation is evaluated
    once before every iteration, so each time its root is seen the loop has begun an
    iteration (the first one pushes the loop on the device's stack, later ones count up), and
    when the while instruction itself is seen the loop is over (popped). A stack is kept per
    device, plus one for lockstep's stacked values; when lockstep hands a loop whose
    condition differs between devices to the per-device path, each device's stack starts as
    a copy of the stacked one (that iteration's condition is evaluated once more there, so it
    counts one iteration too many on that path).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hloscope.interpret.evaluator import EvalContext
from hloscope.ir import Computation, Instruction, Module, Opcode

__all__ = ["LoopIteration", "Observer", "Site", "device_values", "fusion_callers", "watched_computations"]

# Opcodes whose called computations make program values (Note [Watched computations]).
_CONTROL = frozenset({Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL, Opcode.ASYNC_START})
_STACKED = -1  # the loop stack and position of lockstep's stacked values


def watched_computations(module: Module, *, fused: bool = False) -> list[Computation]:
    """The computations whose instructions make the program's values, callers first (Note
    [Watched computations]); with ``fused`` the fused computations too."""
    out: list[Computation] = []
    seen: set[int] = set()
    todo = [module.entry]
    while todo:
        comp = todo.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        out.append(comp)
        for inst in comp.instructions:
            if inst.opcode in _CONTROL or (fused and inst.opcode is Opcode.FUSION):
                todo.extend(c for c in inst.called_computations if id(c) not in seen)
    return out


def fusion_callers(module: Module) -> dict[Computation, Instruction]:
    """Each fused computation's fusion instruction (XLA gives every fusion its own)."""
    out: dict[Computation, Instruction] = {}
    for inst in module.instructions():
        if inst.opcode is Opcode.FUSION:
            for comp in inst.called_computations:
                out.setdefault(comp, inst)
    return out


@dataclasses.dataclass(frozen=True)
class LoopIteration:
    """One enclosing while loop and the iteration (from 0) a value was made in."""

    loop: str  # the while instruction's name
    iteration: int

    def to_json(self) -> dict[str, Any]:
        return {"while": self.loop, "iteration": self.iteration}


class Site:
    """Where a value was made: the devices whose values these are (all of them for lockstep's
    stacked values, ``stacked`` True), ``position``, the number of watched instructions the
    device had evaluated before (its order in time), the evaluation ``context`` (its options,
    device grid and caches), and ``loops``, the while loops around it with their iterations,
    outermost first: read it while observing (it is taken from the loop stack when first
    read, so a site kept for later must read it first)."""

    __slots__ = ("devices", "stacked", "position", "context", "_observer", "_key", "_loops")

    def __init__(self, devices: tuple[int, ...], stacked: bool, position: int, context: EvalContext,
                 observer: Observer, key: int) -> None:
        self.devices = devices
        self.stacked = stacked
        self.position = position
        self.context = context
        self._observer = observer
        self._key = key
        self._loops: tuple[LoopIteration, ...] | None = None

    @property
    def loops(self) -> tuple[LoopIteration, ...]:
        if self._loops is None:
            self._loops = self._observer.loops_of(self._key)
        return self._loops


def device_values(value: Any, site: Site) -> list[Any]:
    """One value per device of ``site.devices`` (views of a stacked value's device slices)."""
    if not site.stacked:
        return [value]
    return [_slice(value, d) for d in range(len(site.devices))]


def _slice(v: Any, d: int) -> Any:
    if isinstance(v, tuple):
        return tuple(_slice(e, d) for e in v)
    if isinstance(v, np.ndarray) and v.ndim > 0:
        return v[d]
    return v  # lockstep's 0-d values (tokens, async contexts) are shared, not stacked


class Observer:
    """Base of hooks that watch values (module docstring); subclasses define ``observe``.

    ``fused`` also watches the instructions inside fusions; ``computations`` names the
    watched computations instead. ``num_devices`` is the run's device count (replicas x
    partitions), which stacked values hold along their first axis.
    """

    sees_stacked = True  # Note [Observers] in evaluator.py

    def __init__(self, module: Module, num_devices: int = 1, *, fused: bool = False,
                 computations: list[Computation] | None = None) -> None:
        self.module = module
        self.num_devices = num_devices
        if computations is None:
            computations = watched_computations(module, fused=fused)
        self.watched = frozenset(id(c) for c in computations)
        self._loop_of: dict[int, Instruction] = {}  # condition root -> its while loop
        for comp in watched_computations(module):
            for inst in comp.instructions:
                if inst.opcode is Opcode.WHILE:
                    self._loop_of.setdefault(id(inst.attrs["condition"].root), inst)
        self._stacks: dict[int, list[list[Any]]] = {}
        self._positions: dict[int, int] = {}
        self._all = tuple(range(num_devices))

    # --- the hook ------------------------------------------------------------------------------
    def on_evaluated(self, ctx: EvalContext, inst: Instruction, operands: list[Any], result: Any) -> None:
        key = _STACKED if ctx.stacked else ctx.device
        loop = self._loop_of.get(id(inst))
        if loop is not None:
            self._begin_iteration(key, loop)
        elif inst.opcode is Opcode.WHILE:
            self._end_loop(key, inst)
        comp = inst.computation
        if comp is None or id(comp) not in self.watched:
            return
        position = self._positions.get(key, 0)
        self._positions[key] = position + 1
        if ctx.stacked:
            site = Site(self._all, True, position, ctx, self, key)
        else:
            site = Site((ctx.device,), False, position + self._positions.get(_STACKED, 0), ctx, self, key)
        self.observe(site, inst, operands, result)

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        """Called for each watched instruction after it ran (``operands`` and ``result`` are
        stacked when ``site.stacked``); raise ``EvaluationStopped`` to end the run."""
        raise NotImplementedError

    # --- loops (Note [Loop iterations]) ----------------------------------------------------------
    def _stack(self, key: int) -> list[list[Any]]:
        stack = self._stacks.get(key)
        if stack is None:
            stack = self._stacks[key] = [list(e) for e in self._stacks.get(_STACKED, [])] if key != _STACKED else []
        return stack

    def _begin_iteration(self, key: int, loop: Instruction) -> None:
        stack = self._stack(key)
        if stack and stack[-1][0] is loop:
            stack[-1][1] += 1
        else:
            stack.append([loop, 0])

    def _end_loop(self, key: int, loop: Instruction) -> None:
        stack = self._stack(key)
        if stack and stack[-1][0] is loop:
            stack.pop()
        if key == _STACKED:  # any per-device path inside the loop is over too
            for k in [k for k in self._stacks if k != _STACKED]:
                del self._stacks[k]

    def loops_of(self, key: int) -> tuple[LoopIteration, ...]:
        """The loops a device (``key``: its index, or -1 for lockstep's values) is in now."""
        stack = self._stacks.get(key)
        if not stack:
            return ()
        return tuple(LoopIteration(w.name, i) for w, i in stack)
