"""Cost analysis: a module's FLOPs, transcendentals and bytes accessed, as XLA counts them and
loop-aware, with the costliest instructions.

``analyze_cost(m).total`` equals XLA's ``hlo_module_cost_analysis`` of the same text; the
per-opcode rules it sums are ``analysis/cost_rules.py``'s (re-exported here). This module adds
what goes beyond XLA: custom calls counted by what they mean, and loop-aware totals.

Note [Loop-aware totals]
    XLA counts a while loop's body and condition once. ``CostReport.loop_aware`` multiplies
    them by the trip count ``analysis.trip_count`` infers (one iteration when unknown), and
    also charges custom calls by what they mean (cuBLAS gemms, cuDNN convolutions, TopK,
    threefry; sharding annotations nothing, Note [Sharding annotations cost nothing]; any
    other custom call the bytes of its operands and results), which XLA leaves out (-1 each).
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hloscope.analysis.async_ops import async_wrapped_instruction
from hloscope.analysis.cost_rules import (
    COST_RULES,
    ELEMENTWISE,
    FMA_FLOPS,
    NO_COST,
    TRANSCENDENTAL,
    ZERO,
    Cost,
    CostAnalyzer,
    convolution_flops,
    cost_rule,
    elements,
    instruction_cost,
    leaf_elements,
    shape_bytes,
    transpose_is_bitcast,
)
from hloscope.analysis.trip_count import infer_trip_count
from hloscope.gc_pause import without_cyclic_gc
from hloscope.ir import ArrayShape, Computation, Instruction, Module, Opcode
from hloscope.ir.shape import Shape

__all__ = [
    "Cost",
    "CostReport",
    "InstructionCost",
    "NO_COST",
    "analyze_cost",
    "cost_rule",
    "custom_call_cost",
    "custom_call_bytes",
    "SHARDING_ANNOTATIONS",
    "async_wrapped_instruction",
    "instruction_cost",
    "shape_bytes",
    "COST_RULES",
    "CUSTOM_CALL_RULES",
    "costs_by_opcode",
    # the rules' vocabulary, re-exported for callers that know it from here
    "ELEMENTWISE",
    "FMA_FLOPS",
    "TRANSCENDENTAL",
    "ZERO",
    "convolution_flops",
    "elements",
    "transpose_is_bitcast",
]

# --------------------------------------------------------------------------------------------
# Custom calls by meaning (beyond XLA)

CustomCostFn = Callable[[Instruction], Cost]
CUSTOM_CALL_RULES: dict[str, CustomCostFn] = {}


def _custom_rule(*targets: str) -> Callable[[CustomCostFn], CustomCostFn]:
    def register(fn: CustomCostFn) -> CustomCostFn:
        for t in targets:
            CUSTOM_CALL_RULES[t] = fn
        return fn

    return register


def _first_leaf(shape: Shape) -> ArrayShape:
    return next(leaf for _, leaf in shape.leaves())


@_custom_rule("__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8")
def _gemm(inst: Instruction) -> Cost:
    cfg = inst.backend_config.json() if inst.backend_config is not None else None
    cfg = (cfg or {}).get("gemm_backend_config", cfg or {})
    dnums = cfg.get("dot_dimension_numbers", {})
    lhs = _first_leaf(inst.operands[0].shape)
    contracting = [int(d) for d in dnums.get("lhs_contracting_dimensions", [lhs.rank - 1])]
    out = _first_leaf(inst.shape)
    flops = FMA_FLOPS * out.element_count * math.prod(lhs.dimensions[d] for d in contracting)
    if float(cfg.get("beta", 0) or 0) != 0:
        flops += 2 * out.element_count  # beta * C added to the product
    return Cost(flops, 0, custom_call_bytes(inst))


@_custom_rule("__cudnn$convForward", "__cudnn$convBackwardInput", "__cudnn$convBackwardFilter",
              "__cudnn$convBiasActivationForward")
def _cudnn_conv(inst: Instruction) -> Cost:
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    flops = convolution_flops(inst, lhs, rhs, _first_leaf(inst.shape)) if "dim_labels" in inst.attrs else 0
    return Cost(flops, 0, custom_call_bytes(inst))


@_custom_rule("TopK")
def _topk(inst: Instruction) -> Cost:
    n = _first_leaf(inst.operands[0].shape).element_count
    k = _first_leaf(inst.shape).dimensions[-1] if _first_leaf(inst.shape).dimensions else 1
    return Cost(n * max(1, (k - 1).bit_length()), 0, custom_call_bytes(inst))


# FLOPs per output word of jax's Threefry-2x32 (20 rounds of add, rotate, xor plus key
# injections), measured as XLA counts jax's own HLO lowering of the same function.
THREEFRY_FLOPS_PER_WORD = 94


@_custom_rule("cuda_threefry2x32", "cu_threefry2x32", "hip_threefry2x32")
def _threefry(inst: Instruction) -> Cost:
    words = leaf_elements(inst.shape)
    return Cost(THREEFRY_FLOPS_PER_WORD * words, 0, custom_call_bytes(inst))


# Note [Sharding annotations cost nothing]
#     A module before XLA's optimizations carries its sharding as custom calls: GSPMD's
#     ``Sharding``, ``SPMDFullToShardShape`` and ``SPMDShardToFullShape``, and Shardy's
#     ``xla.sdy.*`` (constants.h in xla/service/spmd/shardy). XLA's partitioner removes them
#     (or makes them copies of a shard it then elides); they move no data and compute nothing.
#     Counting their operands and results as unknown custom calls made the loop-aware bytes of
#     a jax GPT step before optimizations 2.43 GiB where XLA's cost analysis says 1.75 GiB.
SHARDING_ANNOTATIONS = frozenset({
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
    "xla.sdy.FuncResultSharding", "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape",
    "xla.sdy.ShardingGroup", "xla.sdy.PropagationBarrier",
})


@_custom_rule(*SHARDING_ANNOTATIONS)
def _sharding_annotation(inst: Instruction) -> Cost:
    return ZERO


def custom_call_bytes(inst: Instruction) -> int:
    return sum(shape_bytes(leaf) for _, leaf in inst.shape.leaves()) + sum(
        shape_bytes(leaf) for o in inst.operands for _, leaf in o.shape.leaves())


def custom_call_cost(inst: Instruction) -> Cost | None:
    """What a custom call costs by meaning, or None when hloscope does not know its target."""
    fn = CUSTOM_CALL_RULES.get(inst.custom_call_target or "")
    return fn(inst) if fn is not None else None



# --------------------------------------------------------------------------------------------
# The analysis

@dataclass(frozen=True)
class InstructionCost:
    """One instruction's cost with where it came from."""

    computation: str
    name: str
    opcode: str
    cost: Cost
    op_name: str | None = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"computation": self.computation, "name": self.name, "opcode": self.opcode,
                **self.cost.to_json(), "op_name": self.op_name, "source": self.source}


@dataclass(frozen=True)
class CostReport:
    """Module totals as XLA counts them, loop-aware totals, and per-instruction costs.

    ``total`` equals XLA's ``hlo_module_cost_analysis`` (custom calls count -1 as XLA's do);
    ``loop_aware`` multiplies while loops by ``trip_counts`` and counts custom calls by meaning.
    """

    total: Cost
    loop_aware: Cost
    trip_counts: dict[str, int | None]
    per_instruction: dict[Instruction, Cost] = field(repr=False)
    per_computation: dict[str, Cost] = field(repr=False)
    loop_aware_per_instruction: dict[Instruction, Cost] = field(repr=False)

    @property
    def flops(self) -> float:
        return self.total.flops

    @property
    def transcendentals(self) -> float:
        return self.total.transcendentals

    @property
    def bytes_accessed(self) -> float:
        return self.total.bytes_accessed

    def top(self, n: int = 20, *, key: str = "flops") -> list[InstructionCost]:
        """The ``n`` costliest instructions (loop-aware, top-level and nested) by ``key``."""
        # Control flow rows would repeat their bodies' costs; list the work itself (an async
        # op written as sugar has no body: it is the work, unless it wraps a call).
        rows = ((i, c) for i, c in self.loop_aware_per_instruction.items()
                if _runs_work_itself(i))
        # nlargest is sorted(..., reverse=True)[:n] (ties in table order) in O(rows log n).
        items = heapq.nlargest(n, rows, key=lambda kv: getattr(kv[1], key))
        out = []
        for inst, c in items:
            md = inst.metadata
            module = inst.computation.module if inst.computation else None
            src = module.source_location(inst) if module is not None else None
            out.append(InstructionCost(inst.computation.name if inst.computation else "?", inst.name,
                                       inst.opcode.text, c, md.op_name if md is not None else None, src))
        return out

    def to_json(self, *, top: int = 0) -> dict[str, Any]:
        """Totals (and the ``top`` costliest instructions when ``top`` > 0) as plain JSON."""
        data: dict[str, Any] = {
            "flops": self.total.flops,
            "transcendentals": self.total.transcendentals,
            "bytes_accessed": self.total.bytes_accessed,
            "loop_aware": self.loop_aware.to_json(),
            "trip_counts": dict(self.trip_counts),
        }
        if top:
            data["per_instruction"] = [ic.to_json() for ic in self.top(top)]
        return data


@without_cyclic_gc
def analyze_cost(module: Module) -> CostReport:
    """XLA's cost of ``module`` (entry computation, nested bodies counted once) plus loop-aware totals."""
    an = CostAnalyzer()
    total = an.computation_cost(module.entry)
    trip_counts: dict[str, int | None] = {}
    loop_aware_per: dict[Instruction, Cost] = {}

    def loop_aware_cost(comp: Computation, scale: float) -> Cost:
        # Each computation's instructions are charged per execution; `scale` is how many
        # times the enclosing loops run it, recorded on the per-instruction table.
        # As ``acc = acc + c`` and ``per[inst] = per.get(inst, ZERO) + c * scale`` would, the
        # same float operations in the same order, with one Cost made per instruction, not four.
        flops = transcendentals = nbytes = 0.0
        for inst in comp.instructions:
            c = _loop_aware_instruction(inst, scale)
            seen = loop_aware_per.get(inst, ZERO)
            loop_aware_per[inst] = Cost(seen.flops + c.flops * scale, seen.transcendentals + c.transcendentals * scale,
                                        seen.bytes_accessed + c.bytes_accessed * scale)
            flops += c.flops
            transcendentals += c.transcendentals
            nbytes += c.bytes_accessed
        return Cost(flops, transcendentals, nbytes)

    def _loop_aware_instruction(inst: Instruction, scale: float) -> Cost:
        base = an.per_instruction.get(inst, ZERO)
        # An async op written as sugar costs what it wraps (Note [Async sugar costs]).
        inst = async_wrapped_instruction(inst) or inst
        op = inst.opcode
        if op is Opcode.WHILE:
            n = infer_trip_count(inst)
            trip_counts[inst.name] = n
            k = n if n is not None else 1
            body = loop_aware_cost(inst.attrs["body"], scale * k)
            cond = loop_aware_cost(inst.attrs["condition"], scale * k)
            return (body + cond) * k
        if op in (Opcode.CALL, Opcode.ASYNC_START):
            return loop_aware_cost(inst.called_computations[0], scale)
        if op is Opcode.CONDITIONAL:
            branches = [loop_aware_cost(c, scale) for c in inst.called_computations]
            return Cost(max(b.flops for b in branches), max(b.transcendentals for b in branches),
                        max(b.bytes_accessed for b in branches))
        if op is Opcode.CUSTOM_CALL:
            known = custom_call_cost(inst)
            return known if known is not None else Cost(0, 0, custom_call_bytes(inst))
        if op is Opcode.FUSION and _has_custom_call(inst.attrs["calls"]):
            inner = loop_aware_cost(inst.attrs["calls"], scale)
            return inner.compute_only() + Cost(bytes_accessed=max(base.bytes_accessed, 0))
        return base

    loop_aware = loop_aware_cost(module.entry, 1)
    return CostReport(total, loop_aware, trip_counts, dict(an.per_instruction),
                      {c.name: t for c, t in an.totals.items()}, loop_aware_per)


def _runs_work_itself(inst: Instruction) -> bool:
    """False for control flow whose cost is its callees' (listed on their own rows)."""
    if inst.opcode is Opcode.ASYNC_START:
        wrapped = inst.attrs.get("async_wrapped_opcode")
        return wrapped is not None and wrapped is not Opcode.CALL
    return inst.opcode not in (Opcode.WHILE, Opcode.CALL, Opcode.CONDITIONAL)


def _has_custom_call(comp: Computation) -> bool:
    return any(i.opcode is Opcode.CUSTOM_CALL for i in comp.instructions)


def costs_by_opcode(report: CostReport) -> dict[str, Cost]:
    """Loop-aware cost summed per opcode (for tables)."""
    out: dict[str, Cost] = {}
    for inst, c in report.loop_aware_per_instruction.items():
        out[inst.opcode.text] = out.get(inst.opcode.text, ZERO) + c
    return out

