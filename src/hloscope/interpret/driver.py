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

Note [Members on other workers]
    A driver may hold only some of the grid's devices (a slice run by one Ray worker,
    ray_worker.py). A group whose members all live here completes as above. One with members
    elsewhere waits until every local member is pending at the same collective, then goes to
    an ``Exchange``: ``submit`` hands over the local members' contributions (with the
    ``Rendezvous`` and so its ``combine``, which the worker leading the group calls on every
    member's contribution in rank order), and ``wait`` blocks until some submitted groups
    come back with their members' shares (or an error). The driver only waits when no local
    device can run, so a worker never sits on work another one needs. The combine is the same
    pure function the local drivers call, so results are bit-identical wherever a device is.

This is the per-device executor; ``lockstep.py`` is the other, which holds every device's
value along a leading axis (Note [Lockstep]).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

from hloscope.errors import InterpretError
from hloscope.interpret.values import Value
from hloscope.ir import Instruction

__all__ = ["Exchange", "Rendezvous", "drive", "wire_key"]


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


def wire_key(inst: Instruction) -> tuple[str, ...]:
    """``_rendezvous_key`` as plain strings, the same in every process that parsed the module
    (instruction names are unique in a module): what workers name a rendezvous by."""
    channel = inst.attrs.get("channel_id")
    return ("instruction", inst.name) if channel is None else ("channel", inst.opcode.text, str(channel))


# What an exchange hands back: a submitted group's local members and, for each, its share, or
# the error to raise in the first of them.
Completion = tuple[list[int], "dict[int, Value] | BaseException"]


class Exchange(Protocol):
    """Completes rendezvous whose groups have members on other workers (Note [Members on
    other workers])."""

    def submit(self, request: Rendezvous, group: list[int], values: dict[int, Value]) -> None:
        """Hand over ``values``, the contributions of ``group``'s members on this worker, all
        waiting at ``request``'s collective."""
        ...

    def wait(self, waiting: dict[int, str]) -> list[Completion]:
        """Block until some submitted groups complete; ``waiting`` says where each local
        device waits (the instruction's name), for a deadlock's message."""
        ...


def drive(gens: list[Generator[Any, Any, Value]], devices: Sequence[int] | None = None,
          exchange: Exchange | None = None) -> list[Value]:
    """Run device generators to completion, completing their rendezvous (Note [Cooperative
    devices]); their results in order. ``gens[i]`` is device ``devices[i]`` (default: device
    ``i``); groups with members not among ``devices`` go through ``exchange`` (Note [Members
    on other workers])."""
    ids = list(range(len(gens))) if devices is None else list(devices)
    return _drive(dict(zip(ids, gens, strict=True)), exchange)


def _drive(gens: dict[int, Generator[Any, Any, Value]], exchange: Exchange | None) -> list[Value]:
    results: dict[int, Value] = {}
    finished: set[int] = set()
    pending: dict[int, Rendezvous] = {}
    submitted: dict[int, Rendezvous] = {}  # handed to the exchange, waiting for their shares
    # device -> ("send", value) or ("throw", exception) for the next resume
    resume: dict[int, tuple[str, Any]] = {d: ("send", None) for d in gens}
    while resume or submitted:
        for d in sorted(resume):
            how, arg = resume[d]
            try:
                req = gens[d].send(arg) if how == "send" else gens[d].throw(arg)
            except StopIteration as stop:
                results[d] = stop.value
                finished.add(d)
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
            here = [m for m in group if m in gens]
            if not all(m in pending and _rendezvous_key(pending[m].inst) == key for m in here):
                continue
            if len(here) < len(group):
                if exchange is None:
                    raise InterpretError(f"{req.inst.name}: devices {[m for m in group if m not in gens]} of "
                                         f"group {group} are not run here and no exchange reaches them")
                exchange.submit(req, group, {m: pending[m].value for m in here})
                for m in here:
                    submitted[m] = pending.pop(m)
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
        if not resume and submitted:
            assert exchange is not None
            waiting = {d: r.inst.name for d, r in (*pending.items(), *submitted.items())}
            for members, outcome in exchange.wait(waiting):
                for m in members:
                    del submitted[m]
                if isinstance(outcome, BaseException):
                    resume[members[0]] = ("throw", outcome)
                else:
                    for m in members:
                        resume[m] = ("send", outcome[m])
            continue
        if not resume and pending:
            where = ", ".join(f"device {d} at {r.inst.name}" for d, r in sorted(pending.items()))
            done = sorted(finished)
            first = min(pending)
            message = (f"collective deadlock: {where}" + (f"; devices {done} finished" if done else "")
                       + " (the devices disagree on the next collective, or a group member never "
                       "reaches it)")
            del pending[first]
            for d in list(pending):  # abandon the others; report through the first device
                gens[d].close()
            pending.clear()
            resume[first] = ("throw", InterpretError(message))
    return [results[d] for d in gens]
