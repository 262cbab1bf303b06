"""Value statistics: for each instruction (and device), what its values held over the run.

``value_stats(module, inputs)`` runs the module with a ``StatsWatch`` (an observer, Note
[Observers] in interpret/evaluator.py) and returns a ``StatsReport``: one row per instruction,
array of its result and device, in the order the run first made them, with min, max, mean,
std, abs-max and the counts of NaN, infinities and zeros (Note [Statistics over a run]).
``select`` keeps the instructions whose name or op_name matches a regular expression, and
``save_dir`` keeps their values as npz files.

Note [Statistics over a run]
    An instruction in a loop body makes a value every iteration. Its row sums over all of
    them: ``executions`` counts them, the counts are totals and min/max/abs-max the extremes
    over every element of every execution, and mean and std are over every finite element
    (from sums of x and x^2 in float64). So a row says how large the values got anywhere,
    which is what finding where magnitudes explode or vanish needs; ``--save`` keeps each
    execution's value for a closer look. Instructions that only pass values on (tuple,
    get-tuple-element, while, call, conditional) have no rows: their values are rows of the
    instructions that made them.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hloscope.interpret.evaluator import RunOptions
from hloscope.interpret.observe import Observer, Site
from hloscope.ir import Instruction, Module, Opcode
from hloscope.ir.source_location import op_name_and_source
from hloscope.numerics.summary import all_finite, leaves

__all__ = ["StatsReport", "StatsRow", "StatsWatch", "value_stats", "STATS_COLUMNS"]

# Instructions whose values are other instructions' (Note [Statistics over a run]).
_FORWARDING = frozenset({Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT, Opcode.WHILE, Opcode.CALL,
                         Opcode.CONDITIONAL, Opcode.OPTIMIZATION_BARRIER, Opcode.AFTER_ALL,
                         Opcode.ADD_DEPENDENCY})


@dataclasses.dataclass(frozen=True)
class StatsRow:
    """One instruction's array (``index`` into a tuple result, () for an array) on one device,
    over every execution in the run (Note [Statistics over a run]). ``order`` is the position
    of its first execution among the rows (the schedule, loops unrolled)."""

    order: int
    computation: str
    name: str
    opcode: str
    index: tuple[int, ...]
    device: int
    executions: int
    shape: tuple[int, ...]
    dtype: str
    size: int  # elements over every execution
    finite: int
    nan: int
    inf: int
    zero: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    abs_max: float | None
    op_name: str | None
    source: str | None

    @property
    def label(self) -> str:
        """The instruction's name, with ``{i}`` for an element of a tuple result."""
        return self.name + ("{" + ",".join(map(str, self.index)) + "}" if self.index else "")

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["index"] = list(self.index)
        out["shape"] = list(self.shape)
        return out


STATS_COLUMNS = tuple(f.name for f in dataclasses.fields(StatsRow))


@dataclasses.dataclass(frozen=True)
class StatsReport:
    """Every row of a run's value statistics, in execution order."""

    module: str
    devices: int
    rows: tuple[StatsRow, ...]
    saved: tuple[str, ...] = ()  # npz files written (save_dir)
    save_note: str | None = None  # what was not saved, and why

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "devices": self.devices, "rows": [r.to_json() for r in self.rows],
                "saved": list(self.saved), "save_note": self.save_note}

    def to_csv(self) -> str:
        """One line per row, the columns of ``STATS_COLUMNS``."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(STATS_COLUMNS)
        for r in self.rows:
            row = []
            for k in STATS_COLUMNS:
                v = getattr(r, k)
                row.append("x".join(map(str, v)) if k == "shape" else ",".join(map(str, v)) if k == "index"
                           else "" if v is None else v)
            w.writerow(row)
        return buf.getvalue()


class _Acc:
    """Running per-device sums of one array of one instruction."""

    __slots__ = ("order", "inst", "index", "shape", "dtype", "executions", "size", "finite", "nan", "inf",
                 "zero", "sum", "sumsq", "min", "max")

    def __init__(self, order: int, inst: Instruction, index: tuple[int, ...], shape: tuple[int, ...],
                 dtype: str, n: int) -> None:
        self.order, self.inst, self.index, self.shape, self.dtype = order, inst, index, shape, dtype
        self.executions = np.zeros(n, np.int64)
        self.size = np.zeros(n, np.int64)
        self.finite = np.zeros(n, np.int64)
        self.nan = np.zeros(n, np.int64)
        self.inf = np.zeros(n, np.int64)
        self.zero = np.zeros(n, np.int64)
        self.sum = np.zeros(n)
        self.sumsq = np.zeros(n)
        self.min = np.full(n, np.inf)
        self.max = np.full(n, -np.inf)


def _moments(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row of the 2-D ``x``: finite, NaN, infinity and zero counts, sum, sum of squares,
    min and max of the finite elements (float64 results)."""
    k, m = x.shape
    if x.dtype.kind == "c":
        x = np.abs(x)
    elif x.dtype.kind == "b":
        x = x.view(np.uint8)
    if not (x.dtype == np.float32 or x.dtype == np.float64):
        x = x.astype(np.float64 if x.dtype.kind in "iu" else np.float32)
    # Row by row where numpy's whole-array loops are fast (count_nonzero and BLAS's dot have no
    # fast path along an axis); k is the number of devices.
    zero = np.array([m - np.count_nonzero(r) for r in x], np.int64)
    if all_finite(x):
        nan = inf = np.zeros(k, np.int64)
        finite = np.full(k, m, np.int64)
        values = x
        lo, hi = x.min(axis=1), x.max(axis=1)
    else:
        ok = np.isfinite(x)
        nan = np.isnan(x).sum(axis=1)
        finite = ok.sum(axis=1)
        inf = m - finite - nan
        values = np.where(ok, x, 0).astype(x.dtype)
        lo = np.where(ok, x, np.inf).min(axis=1)
        hi = np.where(ok, x, -np.inf).max(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        total = values.sum(axis=1).astype(np.float64)
        rows = values if values.flags.c_contiguous else np.ascontiguousarray(values)
        sq = np.array([float(np.dot(r, r)) for r in rows])
    return finite, nan, inf, zero, total, sq, lo.astype(np.float64), hi.astype(np.float64)


class StatsWatch(Observer):
    """An observer that gathers ``StatsRow``s (Note [Statistics over a run]).

    ``select`` (a regular expression) keeps the instructions whose name or op_name it finds;
    ``fused`` also reads the instructions inside fusions; ``save`` keeps a copy of every
    selected value (per execution and device) for ``StatsReport`` npz files, up to
    ``save_limit`` bytes in all.
    """

    def __init__(self, module: Module, num_devices: int = 1, *, select: str | None = None,
                 fused: bool = False, save: bool = False, save_limit: int = 2 << 30) -> None:
        super().__init__(module, num_devices, fused=fused)
        self.pattern = re.compile(select) if select else None
        self._selected: dict[int, bool] = {}
        self.accs: dict[tuple[int, tuple[int, ...]], _Acc] = {}
        self.save = save
        self.save_limit = save_limit
        self.saved_bytes = 0
        self.skipped_bytes = 0
        self.values: dict[int, list[tuple[int, int, Any]]] = {}  # id(inst) -> [(device, execution, value)]

    def selected(self, inst: Instruction) -> bool:
        """Whether ``inst`` gets rows (``select`` and Note [Statistics over a run])."""
        known = self._selected.get(id(inst))
        if known is None:
            known = inst.opcode not in _FORWARDING
            if known and self.pattern is not None:
                op_name = inst.metadata.op_name if inst.metadata is not None else None
                known = bool(self.pattern.search(inst.name) or (op_name and self.pattern.search(op_name)))
            self._selected[id(inst)] = known
        return known

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        if not self.selected(inst):
            return
        n = len(site.devices)
        arrays = leaves(result)
        tuple_result = isinstance(result, tuple)
        for i, x in enumerate(arrays):
            index = (i,) if tuple_result else ()
            key = (id(inst), index)
            acc = self.accs.get(key)
            stacked = site.stacked and x.ndim > 0
            shape = tuple(x.shape[1:] if stacked else x.shape)
            if acc is None:
                acc = self.accs[key] = _Acc(len(self.accs), inst, index, shape, x.dtype.name, self.num_devices)
            if stacked and x.strides[0] == 0:  # a value every device shares: its numbers once
                stats = [np.repeat(s, n) for s in _moments(x[0].reshape(1, -1))]
            else:
                stats = _moments(x.reshape(n if stacked else 1, -1))
            devices = list(site.devices) if stacked else [site.devices[0]]
            acc.executions[devices] += 1
            acc.size[devices] += int(np.prod(shape))
            acc.finite[devices] += stats[0]
            acc.nan[devices] += stats[1]
            acc.inf[devices] += stats[2]
            acc.zero[devices] += stats[3]
            acc.sum[devices] += stats[4]
            acc.sumsq[devices] += stats[5]
            acc.min[devices] = np.minimum(acc.min[devices], stats[6])
            acc.max[devices] = np.maximum(acc.max[devices], stats[7])
        if self.save:
            self._keep(site, inst, result)

    def _keep(self, site: Site, inst: Instruction, result: Any) -> None:
        size = sum(a.nbytes for a in leaves(result))
        if site.stacked and size and all(a.ndim and a.strides[0] == 0 for a in leaves(result)):
            size //= max(len(site.devices), 1)
        if self.saved_bytes + size > self.save_limit:
            self.skipped_bytes += size
            return
        self.saved_bytes += size
        kept = self.values.setdefault(id(inst), [])
        from hloscope.interpret.observe import device_values

        executions = sum(1 for d, _, _ in kept if d == site.devices[0])
        for d, v in zip(site.devices, device_values(result, site), strict=True):
            kept.append((d, executions, _copy(v)))

    def rows(self) -> list[StatsRow]:
        """The rows so far, in execution order."""
        out = []
        where: dict[int, tuple[str | None, str | None]] = {}
        for acc in sorted(self.accs.values(), key=lambda a: a.order):
            inst = acc.inst
            if id(inst) not in where:
                where[id(inst)] = op_name_and_source(inst, self.module)
            op_name, source = where[id(inst)]
            for d in range(self.num_devices):
                if not acc.executions[d]:
                    continue
                finite = int(acc.finite[d])
                mean = std = lo = hi = absmax = None
                if finite:
                    mean = float(acc.sum[d] / finite)
                    std = float(np.sqrt(max(float(acc.sumsq[d] / finite) - mean * mean, 0.0)))
                    lo, hi = float(acc.min[d]), float(acc.max[d])
                    absmax = max(abs(lo), abs(hi))
                out.append(StatsRow(acc.order, inst.computation.name if inst.computation else "?", inst.name,
                                    inst.opcode.text, acc.index, d, int(acc.executions[d]), acc.shape, acc.dtype,
                                    int(acc.size[d]), finite, int(acc.nan[d]), int(acc.inf[d]), int(acc.zero[d]),
                                    lo, hi, mean, std, absmax, op_name, source))
        return out

    def write(self, directory: str | os.PathLike[str]) -> tuple[list[str], str | None]:
        """Write the kept values: ``<name>.npz`` per instruction, arrays ``d<device>.<execution>``
        (``.<i>`` more for tuple elements). Returns the files and a note on what was left out."""
        from hloscope.interpret.npz_io import flatten_named, save_npz

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        files = []
        by_id = {id(a.inst): a.inst for a in self.accs.values()}
        for key, kept in self.values.items():
            inst = by_id.get(key)
            if inst is None:
                continue
            mapping: dict[str, np.ndarray] = {}
            for d, j, v in kept:
                mapping.update(flatten_named(f"d{d}.{j}", v))
            path = out / (re.sub(r"[^\w.\-]", "_", inst.name) + ".npz")
            save_npz(path, mapping)
            files.append(str(path))
        note = None
        if self.skipped_bytes:
            note = (f"{self.skipped_bytes / 2**20:.1f} MiB of values were not kept: past the limit of "
                    f"{self.save_limit / 2**20:.0f} MiB (use --select to keep fewer)")
        return files, note


def _copy(v: Any) -> Any:
    if isinstance(v, tuple):
        return tuple(_copy(e) for e in v)
    return np.array(v, copy=True) if isinstance(v, np.ndarray) else v


def _input_rows(module: Module, inputs: Sequence[Any], n: int, pattern: re.Pattern[str] | None) -> list[StatsRow]:
    """Rows for the entry parameters (the hooks see no parameter: they are not evaluated)."""
    params = module.entry.parameters
    per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    rows = []
    for i, p in enumerate(params):
        if pattern is not None and not pattern.search(p.name):
            continue
        op_name, source = op_name_and_source(p, module)
        for d in range(n if per_device else 1):
            args = inputs[d] if per_device else inputs
            if i >= len(args):
                continue
            value = args[i]
            arrays = leaves(value) if isinstance(value, tuple) else [np.asarray(value)]
            for k, x in enumerate(arrays):
                f, nan, inf, zero, total, sq, lo, hi = (float(s[0]) for s in _moments(x.reshape(1, -1)))
                finite = int(f)
                mean = std = None
                if finite:
                    mean = total / finite
                    std = float(np.sqrt(max(sq / finite - mean * mean, 0.0)))
                rows.append(StatsRow(-1, module.entry.name, p.name, "parameter",
                                     (k,) if isinstance(value, tuple) else (), d, 1, tuple(x.shape), x.dtype.name,
                                     int(x.size), finite, int(nan), int(inf), int(zero),
                                     lo if finite else None, hi if finite else None, mean, std,
                                     max(abs(lo), abs(hi)) if finite else None, op_name, source))
    return rows


def value_stats(module: Module, inputs: Sequence[Any] = (), *, replicas: int | None = None,
                partitions: int | None = None, select: str | None = None, fused: bool = False,
                save_dir: str | os.PathLike[str] | None = None, options: RunOptions | None = None) -> StatsReport:
    """Run ``module`` on ``inputs`` (as ``hloscope.run`` takes them) and return the statistics of
    every value it made (Note [Statistics over a run]), entry parameters first.

    ``select`` is a regular expression searched in each instruction's name and op_name;
    ``fused`` includes the instructions inside fusions; ``save_dir`` writes the selected
    values there as npz (``StatsWatch.write``).
    """
    from hloscope.interpret.run import default_grid, run

    r0, p0 = default_grid(module)
    r = replicas or r0
    p = partitions or p0
    n = r * p
    watch = StatsWatch(module, n, select=select, fused=fused, save=save_dir is not None)
    rows = _input_rows(module, inputs, n, watch.pattern)
    options = options or RunOptions()
    options = dataclasses.replace(options, hooks=[*options.hooks, watch])
    run(module, inputs, replicas=r, partitions=p, options=options)
    rows += watch.rows()
    saved: list[str] = []
    note = None
    if save_dir is not None:
        saved, note = watch.write(save_dir)
    return StatsReport(module.name, n, tuple(rows), tuple(saved), note)
