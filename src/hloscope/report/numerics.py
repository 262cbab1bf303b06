"""The report's Numerics section: value statistics along the schedule, from a run on inputs.

``numerics_section(module, inputs)`` runs the module once with hloscope.numerics' statistics
observer and returns a report section (Note [Report sections] in data.py) the page's
Numerics tab (assets/numerics.js) draws: one row per instruction (over its executions, and
over the devices), and the instructions where magnitudes explode or vanish (Note [Growth]).
The run is the one place the report computes something; it happens only when inputs are
given (``hloscope report FILE --inputs IN.npz`` or ``--random SEED``).

Note [Growth]
    How much an instruction changes the size of what it reads: the abs-max of its result
    over the largest abs-max of its operands (both over every execution and device). A
    ratio far above 1 is where values explode (an exp of a large logit, a division by a
    small variance), far below 1 where they vanish (a product of small gradients); the page
    lists the largest and smallest, with the first non-finite value on top when there is one.
    A result whose abs-max is its type's largest finite value is a mask written as
    ``finfo.min`` (the GPT step's attention mask: 3.4e38, "7e38 times its operands"), left out.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.ir import ArrayShape
from hloscope.ir.dtypes import dtype_of
from hloscope.ir.module import Module

__all__ = ["NUMERICS_COLUMNS", "numerics_section"]

NUMERICS_COLUMNS = ("name", "computation", "opcode", "shape", "executions", "devices", "min", "max", "mean", "std",
                    "abs_max", "nan", "inf", "zero", "op_name", "source")
_TOP = 25


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def numerics_section(module: Module, inputs: Sequence[Any], *, replicas: int | None = None,
                     partitions: int | None = None, options: Any = None, limit: int = 20000) -> dict[str, Any]:
    """The Numerics section: ``{"status", "message", "data"}`` (Note [Report sections]);
    ``data`` holds ``columns``, ``rows`` (at most ``limit``, in execution order), ``growth``
    (Note [Growth]) and ``first_nonfinite`` (where the first NaN or infinity was born:
    ``FirstNonfinite.to_json()``, from the same run)."""
    try:
        from hloscope.interpret.evaluator import RunOptions
        from hloscope.interpret.run import default_grid
        from hloscope.numerics.nonfinite import NonfiniteWatch, conclude, input_records
        from hloscope.numerics.stats import value_stats

        r0, p0 = default_grid(module)
        r, p = replicas or r0, partitions or p0
        watch = NonfiniteWatch(module, r, p, stop=False)  # the same run says where a NaN is born
        options = options or RunOptions()
        options = dataclasses.replace(options, hooks=[*options.hooks, watch])
        report = value_stats(module, inputs, replicas=r, partitions=p, options=options)
        born = conclude(watch, input_records(module, inputs, r * p))
    except Exception as e:  # a run that fails is a note in the tab, never a broken report
        return {"status": "error", "message": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                "data": None}
    merged: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
    for r in report.rows:
        key = (r.name, r.index)
        row = merged.get(key)
        if row is None:
            merged[key] = {"name": r.label, "computation": r.computation, "opcode": r.opcode,
                           "shape": f"{r.dtype}[{','.join(map(str, r.shape))}]", "executions": r.executions,
                           "devices": 1, "min": r.min, "max": r.max, "mean": r.mean, "std": r.std,
                           "abs_max": r.abs_max, "nan": r.nan, "inf": r.inf, "zero": r.zero,
                           "op_name": r.op_name, "source": r.source, "_means": [r.mean] if r.mean is not None else []}
            continue
        row["devices"] += 1
        for k, pick in (("min", min), ("max", max), ("abs_max", max), ("std", max)):
            v = getattr(r, k)
            if v is not None:
                row[k] = v if row[k] is None else pick(row[k], v)
        row["nan"] += r.nan
        row["inf"] += r.inf
        row["zero"] += r.zero
        if r.mean is not None:
            row["_means"].append(r.mean)
    rows = list(merged.values())
    for row in rows:
        means = row.pop("_means")
        row["mean"] = sum(means) / len(means) if means else None
    growth = _growth(module, rows)
    first = None if born is None else born.to_json()
    data = {"columns": list(NUMERICS_COLUMNS),
            "rows": [[_num(r[c]) if c in ("min", "max", "mean", "std", "abs_max") else r[c] for c in NUMERICS_COLUMNS]
                     for r in rows[:limit]],
            "total_rows": len(rows), "devices": report.devices, "growth": growth, "first_nonfinite": first}
    return {"status": "ok", "message": "", "data": data}


def _is_sentinel(inst: Any, abs_max: float) -> bool:
    """Whether ``inst``'s largest value is its float type's largest finite one: a mask written
    as ``finfo.min`` (attention masks, ``where(mask, x, -big)``), not a value that grew."""
    leaf = next((s for _, s in inst.shape.leaves()), None)
    if not isinstance(leaf, ArrayShape):
        return False
    try:
        dtype = dtype_of(leaf.element_type)
        return bool(np.issubdtype(dtype, np.floating) or dtype.kind == "V") and abs_max == float(ml_dtypes.finfo(dtype).max)
    except (TypeError, ValueError, KeyError):  # not a float type ml_dtypes knows
        return False


def _growth(module: Module, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The instructions that grow or shrink their operands' magnitudes the most (Note [Growth])."""
    size = {r["name"]: r["abs_max"] for r in rows}
    out = []
    for comp in module.computations:
        for inst in comp.instructions:
            mine = size.get(inst.name)
            if mine is None or not inst.operands or _is_sentinel(inst, mine):
                continue
            theirs = [size.get(o.name) for o in inst.operands]
            known = [t for t in theirs if t is not None]
            if not known:
                continue
            biggest = max(known)
            if biggest == 0 and mine == 0:
                continue
            ratio = math.inf if biggest == 0 else mine / biggest
            out.append({"name": inst.name, "opcode": inst.opcode.text, "ratio": ratio, "abs_max": mine,
                        "operands_abs_max": biggest})
    finite = [g for g in out if math.isfinite(g["ratio"]) and g["ratio"] > 0]
    explode = sorted((g for g in finite if g["ratio"] > 1), key=lambda g: -g["ratio"])[:_TOP]
    vanish = sorted((g for g in finite if g["ratio"] < 1), key=lambda g: g["ratio"])[:_TOP]
    return {"explode": [{**g, "log10": math.log10(g["ratio"])} for g in explode],
            "vanish": [{**g, "log10": math.log10(g["ratio"])} for g in vanish]}
