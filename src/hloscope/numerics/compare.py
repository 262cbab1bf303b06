"""Where two runs part: run two modules of one program on the same inputs and name the first
matched pair of values that differ beyond the tolerance.

``compare_modules(a, b, inputs)`` pairs the values (matching.py, Note [Matching values]), runs
``a`` keeping the values that have a partner (a ``Capture`` observer), then runs ``b`` with a
``Checker`` observer that compares each of its values, as it is made, with its partner's
(Note [Comparing values] in tolerances.py). The first pair that differs, in ``b``'s order of
execution, is the divergence; the report gives it with the error along the matched chain of
values before it (its operands' partners, which agreed) and after it (where the difference
went).

Note [Global and partitioned]
    A sharded program before XLA's partitioner is one global program (Note [Global programs]
    in interpret/spmd.py), after it one program per device. Comparing the two: a value of the
    global run is compared with the devices' values when every device holds the same (a
    replicated value), or with the devices' values put together along the dimensions where
    the global shape is a whole multiple of the device's (shards, devices in row-major order
    over those dimensions, then column-major if that fails). A per-device value of the same
    shape that differs between devices (a partial sum before its all-reduce) is a different
    value and is not compared. Inside a manual region both sides are per device.
"""
from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from hloscope.interpret.evaluator import RunOptions
from hloscope.interpret.observe import LoopIteration, Observer, Site, device_values
from hloscope.ir import ArrayShape, Instruction, Module, Opcode
from hloscope.ir.source_location import op_name_and_source
from hloscope.numerics.matching import Matching, match_values, precision_floor
from hloscope.numerics.summary import is_float, leaves
from hloscope.numerics.tolerances import difference, tolerance_for

__all__ = ["CompareReport", "Divergence", "PairError", "ValueRef", "assemble_shards", "compare_modules", "pair_error",
           "worst_error"]


@dataclasses.dataclass(frozen=True)
class ValueRef:
    """One side of a matched pair: an instruction and where it is."""

    name: str
    opcode: str
    computation: str
    shape: str
    op_name: str | None
    source: str | None
    text: str

    @staticmethod
    def of(inst: Instruction) -> ValueRef:
        op_name, source = op_name_and_source(inst)
        try:
            text = inst.to_text(metadata=False)
        except Exception:
            text = repr(inst)
        return ValueRef(inst.name, inst.opcode.text, inst.computation.name if inst.computation else "?",
                        inst.shape.to_text(layout=False), op_name, source, text)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class PairError:
    """How far one matched pair's values were apart (Note [Comparing values]): the largest
    absolute difference, the scale it is measured against, ``error`` in tolerances (above 1:
    they differ) and the tolerance used. ``execution`` counts the pair's executions (loop
    iterations) from 0; ``devices`` are those compared."""

    a: str
    b: str
    max_abs: float
    scale: float
    error: float
    rtol: float | None
    atol: float | None
    execution: int
    devices: tuple[int, ...]

    @property
    def agrees(self) -> bool:
        return self.error <= 1.0

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "max_abs_difference": _num(self.max_abs), "scale": _num(self.scale),
                "error": _num(self.error), "rtol": self.rtol, "atol": self.atol, "execution": self.execution,
                "devices": list(self.devices), "agrees": self.agrees}


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


@dataclasses.dataclass(frozen=True)
class Divergence:
    """The first matched pair whose values differ: ``a`` and ``b``, the error, the devices and
    loop iterations where it happened (in ``b``), and the error along the matched chain before
    (ancestors of ``b`` whose partners agreed, nearest first) and after it (where it went)."""

    a: ValueRef
    b: ValueRef
    error: PairError
    devices: tuple[int, ...]
    loops: tuple[LoopIteration, ...]
    before: tuple[PairError, ...]
    after: tuple[PairError, ...]
    unmatched_operands: tuple[str, ...]  # operands of b with no partner (e.g. a changed constant)
    within: tuple[ValueRef, ...] = ()  # the fusions, calls and loops it is inside, outermost first

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a.to_json(), "b": self.b.to_json(), "error": self.error.to_json(),
                "devices": list(self.devices), "loops": [lp.to_json() for lp in self.loops],
                "within": [w.to_json() for w in self.within],
                "chain_before": [e.to_json() for e in self.before],
                "chain_after": [e.to_json() for e in self.after],
                "unmatched_operands": list(self.unmatched_operands)}


@dataclasses.dataclass(frozen=True)
class CompareReport:
    """The result of ``compare_modules``: how many values matched and were compared, the
    largest error among the pairs that agree, and the first divergence (None: they agree)."""

    a: str
    b: str
    matched: int
    compared: int
    skipped: int  # matched pairs not compared (per-device parts of a global value, ...)
    values_b: int
    worst: PairError | None  # the largest error of a pair that agreed
    first_divergence: Divergence | None
    pairs: tuple[PairError, ...] = dataclasses.field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "matched": self.matched, "compared": self.compared,
                "skipped": self.skipped, "values_b": self.values_b,
                "worst_agreeing": None if self.worst is None else self.worst.to_json(),
                "first_divergence": None if self.first_divergence is None else self.first_divergence.to_json()}

    def describe(self) -> str:
        lines = [f"{self.a} vs {self.b}: {self.matched} of {self.b}'s {self.values_b} values matched, "
                 f"{self.compared} compared ({self.skipped} not comparable)"]
        if self.worst is not None:
            w = self.worst
            lines.append(f"  largest agreeing error: {w.error:.3g} tolerances ({w.b} vs {w.a}, "
                         f"max |a - b| {w.max_abs:.3g} at scale {w.scale:.3g})")
        d = self.first_divergence
        if d is None:
            lines.append("no divergence: every compared pair agrees within the tolerance")
            return "\n".join(lines)
        e = d.error
        on = ",".join(map(str, d.devices))
        lines.append(f"first divergence: {d.b.name} ({d.b.opcode}, in {d.b.computation}) of {self.b} vs "
                     f"{d.a.name} ({d.a.opcode}, in {d.a.computation}) of {self.a}, device(s) {on}")
        if d.loops:
            lines.append("  in " + ", ".join(f"iteration {lp.iteration} of {lp.loop}" for lp in d.loops))
        if d.within:
            lines.append("  inside " + " > ".join(f"{w.name} ({w.opcode})" for w in d.within))
        lines.append(f"  max |a - b| {e.max_abs:.6g} at scale {e.scale:.6g}: {e.error:.3g} tolerances "
                     f"(rtol {e.rtol}, atol {e.atol})")
        lines.append(f"  b: {d.b.text}")
        lines.append(f"  a: {d.a.text}")
        if d.b.op_name or d.a.op_name:
            lines.append(f"  op_name: {d.b.op_name or d.a.op_name}")
        if d.b.source or d.a.source:
            lines.append(f"  source: {d.b.source or d.a.source}")
        if d.unmatched_operands:
            lines.append(f"  operands of {d.b.name} with no partner in {self.a}: {', '.join(d.unmatched_operands)}")
        for title, chain in (("before (agreeing operands)", d.before), ("after", d.after)):
            if chain:
                lines.append(f"  chain {title}: " + "; ".join(f"{p.b}~{p.a} {p.error:.3g}" for p in chain))
        return "\n".join(lines)


# --- the two runs -------------------------------------------------------------------------------


class _Capture(Observer):
    """Keeps the values of ``wanted`` instructions: per instruction a list of executions, each
    (devices, stacked, in a manual region, value)."""

    def __init__(self, module: Module, n: int, wanted: set[int], global_run: bool) -> None:
        super().__init__(module, n, fused=True)
        self.wanted = wanted
        self.global_run = global_run  # a global program: values outside manual regions are global
        self.values: dict[tuple[int, int], list[Any]] = defaultdict(list)  # (id, device or -1) -> executions

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        if id(inst) not in self.wanted:
            return
        if site.stacked:
            for d, v in enumerate(device_values(result, site)):
                self.values[(id(inst), d)].append(v)
        elif self.global_run and not site.context.in_region:
            self.values[(id(inst), -1)].append(result)
        else:
            self.values[(id(inst), site.devices[0])].append(result)


class _Checker(Observer):
    """Compares ``b``'s values with the captured partners as they are made (Note [Global and
    partitioned]: a device's values wait until every device's of the same execution came)."""

    def __init__(self, module: Module, n: int, matching: Matching, captured: _Capture,
                 tolerances: dict | None, floors: dict[Instruction, np.dtype] | None = None) -> None:
        super().__init__(module, n, fused=True)
        self.matching = matching
        self.floors = floors or {}
        self.captured = captured.values
        self.tolerances = tolerances
        self.global_run = False  # b's values outside manual regions are global
        self.executions: dict[tuple[int, int], int] = defaultdict(int)
        self.waiting: dict[tuple[int, int], dict[int, Any]] = {}
        self.results: list[tuple[int, Instruction, PairError, Site]] = []
        self.skipped = 0

    def observe(self, site: Site, inst: Instruction, operands: list[Any], result: Any) -> None:
        a = self.matching.partner.get(inst)
        if a is None:
            return
        if self.global_run and not site.context.in_region and not site.stacked:
            j = self.executions[(id(inst), -1)]
            self.executions[(id(inst), -1)] += 1
            self._check(site, a, inst, j, None, [result])
            return
        values = device_values(result, site) if site.stacked else [result]
        devices = site.devices if site.stacked else site.devices[:1]
        j = self.executions[(id(inst), devices[0])]
        for d in devices:
            self.executions[(id(inst), d)] += 1
        if len(devices) == self.num_devices:
            self._check(site, a, inst, j, list(devices), values)
            return
        waiting = self.waiting.setdefault((id(inst), j), {})
        waiting.update(zip(devices, values))
        if len(waiting) == self.num_devices:
            del self.waiting[(id(inst), j)]
            self._check(site, a, inst, j, sorted(waiting), [waiting[d] for d in sorted(waiting)])

    def _check(self, site: Site, a: Instruction, b: Instruction, j: int, devices: list[int] | None,
               ours: list[Any]) -> None:
        """Compare execution ``j`` of ``b`` (its values on ``devices``; None: one global value)."""
        glob = _execution(self.captured.get((id(a), -1)), j)
        err = None
        tol, floor = self.tolerances, self.floors.get(b)
        if glob is not None and devices is None:
            err = pair_error(a, b, glob, ours[0], tol, j, (), floor)
        elif glob is not None and devices is not None:
            err = _global_pair(a, b, glob, ours, tol, j, tuple(devices), floor)
        else:
            everyone = range(self.num_devices) if devices is None else devices
            theirs = [_execution(self.captured.get((id(a), d)), j) for d in everyone]
            if all(t is not None for t in theirs):
                if devices is None:  # b global, a per device
                    err = _global_pair(a, b, ours[0], theirs, tol, j, tuple(everyone), floor)
                else:
                    err = worst_error([pair_error(a, b, x, y, tol, j, (d,), floor) for d, x, y in zip(devices, theirs, ours)])
        if err is None:
            self.skipped += 1
        else:
            site.loops  # noqa: B018  (taken now: Site.loops reads the loop stack when first read)
            self.results.append((site.position, b, err, site))


def _execution(runs: list[Any] | None, j: int) -> Any:
    """Execution ``j`` of a captured value; a value made once stands for every execution
    (loop-invariant code XLA hoisted out of a loop)."""
    if not runs:
        return None
    if j < len(runs):
        return runs[j]
    return runs[0] if len(runs) == 1 else None


def _tolerance(dtype: np.dtype, floor: np.dtype | None, tolerances: dict | None) -> dict | None:
    """The tolerance of a value of ``dtype`` computed from values as coarse as ``floor``."""
    if floor is not None and is_float(dtype):
        dtype = floor
    return tolerance_for(dtype, overrides=tolerances)


def pair_error(a: Instruction, b: Instruction, x: Any, y: Any, tolerances: dict | None, j: int,
               devices: tuple[int, ...], floor: np.dtype | None = None) -> PairError | None:
    """How far ``a``'s value ``x`` and ``b``'s value ``y`` (execution ``j`` on ``devices``) are
    apart: the worst of their arrays; None when they cannot be compared (shapes differ)."""
    xs, ys = leaves(x), leaves(y)
    if len(xs) != len(ys) or not xs:
        return None
    worst = None
    for p, q in zip(xs, ys):
        if p.shape != q.shape:
            return None
        tol = _tolerance(q.dtype, floor, tolerances)
        if tol is not None and a.opcode is Opcode.CONSTANT and b.opcode is Opcode.CONSTANT:
            tol = {**tol, "atol": 0.0}  # written, not computed: a tiny constant (an epsilon) is no rounding
        err, scale, rel = difference(p, q, tol)
        cand = PairError(a.name, b.name, err, scale, rel, None if tol is None else tol["rtol"],
                         None if tol is None else tol["atol"], j, devices)
        worst = cand if worst is None or cand.error > worst.error else worst
    return worst


def worst_error(errs: list[PairError | None]) -> PairError | None:
    """The largest of several devices' errors, naming every device where the pair differs."""
    known = [e for e in errs if e is not None]
    if not known:
        return None
    top = max(known, key=lambda e: e.error)
    bad = tuple(d for e in known if not e.agrees for d in e.devices)
    return dataclasses.replace(top, devices=bad or tuple(d for e in known for d in e.devices))


def _global_pair(a: Instruction, b: Instruction, g: Any, ours: list[Any], tolerances: dict | None, j: int,
                 devices: tuple[int, ...], floor: np.dtype | None = None) -> PairError | None:
    """A global value against every device's (Note [Global and partitioned])."""
    gs = leaves(g)
    per = [leaves(v) for v in ours]
    if not gs or any(len(p) != len(gs) for p in per):
        return None
    worst = None
    for k, x in enumerate(gs):
        parts = [p[k] for p in per]
        if parts[0].shape == x.shape:
            if not all(np.array_equal(parts[0], q, equal_nan=parts[0].dtype.kind in "fc") for q in parts[1:]):
                return None  # a per-device part of it (a partial sum), not the value
            y = parts[0]
        else:
            y = assemble_shards(parts, x.shape, x, _tolerance(x.dtype, floor, tolerances))
            if y is None:
                return None
        tol = _tolerance(y.dtype, floor, tolerances)
        err, scale, rel = difference(x, y, tol)
        cand = PairError(a.name, b.name, err, scale, rel, None if tol is None else tol["rtol"],
                         None if tol is None else tol["atol"], j, devices)
        worst = cand if worst is None or cand.error > worst.error else worst
    return worst


def assemble_shards(parts: list[np.ndarray], shape: tuple[int, ...], reference: np.ndarray,
              tol: dict | None) -> np.ndarray | None:
    """The devices' shards put together into ``shape`` (Note [Global and partitioned]); None
    when they are no shards of one value: the devices holding each shard must agree (a
    partial sum differs between them)."""
    local = parts[0].shape
    if len(local) != len(shape) or any(t == 0 or s % t for s, t in zip(shape, local)):
        return None
    factors = [s // t for s, t in zip(shape, local)]
    count = int(np.prod(factors))
    n = len(parts)
    if count == 0 or n % count:
        return None
    rep = n // count
    shards = None
    # Which devices hold shard s: a block of ``rep`` neighbours (the split mesh axis is the
    # major one), or every count-th device (it is the minor one).
    for holders in ([list(range(s * rep, (s + 1) * rep)) for s in range(count)],
                    [list(range(s, n, count)) for s in range(count)]):
        if all(np.array_equal(parts[h[0]], parts[k], equal_nan=True) for h in holders for k in h[1:]):
            shards = [parts[h[0]] for h in holders]
            break
    if shards is None:
        return None
    split = [i for i, f in enumerate(factors) if f > 1]
    best = None
    for order in ("C", "F"):
        out = np.empty(shape, parts[0].dtype)
        for k, shard in enumerate(shards):
            pos = np.unravel_index(k, [factors[i] for i in split], order=order)
            where = [slice(None)] * len(shape)
            for axis, q in zip(split, pos):
                where[axis] = slice(q * local[axis], (q + 1) * local[axis])
            out[tuple(where)] = shard
        rel = difference(reference, out, tol)[2]
        if best is None or rel < best[0]:
            best = (rel, out)
        if rel <= 1.0 or len(split) < 2:
            break
    return None if best is None else best[1]


# --- the entry point -----------------------------------------------------------------------------


def _inputs_for(module: Module, other: Module, inputs: Sequence[Any], n: int) -> Sequence[Any]:
    """``inputs`` made fit ``module``: a partitioned module given a global program's global
    inputs gets each device's shard, cut by the global program's parameter shardings."""
    from hloscope.interpret.run import input_shards, is_global_run

    params = module.entry.parameters
    per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    if n == 1 or per_device or is_global_run(module, inputs, n):
        return inputs
    fits = all(not isinstance(p.shape, ArrayShape) or np.shape(x) == tuple(p.shape.dimensions)
               for x, p in zip(inputs, params))
    if fits:
        return inputs
    return input_shards(other, inputs, n)


def compare_modules(a: Module, b: Module, inputs: Sequence[Any] = (), *, inputs_b: Sequence[Any] | None = None,
                    replicas: int | None = None, partitions: int | None = None,
                    tolerances: dict | None = None, options: RunOptions | None = None,
                    chain: int = 6) -> CompareReport:
    """Run ``a`` and ``b`` (two modules of one program) on the same ``inputs`` and compare every
    matched pair of values (Note [Matching values] in matching.py, Note [Comparing values] in
    tolerances.py). ``inputs_b`` when ``b`` takes other arrays (a partitioned module's shards);
    by default they are ``inputs``, cut into shards when ``a`` is the global program of a
    partitioned ``b`` (Note [Global and partitioned]). ``tolerances`` overrides the per-dtype
    table: ``{"rtol": .., "atol": ..}`` for every float dtype, or one such dict per dtype name.
    ``chain`` bounds the matched chain reported on each side of the divergence.
    """
    from hloscope.interpret.run import default_grid

    matching = match_values(a, b)
    ra, pa = default_grid(a)
    rb, pb = default_grid(b)
    r = replicas or max(ra, rb)
    p = partitions or max(pa, pb)
    n = r * p
    options = options or RunOptions()
    inputs_a = list(inputs)
    if inputs_b is None:
        inputs_b = _inputs_for(b, a, inputs_a, n)
    capture = _Capture(a, n, {id(x) for x in matching.partner.values()}, _run(a, inputs_a, r, p, options, []))
    _run(a, inputs_a, r, p, options, [capture])
    checker = _Checker(b, n, matching, capture, tolerances, _floors(a, b, matching))
    checker.global_run = _run(b, inputs_b, r, p, options, [])
    _run(b, inputs_b, r, p, options, [checker])
    return _report(a, b, matching, checker, chain)


def _floors(a: Module, b: Module, matching: Matching) -> dict[Instruction, np.dtype]:
    """For each value of ``b``, the coarsest float type it (or its partner in ``a``) was
    computed from: its tolerance's dtype (``matching.precision_floor``)."""
    from hloscope.ir.dtypes import dtype_of

    looseness = {}
    for name in ("f64", "f32", "f16", "bf16", "c64", "c128", "f8e4m3fn", "f8e5m2"):
        try:
            tol = tolerance_for(dtype_of(name))
        except (KeyError, ValueError):
            continue
        if tol is not None:
            looseness[name] = tol["rtol"]
    fa, fb = precision_floor(a, looseness), precision_floor(b, looseness)
    out = {}
    for inst, pa in matching.partner.items():
        names = [f for f in (fb.get(inst), fa.get(pa)) if f is not None]
        if names:
            out[inst] = dtype_of(max(names, key=lambda f: looseness[f]))
    return out


_IMPURE = frozenset({Opcode.REPLICA_ID, Opcode.PARTITION_ID, Opcode.RNG})


def _uniform(module: Module, inputs: Sequence[Any], n: int) -> bool:
    """Every device computes the same: the same inputs, and no collective, device id or
    random number (a sharded program before XLA's partitioner, run as jax would see it)."""
    per_device = n > 1 and len(inputs) == n and all(isinstance(x, list) for x in inputs)
    return not per_device and not any(i.opcode.family is Opcode.ALL_REDUCE.family or i.opcode in _IMPURE
                                      for i in module.instructions())


def _run(module: Module, inputs: Sequence[Any], r: int, p: int, options: RunOptions, hooks: list[Any]) -> bool:
    """Run ``module`` with ``hooks`` (nothing when there are none) and say whether its values
    are global (Note [Global and partitioned]): a global program, or one every device would
    compute alike, which then runs once."""
    from hloscope.interpret.run import is_global_run, run

    n = r * p
    uniform = n > 1 and _uniform(module, inputs, n)
    global_run = n > 1 and (uniform or is_global_run(module, inputs, n))
    if hooks:
        opts = dataclasses.replace(options, hooks=[*options.hooks, *hooks])
        if uniform:
            run(module, inputs, replicas=1, partitions=1, options=opts)
        else:
            run(module, inputs, replicas=r, partitions=p, options=opts)
    return global_run


def _report(a: Module, b: Module, matching: Matching, checker: _Checker, chain: int) -> CompareReport:
    results = sorted(checker.results, key=lambda r: r[0])
    first = next((r for r in results if not r[2].agrees), None)
    agreeing = [r[2] for r in results if r[2].agrees]
    worst = max(agreeing, key=lambda e: e.error) if agreeing else None
    divergence = None
    if first is not None:
        _, inst, err, site = first
        divergence = _divergence(matching, results, inst, err, site, chain)
    from hloscope.numerics.matching import value_instructions

    return CompareReport(a.name, b.name, len(matching), len(results), checker.skipped, len(value_instructions(b)),
                         worst, divergence, tuple(r[2] for r in results))


def _divergence(matching: Matching, results: list[tuple[int, Instruction, PairError, Site]], inst: Instruction,
                err: PairError, site: Site, chain: int) -> Divergence:
    worst: dict[int, PairError] = {}
    for _, b, e, _ in results:
        if id(b) not in worst or e.error > worst[id(b)].error:
            worst[id(b)] = e
    before = []
    cur = inst
    seen = {id(inst)}
    for _ in range(chain):  # up through the operand with the largest error that was compared
        ops = [_value_source(o) for o in cur.operands]
        cands = [o for o in ops if id(o) in worst and id(o) not in seen]
        if not cands:
            break
        cur = max(cands, key=lambda o: worst[id(o)].error)
        seen.add(id(cur))
        before.append(worst[id(cur)])
    after = []
    cur = inst
    for _ in range(chain):  # down through the user with the largest error
        users = [u for u in _value_users(cur) if id(u) in worst and id(u) not in seen]
        if not users:
            break
        cur = max(users, key=lambda u: worst[id(u)].error)
        seen.add(id(cur))
        after.append(worst[id(cur)])
    unmatched = tuple(o.name for o in inst.operands if o not in matching.partner and o.opcode is not Opcode.PARAMETER)
    a = matching.partner[inst]
    return Divergence(ValueRef.of(a), ValueRef.of(inst), err, err.devices, site.loops, tuple(before), tuple(after),
                      unmatched)


def _value_source(inst: Instruction) -> Instruction:
    """Where a fused parameter's value comes from: the fusion's operand (else ``inst``)."""
    comp = inst.computation
    if inst.opcode is Opcode.PARAMETER and comp is not None and comp.module is not None:
        for caller in comp.module.instructions():
            if caller.opcode is Opcode.FUSION and comp in caller.called_computations:
                return caller.operands[inst.parameter_number]
    return inst


def _value_users(inst: Instruction) -> list[Instruction]:
    """The users of ``inst``'s value, through fusions (into the fused parameter's users) and
    out of a fused root (the fusion's users)."""
    out = []
    for u in inst.users:
        if u.opcode is Opcode.FUSION:
            comp = u.called_computations[0]
            for k, o in enumerate(u.operands):
                if o is inst and k < len(comp.parameters):
                    out.extend(comp.parameters[k].users)
        out.append(u)
    comp = inst.computation
    if comp is not None and inst is comp.root and comp.module is not None:
        for caller in comp.module.instructions():
            if caller.opcode is Opcode.FUSION and comp in caller.called_computations:
                out.extend(caller.users)
    return out
