"""The driver of devices run one after another: each device a generator, collectives a rendezvous.

Note [Cooperative devices]
    Each device is one generator: ``evaluate`` of the entry computation with that device's
    ``EvalContext``. A collective handler yields a ``Rendezvous`` (the instruction, its
    participant groups, this device's contribution, and how to combine a group's
    contributions). The driver runs every device until it finishes or yields, then completes
    each group whose members all wait at the same instruction: it calls the pure function of
    collectives.py with the contributions ordered by device index (= (replica, partition)
    order) and sends each member its share. There are no threads, so a run is deterministic.
    A module without collectives never yields, so it pays nothing for this. If no group can
    complete while devices wait, the devices disagree on which collective comes next: that is
    reported as a deadlock naming where each device waits.

This is the per-device executor; ``lockstep.py`` is the other, which holds every device's
value along a leading axis (Note [Lockstep]).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Sequence
from typing import Any

from hloscope.errors import InterpretError
from hloscope.interpret.values import Value
from hloscope.ir import Instruction

__all__ = ["Rendezvous", "drive"]


@dataclasses.dataclass(slots=True)
class Rendezvous:
    """What a device yields at a collective (Note [Cooperative devices]).

    ``groups`` are device indices in rank order; ``combine(values, group)`` takes the group's
    contributions in rank order and returns each member's result in the same order."""

    inst: Instruction
    groups: list[list[int]]
    value: Value
    combine: Callable[[list[Value], list[int]], Sequence[Value]]

    def __repr__(self) -> str:
        return f"<rendezvous at {self.inst.name}>"


def _group_index(groups: list[list[int]]) -> dict[int, list[int]]:
    return {d: g for g in groups for d in g}


def _rendezvous_key(inst: Instruction) -> Any:
    """Which collectives meet: as on XLA:CPU, those of one kind with one ``channel_id``, even
    when they are different instructions. Devices that take different branches of a
    conditional (``cond`` on ``axis_index``) reach the branches' own all-reduces, which jax
    gives the same channel, and XLA reduces across them. Without a channel_id, the
    instruction itself."""
    channel = inst.attrs.get("channel_id")
    return inst if channel is None else (inst.opcode, channel)


def drive(gens: list[Generator[Any, Any, Value]]) -> list[Value]:
    """Run device generators to completion, completing their rendezvous (Note [Cooperative
    devices]); their results in device order."""
    return _drive(gens)


def _drive(gens: list[Generator[Any, Any, Value]]) -> list[Value]:
    n = len(gens)
    results: dict[int, Value] = {}
    finished = [False] * n
    pending: dict[int, Rendezvous] = {}
    # device -> ("send", value) or ("throw", exception) for the next resume
    resume: dict[int, tuple[str, Any]] = {d: ("send", None) for d in range(n)}
    while resume:
        for d in sorted(resume):
            how, arg = resume[d]
            try:
                req = gens[d].send(arg) if how == "send" else gens[d].throw(arg)
            except StopIteration as stop:
                results[d], finished[d] = stop.value, True
                continue
            if not isinstance(req, Rendezvous):
                raise InterpretError(f"device {d} yielded {req!r}, expected a collective rendezvous")
            pending[d] = req
        resume = {}
        for d in sorted(pending):
            if d not in pending:
                continue
            req = pending[d]
            group = _group_index(req.groups).get(d)
            if group is None:
                resume[d] = ("throw", InterpretError(f"device {d} is in no group of {req.groups}"))
                del pending[d]
                continue
            key = _rendezvous_key(req.inst)
            if not all(m in pending and _rendezvous_key(pending[m].inst) == key for m in group):
                continue
            try:
                outs = req.combine([pending[m].value for m in group], group)
            except Exception as e:  # thrown into the first member, so the error names the instruction
                resume[group[0]] = ("throw", e)
                for m in group:
                    del pending[m]
                continue
            for m, out in zip(group, outs, strict=True):
                resume[m] = ("send", out)
                del pending[m]
        if not resume and pending:
            where = ", ".join(f"device {d} at {r.inst.name}" for d, r in sorted(pending.items()))
            done = [d for d in range(n) if finished[d]]
            first = min(pending)
            message = (f"collective deadlock: {where}" + (f"; devices {done} finished" if done else "")
                       + " (the devices disagree on the next collective, or a group member never "
                       "reaches it)")
            del pending[first]
            for d in list(pending):  # abandon the others; report through the first device
                gens[d].close()
            pending.clear()
            resume[first] = ("throw", InterpretError(message))
    return [results[d] for d in range(n)]
