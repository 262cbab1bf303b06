"""Devices behind one seam: where each device's arrays live and how collectives exchange them.

Note [Executors]
    The op semantics (handlers, the pure functions of elementwise.py, collectives.py, ...) know
    nothing of where a device's values are. An ``Executor`` owns that: it holds each device's
    arguments and intermediate values, evaluates the entry computation for every device, and
    completes each collective rendezvous (``driver.Rendezvous``: the instruction, its groups,
    one contribution per member and the pure ``combine`` of the group) by bringing the
    members' contributions together and handing each member its share.

    Two executors live in this process. ``PerDeviceExecutor`` runs one generator per device and
    exchanges contributions in memory (driver.py, Note [Cooperative devices]); it runs every
    module and observes any hook. ``LockstepExecutor`` holds all devices' values stacked along a
    leading axis and runs each instruction once for all of them (lockstep.py, Note
    [Lockstep]); it applies to modules whose ops all have stacked rules, and to runs whose
    hooks accept stacked values (Note [Observers] in evaluator.py). Both also run a *slice* of
    the grid (``run_slice``): the devices one worker holds, with an ``Exchange`` reaching the
    others' (Note [Members on other workers] in driver.py). ``RayExecutor`` (ray_executor.py,
    imported only when chosen) implements the same two methods by placing slices on Ray actors
    that run them with these two; nothing in the op semantics changes. ``choose_executor``
    picks one for a run (``RunOptions.mode``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hloscope.errors import InputError
from hloscope.interpret import lockstep
from hloscope.interpret.driver import Exchange, drive
from hloscope.interpret.evaluator import EvalContext, RunOptions, evaluate
from hloscope.interpret.values import Value
from hloscope.ir import Module
from hloscope.ir import replica_groups as devices

__all__ = ["Executor", "PerDeviceExecutor", "LockstepExecutor", "choose_executor", "choose_local_executor"]


class Executor(Protocol):
    """Runs a module on a grid of devices (Note [Executors])."""

    name: str

    def applies(self, module: Module, options: RunOptions) -> bool:
        """Whether this executor can run ``module`` with ``options``."""
        ...

    def run(self, module: Module, args: list[list[Value]], replicas: int, partitions: int,
            options: RunOptions, *, donate: bool = False) -> list[Value]:
        """Each device's root value, device index = replica * partitions + partition. ``args``
        holds one argument list per device; with ``donate`` they may be consumed."""
        ...


class PerDeviceExecutor:
    """One generator per device, collectives exchanged in memory (driver.py)."""

    name = "per-device"

    def applies(self, module: Module, options: RunOptions) -> bool:
        return True

    def run(self, module: Module, args: list[list[Value]], replicas: int, partitions: int,
            options: RunOptions, *, donate: bool = False) -> list[Value]:
        return self.run_slice(module, args, replicas, partitions, options, range(replicas * partitions),
                              None, donate=donate)

    def run_slice(self, module: Module, args: list[list[Value]], replicas: int, partitions: int,
                  options: RunOptions, held: Sequence[int], exchange: Exchange | None, *,
                  donate: bool = False) -> list[Value]:
        """The devices ``held`` (``args[k]`` is the k-th one's inputs), meeting devices held
        elsewhere through ``exchange``; their root values in order."""
        shared: dict[str, Any] = {}
        gens = [evaluate(EvalContext(module, options, devices.process_id(d, partitions), replicas, partitions,
                                     shared=shared), module.entry, args[k], donate=donate)
                for k, d in enumerate(held)]
        args.clear()  # the generators hold each device's list now (Note [Donation])
        return drive(gens, held, exchange)


class LockstepExecutor:
    """All devices at once, values stacked along a leading device axis (lockstep.py)."""

    name = "lockstep"

    def applies(self, module: Module, options: RunOptions) -> bool:
        return _hooks_see_stacked(options) and lockstep.applies(module)

    def run(self, module: Module, args: list[list[Value]], replicas: int, partitions: int,
            options: RunOptions, *, donate: bool = False) -> list[Value]:
        return lockstep.run_lockstep(module, args, replicas, partitions, options)

    def run_slice(self, module: Module, args: list[list[Value]], replicas: int, partitions: int,
                  options: RunOptions, held: Sequence[int], exchange: Exchange | None, *,
                  donate: bool = False) -> list[Value]:
        """A consecutive slice of the grid in lockstep (Note [Lockstep slices] in lockstep_collectives.py)."""
        return lockstep.run_lockstep(module, args, replicas, partitions, options, held, exchange)


def _hooks_see_stacked(options: RunOptions) -> bool:
    """Whether every hook of the run accepts lockstep's stacked values (Note [Observers])."""
    return all(getattr(h, "sees_stacked", False) for h in options.hooks)


PER_DEVICE = PerDeviceExecutor()
LOCKSTEP = LockstepExecutor()


def choose_executor(module: Module, options: RunOptions, num_devices: int) -> Executor:
    """The executor of a run: ``options.mode`` "per-device" or "lockstep" (an error when it
    cannot run the module), or "auto": lockstep for several devices where it applies."""
    return choose_local_executor(module, options, num_devices)


def choose_local_executor(module: Module, options: RunOptions,
                          num_devices: int) -> PerDeviceExecutor | LockstepExecutor:
    """``choose_executor`` among the executors of this process (what a worker runs its slice
    of ``num_devices`` devices with)."""
    if options.mode == "per-device" or num_devices == 1:
        return PER_DEVICE
    if options.mode == "lockstep":
        if not _hooks_see_stacked(options):
            raise InputError("mode='lockstep' cannot run with these hooks: they see per-device values "
                             "(Note [Observers] in evaluator.py: a hook with sees_stacked=True can)")
        if not lockstep.applies(module):
            raise InputError("mode='lockstep' does not apply: the module calls an op with no lockstep rule")
        return LOCKSTEP
    return LOCKSTEP if LOCKSTEP.applies(module, options) else PER_DEVICE
