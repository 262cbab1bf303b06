"""The Ray actors of the Ray executor: workers that run slices of the device grid, and the
coordinator that holds the exchange board (Note [The exchange board] in exchange.py).

Imported only by ray_executor.py, so only when a run chooses Ray (``import ray`` is here).

Note [Where a worker is]
    A worker that dies (killed, out of memory) cannot say where it was, so it says it while
    alive: a thread samples, once a second, the thread running the slice, finds the innermost
    ``evaluate`` frame on its stack (the instruction being evaluated and its computation) and
    the outermost one (the entry instruction it is under), reads the shared ``Progress``
    counters, and posts that to the coordinator. It only observes: the evaluator loop pays
    nothing. Reading a running frame's locals in CPython 3.11 snapshots them into a dict that
    stays on the frame; the sampler clears it at once, so it holds no array alive and never
    stops an in-place update (Note [Donation] in evaluator.py). While the worker waits for a
    collective, the open meetings say where.

Note [BLAS threads]
    How OpenBLAS splits a gemm among its threads changes the order of some sums, so the same
    float32 product can differ in its last bit between a process with two BLAS threads and one
    with one (measured: seed 000's gradients on 8 replicas, up to 8.5e-7). Ray starts workers
    with ``OMP_NUM_THREADS`` set to their CPU share (1 here), so a worker sets its BLAS thread
    count to the client's for the run (threadpoolctl): results are then bit-identical to a
    local run. The count is part of the floating-point environment, like the denormal mode
    (Note [Denormals] in float_env.py) and the CPU's kernels: nodes of another CPU kind may
    give other bits, as a local run there would.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import ray

from hloscope.errors import HloscopeError
from hloscope.interpret import evaluator, float_env
from hloscope.interpret.allocator import kept_freed_memory
from hloscope.interpret.evaluator import RunOptions
from hloscope.interpret.exchange import Board, BoardExchange, Event, Result, Submission
from hloscope.interpret.executor import choose_local_executor
from hloscope.interpret.inputs import RandomInputs
from hloscope.interpret.values import Value, coerce_input

__all__ = ["Coordinator", "Job", "Worker", "WorkerFailure", "WorkerResult", "blas_threads", "client_blas_threads"]


@dataclasses.dataclass
class Job:
    """What one worker runs: the module (a handle to its text), the grid, its devices
    ``[first, first + count)``, who holds every device, the options, and its inputs: for each
    parameter a handle to the array every device shares (or None), plus a handle to its own
    devices' lists (shared entries None), or a recipe it draws them from."""

    text: Any  # ObjectRef of the module's HLO text
    name: str
    replicas: int
    partitions: int
    first: int
    count: int
    owner: list[int]
    options: RunOptions
    shared: list[Any]
    own: Any = None
    recipe: RandomInputs | None = None
    blas_threads: int | None = None


@dataclasses.dataclass
class WorkerResult:
    """A worker's outputs (one value per device it holds) and what its run cost."""

    values: list[Value]
    seconds: float
    parse_seconds: float
    peak_rss_bytes: int
    exchange: dict[str, Any]
    executor: str


@dataclasses.dataclass
class WorkerFailure:
    """An hloscope error a worker raised, as plain data (the error itself holds the module)."""

    kind: str
    message: str


def client_blas_threads() -> int | None:
    """How many threads BLAS runs gemms with in this process (None: not known, threadpoolctl
    missing). Part of the floating-point environment (Note [BLAS threads])."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    counts = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return counts[0] if counts else None


@contextlib.contextmanager
def blas_threads(count: int | None) -> Iterator[None]:
    """BLAS with ``count`` threads for the body (Note [BLAS threads])."""
    if count is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=count, user_api="blas"):
        yield


def _mem_available() -> int | None:
    """``MemAvailable`` of this node (as ``hloscope.api.available_memory``, which sits above
    this layer)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class _RayTransport:
    """``exchange.Transport`` over Ray: values through the object store, the board in the
    coordinator actor."""

    def __init__(self, coordinator: Any, worker: int) -> None:
        self.coordinator = coordinator
        self.worker = worker

    def put(self, value: Any) -> Any:
        return ray.put(value)

    def get(self, handle: Any) -> Any:
        return ray.get(handle)

    def call(self, submissions: list[Submission], results: list[Result],
             waiting: dict[int, str] | None) -> list[Event]:
        return ray.get(self.coordinator.exchange.remote(self.worker, submissions, results, waiting))


def _writable(v: Any) -> Any:
    """An input read from the object store (a read-only view of shared memory) as an array of
    this process's own, so the run may update it in place as a local run would."""
    if isinstance(v, tuple):
        return tuple(_writable(e) for e in v)
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return np.array(v)
    return v


class Worker:
    """Runs one slice of the device grid with the local executors (lockstep where it
    applies), meeting the other workers' devices through the coordinator."""

    def __init__(self, index: int, coordinator: Any) -> None:
        self.index = index
        self.coordinator = coordinator
        self._thread: int | None = None
        self._exchange: BoardExchange | None = None
        threading.Thread(target=self._sample, name="hloscope-where", daemon=True).start()

    def node(self) -> dict[str, Any]:
        """Where this worker runs and what memory its node has available now."""
        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "ip": ray.util.get_node_ip_address(), "pid": os.getpid(),
                "available": _mem_available()}

    def run(self, job: Job) -> WorkerResult | WorkerFailure:
        self._thread = threading.get_ident()
        started = time.perf_counter()
        try:
            from hloscope.text import parse_module

            module = parse_module(ray.get(job.text), job.name)
            parsed = time.perf_counter()
            args = self._inputs(job, module)
            held = range(job.first, job.first + job.count)
            self._exchange = BoardExchange(self.index, job.owner, _RayTransport(self.coordinator, self.index))
            executor = choose_local_executor(module, job.options, job.count)
            with (kept_freed_memory(job.options.keep_freed_memory), float_env.using(job.options.float_env),
                  blas_threads(job.blas_threads)):
                values = executor.run_slice(module, args, job.replicas, job.partitions, job.options, held,
                                            self._exchange, donate=True)
        except HloscopeError as e:
            # Not finished on the board: the others stay waiting, and the client, told of
            # this failure first, ends them (a deadlock message would hide the cause).
            return WorkerFailure(type(e).__name__, str(e))
        finally:
            self._thread = None
        ray.get(self.coordinator.finish.remote(self.index))
        usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux counts KiB
        return WorkerResult(values, time.perf_counter() - started, parsed - started, usage,
                            self._exchange.stats.to_json(), executor.name)

    def _inputs(self, job: Job, module: Any) -> list[list[Value]]:
        """This worker's devices' argument lists: shared arrays read once from the object
        store (every device holds the same object, as in a local run), its own devices'
        arrays made its own, or drawn from the recipe."""
        if job.recipe is not None:
            common = None if job.recipe.per_device else job.recipe.materialize(module, 1)
            params = module.entry.parameters
            if common is not None:  # coerced once, so every device holds the same objects
                common = [coerce_input(x, p.shape, p.name) for x, p in zip(common, params, strict=True)]
            return [[coerce_input(x, p.shape, p.name) for x, p in
                     zip(job.recipe.for_device(module, d, common), params, strict=True)]
                    for d in range(job.first, job.first + job.count)]
        shared: list[Any] = [ray.get(h) if h is not None else None for h in job.shared]
        own: list[list[Any]] = ray.get(job.own) if job.own is not None else [[None] * len(shared)] * job.count
        job.own = None  # the worker's copy is what holds them now
        return [[s if s is not None else _writable(x) for s, x in zip(shared, xs, strict=True)] for xs in own]

    # --- Note [Where a worker is] ---------------------------------------------------------

    def _sample(self) -> None:
        while True:
            time.sleep(1.0)
            try:
                where, instructions, iterations = self._where()
                self.coordinator.heartbeat.remote(self.index, where, instructions, iterations)
            except Exception:  # an observer never takes the worker down
                continue

    def _where(self) -> tuple[str, int, int]:
        thread = self._thread
        frame = sys._current_frames().get(thread) if thread is not None else None
        inner = outer = None
        progress = None
        code = evaluator.evaluate.__code__
        while frame is not None:
            if frame.f_code is code:
                snapshot = frame.f_locals
                step, comp, progress = snapshot.get("step"), snapshot.get("comp"), snapshot.get("progress")
                if sys.version_info < (3, 13):
                    snapshot.clear()  # a 3.11 snapshot would keep the locals' arrays alive
                if step is not None:
                    at = (step.inst.name, getattr(comp, "name", "?"))
                    inner = inner or at
                    outer = at
            frame = frame.f_back
        done, iterations = (progress.instructions, progress.loop_iterations) if progress is not None else (0, 0)
        if inner is not None and outer is not None:
            where = f"instruction {inner[0]} in computation {inner[1]}"
            if outer != inner:
                where += f" (under {outer[0]} in {outer[1]})"
            return where, done, iterations
        exchange = self._exchange
        if exchange is not None and exchange.open:
            names = sorted({o.request.inst.name for o in list(exchange.open.values())})
            return f"waiting for the other workers at {', '.join(names)}", done, iterations
        return ("starting (parsing the module, reading inputs)" if thread is not None else "idle"), done, iterations


class Coordinator:
    """The exchange board of one run (an async actor: one event loop, no locks), and what
    each worker last said about where it is."""

    def __init__(self, workers: int) -> None:
        self.board = Board(workers)
        self.news = {w: asyncio.Event() for w in range(workers)}
        self.seen: dict[int, dict[str, Any]] = {}

    def _wake(self) -> None:
        for w, mail in self.board.mail.items():
            if mail:
                self.news[w].set()

    async def exchange(self, worker: int, submissions: list[Submission], results: list[Result],
                       waiting: dict[int, str] | None) -> list[Event]:
        self.board.post(worker, submissions, results)
        self._wake()
        if waiting is None:
            return self.board.take(worker)
        self.board.block(worker, waiting)
        self._wake()
        while True:
            events = self.board.take(worker)
            if events:
                return events
            self.news[worker].clear()
            await self.news[worker].wait()

    async def finish(self, worker: int) -> None:
        self.board.finish(worker)
        self._wake()

    async def heartbeat(self, worker: int, where: str, instructions: int, loop_iterations: int) -> None:
        self.seen[worker] = {"time": time.time(), "where": where, "instructions": instructions,
                             "loop_iterations": loop_iterations}

    async def status(self) -> dict[int, dict[str, Any]]:
        """What each worker last said, with seconds since (``age``)."""
        now = time.time()
        return {w: {**s, "age": now - s["time"]} for w, s in self.seen.items()}
