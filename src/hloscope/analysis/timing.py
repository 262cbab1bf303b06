"""Estimated run time: a roofline per instruction, an α-β model per collective, one schedule.

Each top-level instruction of the entry computation (and of the bodies it calls) gets

* compute time ``(flops + transcendentals) / peak_flops[dtype]``, with ``dtype`` the element
  type of the dot or convolution it performs (else of its result);
* memory time ``bytes_accessed / memory_bandwidth`` (XLA's bytes, see ``analysis.cost``);
* the two combined as XLA's GPU performance model does
  (``CombineComputeAndMemoryAccessTime`` in ``gpu_performance_model_base.cc``):
  ``compute + memory - min(compute, memory) * 0.95``, i.e. the larger plus 5% of the smaller;
* plus ``kernel_launch_overhead`` when it launches work (not for parameters, tuples,
  get-tuple-element, bitcasts, constants and other pointer bookkeeping).

A collective costs ``collective_latency + steps * link.latency + ring_bytes / link.bandwidth``
on the intra-node link (``analysis.collectives`` gives steps and bytes). Synchronous
collectives block the compute stream; a ``*-start``/``*-done`` pair runs on the
communication stream and overlaps the instructions scheduled between the two; so does a
``copy-start``/``copy-done`` pair on the copy engine and a ``send``/``recv`` on the host link
(each its own stream, ``STREAMS``). A while loop
costs its trip count (``analysis.trip_count``; one iteration when unknown) times body plus
condition; a conditional its slowest branch.

The schedule is the module's instruction order (the schedule, for a scheduled module).

Note [The XLA:CPU model]
    A ``kind="cpu"`` profile runs the same schedule with per-instruction times suited to
    XLA:CPU, which runs its thunks one after another on the host:

    * a dot or convolution (alone or in a fusion, e.g. YNNPACK's ``__ynn_fusion``) goes to a
      library kernel: its FLOPs at ``peak_flops[dtype]``, the large-dot rate calibrated per
      type, sped up towards ``cpu_rates.cached_dot_flops`` when its bytes fit in cache; a
      library fusion's other work (attention's softmax between two dots) at the loop rates
      below (Note [Library graphs with dots] in ``cpu_model.py``); a grouped (depthwise)
      convolution is XLA's own loop, at ``grouped_conv_flops``; a plain convolution thunk
      (Eigen's kernel, not a library fusion) takes at least its output elements at
      ``conv_outputs`` (Note [Eigen convolutions]);
    * a sort costs ``elements * ceil(log2 n)`` comparisons (``n`` the sorted dimension) at
      ``cpu_rates.sort_comparisons``; a scatter its update elements at ``scatter_elements``;
      the TopK custom call its input elements at ``topk_elements``;
    * every other instruction or fusion is a loop XLA emits itself: FLOPs at
      ``cpu_rates.elementwise_flops`` and transcendentals at ``cpu_rates.transcendentals``,
      far below the matmul peak, plus the per-element index work of each gather (gathered
      elements at ``gather_elements``) and the window walk of each reduce-window (output
      elements times window size at ``reduce_window_elements``), which do not vectorise;
      sqrt and rsqrt, transcendentals to XLA's cost analysis, are the hardware's square root
      and cost elementwise FLOPs (Note [Hardware roots]);
    * memory time is bytes at ``memory_bandwidth`` (calibrated as XLA's own streaming loop),
      faster towards ``cpu_rates.cached_bandwidth`` when they fit in the core's cache, a
      written byte costing two transfers and a read one (Note [Reads and writes]); or at the
      transposing rate when the instruction (or one in its fusion) changes the physical order
      of an array in runs shorter than two cache lines (Note [Transposes]);
    * an XLA fusion evaluates an elementwise producer once per loop that reads it (Note
      [Recomputed producers] in ``cpu_model.py``), though XLA's cost analysis counts it once;
      a library fusion runs its graph tile by tile and evaluates each once;
    * compute and memory combine as on GPUs (the larger plus 5% of the smaller); each thunk
      costs ``kernel_launch_overhead`` (the thunk executor's dispatch, not a launch), or
      ``cpu_rates.dag_thunk_overhead`` when the executor runs it while it hands ready thunks
      to its thread pool, or ``cpu_rates.loop_thunk_overhead`` in a loop's body, whose trips
      cost ``loop_trip_overhead`` each besides, and an execution
      ``cpu_rates.execution_overhead`` (Notes [Thunk dispatch], [Thunks in loops]);
    * an FFT costs 5 N log2 N per transform of N points (half for a real one) at
      ``cpu_rates.fft_flops`` (XLA:CPU calls DUCC); a gather's or scatter's rate depends on
      the size of the table it indexes (from ``cached_gather_elements`` to
      ``gather_elements`` and on); a reduce-window's walk runs its reducer's further
      instructions at ``comparator_ops``;
    * each output or temporary allocation of 32 MiB or more is mapped anew on every run: its
      page faults, at ``fresh_page_bandwidth``, are an interval of their own just before its
      first writer (Note [Fresh pages per allocation] in ``cpu_model.py``), counted in
      ``fresh_page_seconds``, not in any instruction's time.

    Every rate is measured on one XLA:CPU kernel of its family (``hloscope.xla.calibrate``);
    ``analysis/cpu_model.py`` holds the model.

    A profile without ``cpu_rates`` uses the roofline of the other kinds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hloscope.analysis.async_ops import async_wrapped_instruction
from hloscope.analysis.backend import ModuleBackend, infer_backend
from hloscope.analysis.collectives import (
    COLLECTIVE_OPCODES,
    FORMULAS,
    as_collective,
    collective_operand_bytes,
    collective_output_bytes,
    device_grid,
    group_summary,
)
from hloscope.analysis.cost import (
    Cost,
    CostReport,
    analyze_cost,
    custom_call_cost,
)
from hloscope.analysis.cpu_model import (
    REUSE_BYTES,
    FreshAllocation,
    cpu_seconds,
    fresh_allocations,
    math_dtype,
    runs_in_passes,
)
from hloscope.analysis.cpu_thunks import loop_computations, wide_thunks
from hloscope.analysis.hardware import HardwareSpec
from hloscope.analysis.memory.report import MemoryReport
from hloscope.analysis.schedule import (
    ASYNC,
    COMMUNICATION,
    COMPUTE,
    COPY,
    HOST,
    STREAMS,
    ScheduledOp,
)
from hloscope.analysis.trace import chrome_trace
from hloscope.analysis.trip_count import infer_trip_count
from hloscope.ir import Computation, Instruction, Module, Opcode

__all__ = ["ScheduledOp", "InstructionTime", "FreshPages", "TimeEstimate", "estimate_time", "execution_seconds",
           "MEMORY_COMPUTE_PARALLELISM",
           "roofline_seconds", "FRESH_PAGES", "STREAMS", "COMPUTE", "COMMUNICATION", "COPY", "HOST", "ASYNC"]

# XLA's GpuPerformanceModelOptions default: compute and memory overlap 95%.
MEMORY_COMPUTE_PARALLELISM = 0.95

# Instructions that only move pointers or exist at compile time: no launch, no time.
_FREE = frozenset({
    Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.BITCAST,
    Opcode.AFTER_ALL, Opcode.ADD_DEPENDENCY, Opcode.OPTIMIZATION_BARRIER, Opcode.DOMAIN,
    Opcode.PARTITION_ID, Opcode.REPLICA_ID,
})
# Completion of an asynchronous op: waits for its start, costs nothing itself.
_DONE_OF = {
    Opcode.ALL_REDUCE_DONE: Opcode.ALL_REDUCE_START,
    Opcode.ALL_GATHER_DONE: Opcode.ALL_GATHER_START,
    Opcode.COLLECTIVE_PERMUTE_DONE: Opcode.COLLECTIVE_PERMUTE_START,
    Opcode.ASYNC_DONE: Opcode.ASYNC_START,
    Opcode.COPY_DONE: Opcode.COPY_START,
    Opcode.SEND_DONE: Opcode.SEND,
    Opcode.RECV_DONE: Opcode.RECV,
}
_ASYNC_STARTS = frozenset(_DONE_OF.values())
# Asynchronous work with an engine of its own (Note [Nested schedule] for how it is recorded).
_ENGINES = {Opcode.COPY_START: COPY, Opcode.SEND: HOST, Opcode.RECV: HOST}
# The opcode column of a scheduled interval that is an allocation's page faults, not an instruction.
FRESH_PAGES = "fresh-pages"


@dataclass(frozen=True, slots=True)
class InstructionTime:
    """One instruction's estimated seconds per step, over every execution (loop trips included).

    ``bound`` says which term dominates a kernel ("compute", "memory" or "launch"); collectives
    are "communication" and control flow (while, call, conditional) "control", whose seconds
    include their bodies'. ``trip_count`` is set for while loops (None when unknown: one trip).
    """

    name: str
    computation: str
    opcode: str
    seconds: float
    executions: float
    bound: str
    trip_count: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "computation": self.computation, "opcode": self.opcode,
                "seconds": self.seconds, "executions": self.executions, "bound": self.bound,
                "trip_count": self.trip_count}


@dataclass(frozen=True, slots=True)
class FreshPages:
    """The page faults of one allocation mapped anew on every run (Note [Fresh pages per
    allocation] in ``cpu_model.py``): ``seconds`` per step, before ``first_writer`` runs."""

    allocation: str
    kind: str
    bytes: int
    seconds: float
    first_writer: str

    def to_json(self) -> dict[str, Any]:
        return {"allocation": self.allocation, "kind": self.kind, "bytes": self.bytes,
                "seconds": self.seconds, "first_writer": self.first_writer}


@dataclass(frozen=True)
class TimeEstimate:
    """Estimated seconds of one step of a module on one hardware profile.

    The terms (``compute_seconds``, ``memory_seconds``, ``communication_seconds``,
    ``launch_seconds``, ``fresh_page_seconds``) are summed per operation; operations overlap,
    so they may add to more than ``total_seconds``. ``backend`` is what the module says about
    the backend it was compiled for, and ``notes`` what a reader must know to trust the
    figures (an unoptimized module, a module compiled for another backend than the profile's).
    """

    hardware: str
    total_seconds: float
    compute_seconds: float
    memory_seconds: float
    communication_seconds: float
    launch_seconds: float
    schedule: tuple[ScheduledOp, ...] = field(repr=False)
    trip_counts: dict[str, int | None] = field(default_factory=dict)
    # Every instruction that takes time, nested ones included, by name (names are module-unique).
    per_instruction: dict[str, InstructionTime] = field(default_factory=dict, repr=False)
    fresh_page_seconds: float = 0.0
    fresh_pages: tuple[FreshPages, ...] = ()
    hardware_kind: str = ""
    backend: ModuleBackend | None = None
    notes: tuple[str, ...] = ()

    def to_json(self, *, top: int = 0) -> dict[str, Any]:
        """Totals, and the ``top`` longest scheduled intervals when ``top`` > 0."""
        data: dict[str, Any] = {
            "hardware": self.hardware,
            "hardware_kind": self.hardware_kind,
            "total_seconds": self.total_seconds,
            "compute_seconds": self.compute_seconds,
            "memory_seconds": self.memory_seconds,
            "communication_seconds": self.communication_seconds,
            "launch_seconds": self.launch_seconds,
            "fresh_page_seconds": self.fresh_page_seconds,
            "fresh_pages": [f.to_json() for f in self.fresh_pages],
            "backend": None if self.backend is None else self.backend.to_json(),
            "notes": list(self.notes),
            "trip_counts": dict(self.trip_counts),
        }
        if top:
            longest = sorted(self.schedule, key=lambda s: s.duration, reverse=True)[:top]
            data["longest"] = [{"instruction": s.instruction, "opcode": s.opcode, "seconds": s.duration,
                                "stream": s.stream} for s in longest]
            rows = sorted(self.per_instruction.values(), key=lambda t: t.seconds, reverse=True)[:top]
            data["per_instruction"] = [t.to_json() for t in rows]
        return data

    def to_chrome_trace(self) -> dict[str, Any]:
        """The schedule as Chrome/Perfetto trace JSON (complete events, microseconds): one
        thread per lane, loops unrolled trip by trip (folded past ``trace.UNROLL_LIMIT`` events);
        the report's timeline draws the same events (``analysis.trace``)."""
        return chrome_trace(self)


def roofline_seconds(compute: float, memory: float) -> float:
    """Compute and memory time combined as XLA's GPU performance model combines them."""
    return compute + memory - min(compute, memory) * MEMORY_COMPUTE_PARALLELISM


class _Simulator:
    """Walks computations in schedule order, keeping one clock per stream."""

    def __init__(self, module: Module, hw: HardwareSpec, cost: CostReport,
                 memory: MemoryReport | None = None) -> None:
        self.hw = hw
        self.cost = cost
        self.module = module
        self.replicas, self.partitions = device_grid(
            module, [c for i in module.instructions() if (c := as_collective(i)) is not None], None, None)
        self.events: list[ScheduledOp] = []
        self.compute = self.memory = self.comm = self.launch = self.faults = 0.0
        self.trip_counts: dict[str, int | None] = {}
        self._bound = "compute"  # the last kernel's dominant term (kernel_seconds sets it)
        rates = hw.cpu_rates
        # Note [Fresh pages per allocation] in cpu_model.py (needs the buffer assignment).
        self.fresh: dict[Instruction, list[FreshAllocation]] = {}
        if hw.kind == "cpu" and rates is not None and rates.fresh_page_bandwidth > 0:
            for alloc in fresh_allocations(module, memory):
                self.fresh.setdefault(alloc.first_writer, []).append(alloc)
        self.fresh_pages: list[FreshPages] = []
        self._wide: dict[Computation, set[Instruction]] = {}
        self._in_loops = loop_computations(module) if rates is not None else set()
        # Note [Cold operands] in cpu_model.py: bytes moved so far, and where each result was.
        self._traffic = 0.0
        self._written_at: dict[Instruction, float] = {}
        # instruction -> [seconds over all executions, executions, bound]
        self.charged: dict[Instruction, list[Any]] = {}
        self._where: tuple[int, str] = (0, "")  # (depth, parent) of what run() records now

    def _charge(self, inst: Instruction, seconds: float, scale: float, bound: str) -> None:
        row = self.charged.get(inst)
        if row is None:
            self.charged[inst] = [seconds * scale, scale, bound]
        else:
            row[0] += seconds * scale
            row[1] += scale

    # -- costs of single instructions --------------------------------------------------------
    def _cost_of(self, inst: Instruction) -> Cost:
        if inst.opcode is Opcode.CUSTOM_CALL:
            known = custom_call_cost(inst)
            if known is not None:
                return known
            return Cost(0, 0, sum(s.byte_size() for _, s in inst.shape.leaves())
                        + sum(s.byte_size() for o in inst.operands for _, s in o.shape.leaves()))
        return self.cost.per_instruction.get(inst, Cost())

    def kernel_seconds(self, inst: Instruction, scale: float, cost: Cost | None = None) -> float:
        c = self._cost_of(inst) if cost is None else cost
        if self.hw.kind == "cpu" and self.hw.cpu_rates is not None:
            compute, memory = cpu_seconds(inst, c, self.hw, self.hw.cpu_rates, self._cold_bytes(inst, c))
        else:
            rate = self.hw.flops_per_second(math_dtype(inst))
            compute = max(c.flops, 0) / rate + max(c.transcendentals, 0) / rate
            memory = max(c.bytes_accessed, 0) / self.hw.memory_bandwidth
        self.compute += compute * scale
        self.memory += memory * scale
        launch = self._launch_overhead(inst)
        self.launch += launch * scale
        self._bound = ("launch" if launch > max(compute, memory) else
                       "compute" if compute >= memory else "memory")
        if self.hw.kind == "cpu" and self.hw.cpu_rates is not None and runs_in_passes(inst, self.hw.cpu_rates):
            return compute + memory + launch  # Note [Library passes] in cpu_model.py
        return roofline_seconds(compute, memory) + launch

    def _cold_bytes(self, inst: Instruction, c: Cost) -> float:
        """Bytes of ``inst``'s operands not in the cache when it runs (Note [Cold operands] in
        cpu_model.py), and the bookkeeping of what it leaves there."""
        cold = 0.0
        for o in inst.operands:
            producer = o
            while producer.opcode in (Opcode.BITCAST, Opcode.GET_TUPLE_ELEMENT) and producer.operands:
                producer = producer.operands[0]
            size = sum(s.byte_size() for _, s in o.shape.leaves())
            written = self._written_at.get(producer)
            entry_input = producer.opcode in (Opcode.PARAMETER, Opcode.CONSTANT) and (
                producer.computation is self.module.entry)
            if entry_input or (written is not None and self._traffic - written + size > REUSE_BYTES) or (
                    written is None and size > REUSE_BYTES):
                cold += size
        self._traffic += max(c.bytes_accessed, 0)
        self._written_at[inst] = self._traffic
        return cold

    def _launch_overhead(self, inst: Instruction) -> float:
        """``kernel_launch_overhead``, or on XLA:CPU the graph executor's cost for a thunk it
        runs while more than 8 others are ready (Note [Thunk dispatch] in cpu_thunks.py)."""
        rates = self.hw.cpu_rates
        if rates is None or inst.computation is None:
            return self.hw.kernel_launch_overhead
        comp = inst.computation
        if rates.dag_thunk_overhead > 0:
            wide = self._wide.get(comp)
            if wide is None:
                wide = self._wide[comp] = wide_thunks(comp)
            if inst in wide:
                return rates.dag_thunk_overhead
        # Note [Thunks in loops]
        return rates.loop_thunk_overhead if comp in self._in_loops else self.hw.kernel_launch_overhead

    def fresh_page_faults(self, inst: Instruction, clock: float, record: bool, depth: int = 0,
                          parent: str = "") -> float:
        """Schedule the page faults of the allocations ``inst`` writes first (Note [Fresh pages
        per allocation] in ``cpu_model.py``) from ``clock``; returns when they end."""
        rates = self.hw.cpu_rates
        for alloc in self.fresh.get(inst, ()):
            assert rates is not None
            seconds = alloc.size / rates.fresh_page_bandwidth
            self.faults += seconds
            self.fresh_pages.append(FreshPages(alloc.label, alloc.kind, alloc.size, seconds, inst.name))
            if record:
                self.events.append(ScheduledOp(f"{alloc.label} ({alloc.kind}, {alloc.size:,} bytes)", FRESH_PAGES,
                                               clock, clock + seconds, COMPUTE,
                                               inst.computation.name if inst.computation else "", depth, parent))
            clock += seconds
        return clock

    def collective_seconds(self, inst: Instruction, scale: float) -> float:
        kind = COLLECTIVE_OPCODES[inst.opcode]
        f = FORMULAS[kind]
        _, size, _ = group_summary(inst, kind, self.replicas, self.partitions)
        payload = collective_output_bytes(inst) if f.payload == "output" else collective_operand_bytes(inst)
        if size <= 1:
            seconds = self.hw.kernel_launch_overhead
        else:
            link = self.hw.intra_node
            seconds = (self.hw.collective_latency + f.ring_steps(size) * link.latency
                       + f.ring(size, payload) / link.bandwidth)
        self.comm += seconds * scale
        return seconds

    # -- the schedule --------------------------------------------------------------------------
    # Note [Nested schedule]
    # ----------------------------------------------------------------------------------------
    # A loop body runs `trips` times back to back; its instructions are recorded once, for the
    # first trip, from the loop's start (the condition after the body), so every later trip is
    # the first shifted by whole periods of (loop duration / trips). A call's computation is
    # recorded where it runs, and a conditional's slowest branch (the one charged). Nothing is
    # recorded below a computation that is itself not recorded, so the schedule holds each
    # scheduled instruction at most once however deep the loops nest.
    def run(self, comp: Computation, t0: float, scale: float, record: bool,
            depth: int = 0, parent: str = "") -> float:
        """Simulate ``comp`` from time ``t0``; returns when its last instruction ends.

        ``record`` keeps its intervals (and, below it, the first run of every body) in
        ``events`` at ``depth`` under the control instruction ``parent``.
        """
        self._where = (depth, parent)
        clock = t0
        comm_clock = t0
        engine_clock: dict[str, float] = {}  # the copy engine's and host link's clocks
        pending: dict[Instruction, float] = {}  # async start -> its end time
        for inst in comp.instructions:
            op = inst.opcode
            if op in _FREE:
                continue
            if op in _DONE_OF:
                start = inst.operands[0] if inst.operands else None
                clock = max(clock, pending.pop(start, clock)) if start is not None else clock
                continue
            wrapped = async_wrapped_instruction(inst)
            if wrapped is not None and wrapped.opcode is not Opcode.CALL:
                # Async sugar (Note [Async sugar costs] in async_ops.py): the wrapped op runs
                # on the other stream, a collective by the link model, anything else as a kernel.
                if wrapped.opcode in COLLECTIVE_OPCODES:
                    begin = max(clock, comm_clock)
                    end = comm_clock = begin + self.collective_seconds(wrapped, scale)
                    bound = "communication"
                else:
                    # The start's cost is the wrapped op's; a custom call is costed by meaning.
                    cost = None if wrapped.opcode is Opcode.CUSTOM_CALL else self._cost_of(inst)
                    begin = clock
                    end = clock + self.kernel_seconds(wrapped, scale, cost)
                    bound = self._bound
                self._charge(inst, end - begin, scale, bound)
                pending[inst] = end
                self._record(record, inst, begin, end, COMMUNICATION if wrapped.opcode in COLLECTIVE_OPCODES else ASYNC)
                continue
            if op in _ENGINES:
                # An asynchronous copy (a TPU prefetch) or host transfer runs on its own engine
                # from its start to its -done, overlapping the compute stream in between.
                stream = _ENGINES[op]
                begin = max(clock, engine_clock.get(stream, t0))
                end = engine_clock[stream] = begin + self.kernel_seconds(inst, scale)
                self._charge(inst, end - begin, scale, self._bound)
                pending[inst] = end
                self._record(record, inst, begin, end, stream)
                continue
            if op in COLLECTIVE_OPCODES:
                seconds = self.collective_seconds(inst, scale)
                begin = max(clock, comm_clock)
                end = begin + seconds
                comm_clock = end
                self._charge(inst, seconds, scale, "communication")
                if op in _ASYNC_STARTS:
                    pending[inst] = end  # overlaps the work up to its -done
                else:
                    clock = end  # a synchronous collective blocks the compute stream
                self._record(record, inst, begin, end, COMMUNICATION)
                continue
            if op is Opcode.WHILE:
                n = infer_trip_count(inst)
                self.trip_counts[inst.name] = n
                k = n if n is not None else 1
                first = len(self.events)
                body = self.run(inst.attrs["body"], 0.0, scale * k, record, depth + 1, inst.name)
                mid = len(self.events)
                cond = self.run(inst.attrs["condition"], 0.0, scale * k, record, depth + 1, inst.name)
                # The first trip, recorded from 0, placed where the loop starts (condition after body).
                self._shift(first, mid, clock)
                self._shift(mid, len(self.events), clock + body)
                self._where = (depth, parent)
                # Note [Thunks in loops]: each trip's own cost, beyond its thunks'.
                trip = self.hw.cpu_rates.loop_trip_overhead if self.hw.cpu_rates is not None else 0.0
                self.launch += k * trip * scale
                end = clock + k * (body + cond + trip)
                bound = "control"
            elif op in (Opcode.CALL, Opcode.ASYNC_START) and inst.called_computations:
                end = self.run(inst.called_computations[0], clock, scale, record, depth + 1, inst.name)
                self._where = (depth, parent)
                bound = "control"
                if op is Opcode.ASYNC_START:
                    self._charge(inst, end - clock, scale, bound)
                    pending[inst] = end
                    self._record(record, inst, clock, end, COMMUNICATION)
                    continue
            elif op is Opcode.CONDITIONAL:
                # Each branch costed alone; the slowest, the one charged, is run again to record it.
                ends = [self.run(c, 0.0, scale, False) for c in inst.called_computations]
                slowest = max(range(len(ends)), key=ends.__getitem__)
                if record:
                    self._recording_again(inst.called_computations[slowest], clock, depth + 1, inst.name)
                self._where = (depth, parent)
                end = clock + ends[slowest]
                bound = "control"
            else:
                if inst in self.fresh:
                    clock = self.fresh_page_faults(inst, clock, record, depth, parent)
                end = clock + self.kernel_seconds(inst, scale)
                bound = self._bound
            self._charge(inst, end - clock, scale, bound)
            self._record(record, inst, clock, end, COMPUTE)
            clock = end
        # Outstanding asynchronous work must finish before the computation returns.
        return max([clock, *pending.values()])

    def _record(self, record: bool, inst: Instruction, start: float, end: float, stream: str) -> None:
        if record:
            depth, parent = self._where
            self.events.append(ScheduledOp(inst.name, inst.opcode.text, start, end, stream,
                                           inst.computation.name if inst.computation else "",
                                           depth, parent))

    def _shift(self, first: int, last: int, dt: float) -> None:
        """Move the events recorded at ``first`` up to ``last`` later by ``dt`` seconds."""
        for k in range(first, last):
            e = self.events[k]
            self.events[k] = ScheduledOp(e.instruction, e.opcode, e.start + dt, e.end + dt, e.stream,
                                         e.computation, e.depth, e.parent)

    def _recording_again(self, comp: Computation, t0: float, depth: int, parent: str) -> None:
        """Record ``comp``'s intervals from ``t0`` without charging anything a second time."""
        saved = (self.compute, self.memory, self.comm, self.launch, self.charged, self.trip_counts)
        self.charged = {}
        self.trip_counts = dict(self.trip_counts)
        self.run(comp, t0, 0.0, True, depth, parent)
        self.compute, self.memory, self.comm, self.launch, self.charged, self.trip_counts = saved


def execution_seconds(module: Module, hardware: HardwareSpec) -> float:
    """An execution's fixed cost on XLA:CPU before its first thunk: ``execution_overhead`` plus
    ``parameter_overhead`` per entry parameter array and ``result_overhead`` per result array
    (Note [Thunk dispatch] in cpu_thunks.py); 0 on other hardware."""
    rates = hardware.cpu_rates
    if hardware.kind != "cpu" or rates is None:
        return 0.0
    entry = module.entry
    params = sum(1 for p in entry.parameters for _ in p.shape.leaves())
    results = sum(1 for _ in entry.root.shape.leaves())
    return rates.execution_overhead + params * rates.parameter_overhead + results * rates.result_overhead


def estimate_time(module: Module, hardware: HardwareSpec, *, cost_report: CostReport | None = None,
                  memory_report: MemoryReport | None = None) -> TimeEstimate:
    """Estimated seconds of one execution of ``module`` on ``hardware`` (see the module docstring).

    ``cost_report`` reuses an ``analyze_cost(module)`` result and ``memory_report`` an
    ``analyze_memory(module)`` one (a CPU's page faults need the buffer assignment). Loops count
    their trip counts.
    """
    cost = cost_report if cost_report is not None else analyze_cost(module)
    backend = infer_backend(module)
    sim = _Simulator(module, hardware, cost, memory_report)
    # Note [Thunk dispatch] in cpu_thunks.py: an execution's fixed cost, before its first thunk.
    start = execution_seconds(module, hardware)
    sim.launch += start
    total = sim.run(module.entry, start, 1.0, True)
    per_instruction = {
        inst.name: InstructionTime(inst.name, inst.computation.name if inst.computation else "",
                                   inst.opcode.text, seconds, runs, bound,
                                   sim.trip_counts.get(inst.name) if inst.opcode is Opcode.WHILE else None)
        for inst, (seconds, runs, bound) in sim.charged.items()}
    notes = backend.notes(hardware.kind, hardware.name)
    if backend.backend not in ("unknown", hardware.kind) and total > 0 and sim.launch >= 0.1 * total:
        notes[-1] += (f"; here {sim.launch / total:.0%} of the step is the launch overhead of its "
                      f"{sum(1 for t in per_instruction.values() if t.bound != 'control'):,} operations")
    return TimeEstimate(hardware.name, total, sim.compute, sim.memory, sim.comm, sim.launch,
                        tuple(sim.events), sim.trip_counts, per_instruction, sim.faults,
                        tuple(sim.fresh_pages), hardware.kind, backend, tuple(notes))
