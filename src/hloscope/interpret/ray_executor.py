"""The Ray executor: a device grid spread over Ray actors, each running a slice of it.

Imported only when a run chooses it (``executor="ray"``, ``--executor ray``); ``import ray`` is
here and in ray_worker.py, nowhere else (``pip install 'hloscope[ray]'``).

Note [Ray executor]
    One process holds every device's values in a local run, which is what stops a 64-way step
    of a real model. Here the grid is cut into consecutive slices of ``devices_per_worker``
    devices; each slice is one Ray actor (ray_worker.Worker) that runs it with the local
    executors (lockstep where it applies, Note [Lockstep slices] in lockstep_collectives.py), and the
    workers meet at collectives through one coordinator actor (Note [The exchange board] in
    exchange.py), with the same pure combine a local run calls.

    * The cluster: without an address a local Ray instance is started for the run and shut
      down after it; ``"auto"`` or ``host:port`` joins a running cluster (``ray start``), which
      stays up. A process already connected to Ray (``ray.init`` called) is used as it is.
    * What travels: the module's text once (``ray.put``; each worker parses it); each
      parameter every device shares once (workers on one node read the same copy of shared
      memory); each device's own inputs only to its worker; random inputs (``RandomInputs``)
      not at all: workers draw their devices' arrays. Each worker sends back its devices'
      outputs.
    * The memory guard, per worker: a worker needs its devices x the memory analysis's
      per-device peak. Before any actor starts, a worker that needs more than the largest
      node offers (Ray's ``memory`` resource) is refused; each worker asks Ray for its need
      as a resource, so Ray places workers where it fits; once started, the workers say what
      their node has available (``MemAvailable``), and a node whose workers need more than
      that is refused before the module or any input is sent. Every refusal gives the figures.
    * Faults (Note [Where a worker is] in ray_worker.py): the client waits on every worker at
      once, so one that dies (killed, out of memory) ends the run at once, with its devices,
      its node and the instruction it was last seen at; an hloscope error in a worker ends it
      with that error; Ctrl-C kills the actors. An address that cannot be reached is one line.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import ray
import ray.exceptions

from hloscope import errors
from hloscope.errors import InputError, InterpretError
from hloscope.interpret import float_env
from hloscope.interpret.evaluator import Progress, RunOptions
from hloscope.interpret.inputs import RandomInputs
from hloscope.interpret.ray_worker import (
    Coordinator,
    Job,
    Worker,
    WorkerFailure,
    WorkerResult,
    client_blas_threads,
)
from hloscope.interpret.values import Value
from hloscope.ir import Module

__all__ = ["RayExecutor", "ClusterError", "WorkerDiedError", "WorkerMemoryError", "RunStats", "connected",
           "plan_slices"]


class ClusterError(InputError):
    """The Ray cluster cannot be reached, or cannot place the workers."""


class WorkerDiedError(InterpretError):
    """A Ray worker's process died during a run (killed, out of memory)."""


class WorkerMemoryError(InputError):
    """A worker's predicted peak exceeds what its node offers (Note [Ray executor])."""


_QUIET = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds, in one line, where ``ray.init`` would wait long on an address nobody
    answers at."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"cannot reach a Ray cluster at {address!r}: give 'auto' or host:port (the "
                           "address `ray start --head` printed)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise ClusterError(f"cannot reach a Ray cluster at {address}: {e.strerror or e}") from None


class _Held:
    """What Ray's native code wrote to the stderr file descriptor while it was held."""

    def __init__(self) -> None:
        self.text = b""

    def replay(self) -> None:
        if self.text:
            os.write(2, self.text)


@contextlib.contextmanager
def _native_stderr_held() -> Iterator[_Held]:
    """Hold what is written to file descriptor 2 in the body: Ray's C++ client logs a warning
    a second while it retries an address that answers but is no Ray cluster, and the user
    should see one line saying so, not twenty (``replay`` passes it on after a success)."""
    held = _Held()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to hold
        yield held
        return
    import tempfile

    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield held
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            held.text = sink.read()


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[bool]:
    """Ray, connected for the body: a new local instance when ``address`` is None (shut down
    after), the cluster at ``address`` ("auto": the one running on this machine), or the
    connection this process already has. Yields whether this call started it."""
    if ray.is_initialized():
        yield False
        return
    if address not in (None, "auto", "local") and not address.startswith("ray://"):
        _check_reachable(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage-stats banner
    if address is None:
        # Ray starts workers at nice 15 to keep its own daemons responsive; on a busy machine
        # that made the same module analyses 5-7x slower in Ray tasks than in local processes
        # (measured with a load of 35 on 2 cores). The workers are the computation here.
        os.environ.setdefault("RAY_worker_niceness", "0")
    try:
        with _native_stderr_held() as held:
            ray.init(address="local" if address is None else address, **_QUIET)  # type: ignore[arg-type]
        held.replay()
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        where = "a local Ray instance could not start" if address is None else f"cannot reach a Ray cluster at {address}"
        if address not in (None, "auto", "local") and "RAY_AUTH_MODE" not in os.environ:
            # Ray finds a token by itself only for "auto"; `ray start` enables token
            # authentication by default (Ray 2.5x), and a client naming the address needs it too.
            first += " (if the cluster uses token authentication, set RAY_AUTH_MODE=token with its token here)"
        raise ClusterError(f"{where}: {first}") from None
    try:
        yield address is None
    finally:
        ray.shutdown()


def plan_slices(num_devices: int, devices_per_worker: int) -> list[range]:
    """Consecutive slices of the grid, ``devices_per_worker`` each (the last one may hold fewer)."""
    k = max(1, devices_per_worker)
    return [range(lo, min(lo + k, num_devices)) for lo in range(0, num_devices, k)]


def _format_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def _span(devices: Sequence[int]) -> str:
    return f"device {devices[0]}" if len(devices) == 1 else f"devices {devices[0]}-{devices[-1]}"


@dataclasses.dataclass
class WorkerStats:
    """One worker of a finished run (``RayExecutor.last_run``)."""

    index: int
    devices: list[int]
    node: str
    executor: str
    seconds: float
    parse_seconds: float
    peak_rss_bytes: int
    exchange: dict[str, Any]


@dataclasses.dataclass
class RunStats:
    """What a Ray run cost: wall seconds from connecting to the outputs back, of which
    connecting to Ray (starting a local instance) and then starting the workers, and each
    worker's figures."""

    seconds: float
    connect_seconds: float
    start_seconds: float
    workers: list[WorkerStats]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class RayExecutor:
    """Runs the grid on Ray actors, ``devices_per_worker`` devices each (Note [Ray executor]).

    ``address``: None starts a local instance for the run; "auto" or "host:port" uses a
    running cluster. ``devices_per_worker``: default, the grid spread over the cluster's CPUs.
    ``per_device_bytes``: the memory analysis's per-device peak, for the memory guard (None:
    no guard). ``ready_timeout``: seconds to wait for the cluster to start the workers.
    """

    name = "ray"
    draws_inputs = True  # accepts a RandomInputs recipe instead of arrays (run.py)

    def __init__(self, address: str | None = None, devices_per_worker: int | None = None, *,
                 per_device_bytes: int | None = None, ready_timeout: float = 120.0) -> None:
        if devices_per_worker is not None and devices_per_worker < 1:
            raise InputError(f"devices per worker must be at least 1, not {devices_per_worker}")
        self.address = address
        self.devices_per_worker = devices_per_worker
        self.per_device_bytes = per_device_bytes
        self.ready_timeout = ready_timeout
        self.last_run: RunStats | None = None
        # The workers of the run in progress, once started: node id, ip, pid, MemAvailable.
        self.workers: list[dict[str, Any]] = []

    def applies(self, module: Module, options: RunOptions) -> bool:
        return not options.hooks

    def run(self, module: Module, args: list[list[Value]] | RandomInputs, replicas: int, partitions: int,
            options: RunOptions, *, donate: bool = False) -> list[Value]:
        if options.hooks:
            raise InputError("the Ray executor cannot run hooks: they observe values in this process "
                             "(run with a local executor)")
        started = time.perf_counter()
        with connected(self.address):
            return _Run(self, module, args, replicas, partitions, options, donate, started).run()


def _since(t: float) -> float:
    return time.perf_counter() - t


class _Run:
    """One run on the cluster: placement, the memory guard, sending, supervising."""

    def __init__(self, executor: RayExecutor, module: Module, args: list[list[Value]] | RandomInputs,
                 replicas: int, partitions: int, options: RunOptions, donate: bool, started: float) -> None:
        self.executor = executor
        self.module = module
        self.args = args
        self.replicas, self.partitions = replicas, partitions
        self.options = options
        self.donate = donate
        self.started = started
        self.num_devices = replicas * partitions
        self.actors: list[Any] = []
        self.coordinator: Any = None
        self.nodes: list[dict[str, Any]] = []

    def run(self) -> list[Value]:
        connect_seconds = _since(self.started)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        k = self.executor.devices_per_worker or max(1, math.ceil(self.num_devices / max(1, int(cpus))))
        self.slices = plan_slices(self.num_devices, k)
        need = self._logical_guard()
        try:
            self._start(cpus, need)
            self._real_guard(need)
            start_seconds = _since(self.started) - connect_seconds
            refs = self._send()
            results = self._supervise(refs)
        finally:
            self._stop()
        values = [_owned(v) for r in results for v in r.values]
        self.executor.last_run = RunStats(
            _since(self.started), connect_seconds, start_seconds,
            [WorkerStats(i, list(s), self.nodes[i].get("ip", "?"), r.executor, r.seconds, r.parse_seconds,
                         r.peak_rss_bytes, r.exchange) for i, (s, r) in enumerate(zip(self.slices, results, strict=True))])
        return values

    # --- placement and the memory guard (Note [Ray executor]) ------------------------------------

    def _needs(self) -> list[int] | None:
        per = self.executor.per_device_bytes
        return None if per is None else [len(s) * per for s in self.slices]

    def _logical_guard(self) -> list[int] | None:
        need = self._needs()
        if need is None:
            return None
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        largest = max((int(n.get("Resources", {}).get("memory", 0)) for n in nodes), default=0)
        worst = max(range(len(need)), key=lambda i: need[i])
        if largest and need[worst] > largest:
            raise WorkerMemoryError(self._refusal(
                worst, need[worst], largest, f"the largest node of the cluster offers Ray {_format_bytes(largest)} "
                f"({largest:,} bytes, its 'memory' resource)"))
        return need

    def _real_guard(self, need: list[int] | None) -> None:
        if need is None:
            return
        by_node: dict[str, list[int]] = {}
        for i, info in enumerate(self.nodes):
            by_node.setdefault(info["node_id"], []).append(i)
        for workers in by_node.values():
            have = self.nodes[workers[0]].get("available")
            total = sum(need[i] for i in workers)
            if have is not None and total > have:
                ip = self.nodes[workers[0]].get("ip", "?")
                worst = max(workers, key=lambda i: need[i])
                together = (f" (with workers {', '.join(str(i) for i in workers if i != worst)} on the same node: "
                            f"{_format_bytes(total)} in all)" if len(workers) > 1 else "")
                raise WorkerMemoryError(self._refusal(
                    worst, need[worst], have, f"node {ip} has {_format_bytes(have)} available ({have:,} bytes, "
                    f"MemAvailable){together}"))

    def _refusal(self, worker: int, need: int, have: int, offer: str) -> str:
        per = self.executor.per_device_bytes or 0
        devices = self.slices[worker]
        fit = max(1, have // per) if per else len(devices)
        lines = ["not enough memory for this run on the Ray cluster:",
                 f"  worker {worker} ({_span(devices)}) needs at least {_format_bytes(need)} ({need:,} bytes: "
                 f"{len(devices)} devices x {_format_bytes(per)}, the memory analysis's per-device peak)",
                 f"  {offer}",
                 "what would fit:"]
        if fit < len(devices):
            lines.append(f"  - fewer devices per worker: --devices-per-worker {fit} (more workers, on more nodes)")
        lines.append("  - a cluster with larger nodes, or fewer runs at once on it")
        lines.append("  - or pass --force to run anyway")
        return "\n".join(lines)

    def _start(self, cpus: float, need: list[int] | None) -> None:
        workers = len(self.slices)
        self.coordinator = ray.remote(Coordinator).options(num_cpus=0, max_restarts=0).remote(workers)
        each = min(1.0, cpus / workers)
        for i in range(workers):
            opts: dict[str, Any] = {"num_cpus": each, "max_restarts": 0, "max_task_retries": 0,
                                    "scheduling_strategy": "SPREAD"}
            if need is not None:
                opts["memory"] = need[i]
            self.actors.append(ray.remote(Worker).options(**opts).remote(i, self.coordinator))
        pending = [a.node.remote() for a in self.actors]
        try:
            self.nodes = ray.get(pending, timeout=self.executor.ready_timeout)
            self.executor.workers = [{**info, "devices": list(s)} for info, s in zip(self.nodes, self.slices, strict=True)]
        except ray.exceptions.GetTimeoutError:
            raise ClusterError(
                f"the Ray cluster did not start {workers} workers within {self.executor.ready_timeout:.0f} s "
                f"(each needs {each:g} CPU" + (f" and {_format_bytes(max(need))} of memory" if need else "")
                + f"; the cluster has {ray.available_resources()} free): free resources, add nodes or use "
                "more devices per worker") from None
        except ray.exceptions.RayActorError as e:
            raise ClusterError(f"a Ray worker could not start: {_first_line(e)}") from None

    # --- sending -----------------------------------------------------------------------------------

    def _send(self) -> list[Any]:
        resolved = float_env.resolve(self.options.float_env)  # "auto" means this machine's XLA:CPU
        options = dataclasses.replace(self.options, hooks=(), progress=None, float_env=resolved)
        text = ray.put(self.module.to_text())
        owner = [i for i, s in enumerate(self.slices) for _ in s]
        args = self.args
        shared: list[Any] = []
        own: list[Any] = [None] * len(self.slices)
        recipe = None
        if isinstance(args, RandomInputs):
            recipe = args
        else:
            params = len(args[0]) if args else 0
            is_shared = [all(a[i] is args[0][i] for a in args) for i in range(params)]
            shared = [ray.put(args[0][i]) if is_shared[i] else None for i in range(params)]
            if not all(is_shared):
                for w, s in enumerate(self.slices):
                    own[w] = ray.put([[None if is_shared[i] else args[d][i] for i in range(params)] for d in s])
            if self.donate:
                args.clear()  # handed over: the object store holds them now
        self.args = []
        refs = []
        for w, s in enumerate(self.slices):
            job = Job(text, self.module.name, self.replicas, self.partitions, s.start, len(s), owner, options,
                      shared, own[w], recipe, client_blas_threads())
            refs.append(self.actors[w].run.remote(job))
        return refs  # the jobs' handles now live in the calls: each worker frees its inputs when done

    # --- supervising (faults, progress) ------------------------------------------------------------

    def _supervise(self, refs: list[Any]) -> list[WorkerResult]:
        results: dict[int, WorkerResult] = {}
        pending = {ref: w for w, ref in enumerate(refs)}
        report: Callable[[Progress], None] | None = self.options.progress
        polled = time.perf_counter()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
            for ref in ready:
                w = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    raise InterpretError(f"Ray worker {w} ({_span(self.slices[w])}) failed: "
                                         f"{_first_line(e.cause if e.cause is not None else e)}") from None
                except ray.exceptions.RayError as e:  # died: killed, crashed, or OutOfMemoryError (Ray's monitor)
                    raise self._died(w, e) from None
                if isinstance(result, WorkerFailure):
                    raise _rebuild(result, w, self.slices[w])
                results[w] = result
            if report is not None and time.perf_counter() - polled > 1.0:
                polled = time.perf_counter()
                with contextlib.suppress(Exception):
                    seen: dict[int, dict[str, Any]] = ray.get(self.coordinator.status.remote(), timeout=2)
                    report(Progress(sum(s["instructions"] for s in seen.values()),
                                    sum(s["loop_iterations"] for s in seen.values())))
        return [results[w] for w in range(len(refs))]

    def _died(self, worker: int, e: Exception) -> WorkerDiedError:
        text = str(e)
        oom = isinstance(e, ray.exceptions.OutOfMemoryError) or "memory pressure" in text or "low on memory" in text
        cause = ("Ray's memory monitor killed it: its node ran out of memory" if oom else
                 "its process exited unexpectedly (killed, or out of memory: the kernel's OOM killer; see dmesg "
                 "on its node)")
        seen: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            status: dict[int, dict[str, Any]] = ray.get(self.coordinator.status.remote(), timeout=2)
            seen = status.get(worker, {})
        info = self.nodes[worker] if worker < len(self.nodes) else {}
        where = (f"It was last seen {seen['age']:.1f} s before at {seen['where']}, after "
                 f"{seen['instructions']:,} instructions." if seen else
                 "It died before it said where it was (within its first second).")
        return WorkerDiedError(
            f"Ray worker {worker} ({_span(self.slices[worker])} of {self.num_devices}, node {info.get('ip', '?')}, "
            f"pid {info.get('pid', '?')}) died: {cause}. {where} The run is cancelled.")

    def _stop(self) -> None:
        for actor in [*self.actors, self.coordinator]:
            if actor is not None:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
        self.actors = []
        self.coordinator = None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _rebuild(failure: WorkerFailure, worker: int, devices: Sequence[int]) -> errors.HloscopeError:
    """A worker's hloscope error raised here as its own kind, saying which worker it came from."""
    kind = getattr(errors, failure.kind, None)
    cls = kind if isinstance(kind, type) and issubclass(kind, (InterpretError, InputError)) else InterpretError
    return cls(f"{failure.message}\n  (on Ray worker {worker}, {_span(devices)})")


def _owned(v: Any) -> Any:
    """An output read from the object store as an ordinary array of this process (writable,
    the store's copy released), as a local run returns it."""
    if isinstance(v, tuple):
        return tuple(_owned(e) for e in v)
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return np.array(v)
    return v
