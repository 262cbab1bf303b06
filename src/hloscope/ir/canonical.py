"""XLA's canonical attribute lists: which attributes XLA's printer writes for an instruction,
with which defaults, and in which order (``HloInstruction::PrintExtraAttributes`` and the
``PrintExtraAttributesImpl`` of each instruction class).

Used by the printer in canonical mode (``PrintOptions.canonical()``), so hloscope's canonical
text equals XLA's ShortParsable text for any module XLA accepts, however it was written.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hloscope.ir.attributes import FrontendAttributes, RawAttribute, ReplicaGroups, Sharding, quote
from hloscope.ir.opcode import Opcode
from hloscope.ir.shape import TupleShape, filled_layouts

if TYPE_CHECKING:
    from hloscope.ir.instruction import Instruction

__all__ = ["frontend_attributes_text", "xla_attributes"]

# The order XLA writes attributes in. One list serves every opcode: each instruction class
# writes its own attributes (the first groups), then the called computations, then the
# attributes every instruction may have. Attributes hloscope does not know keep their
# written order, after the known ones of their instruction and before the called computations.
_ORDER: dict[str, float] = {key: float(i) for i, key in enumerate((
    "async_execution_thread", "window", "dim_labels", "channel_id", "is_host_transfer",
    "replica_groups", "device_ids", "constrain_layout", "source_target_pairs", "kind",
    "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims",
    "lhs_ragged_dims", "rhs_group_dims",
    "offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
    "start_indices_batching_dims",
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
    "input_batching_dims", "scatter_indices_batching_dims",
    "index_vector_dim", "slice_sizes", "dynamic_slice_sizes", "indices_are_sorted", "unique_indices",
    "dimensions", "use_global_device_ids", "num_carries", "is_reverse", "is_associative",
    "k", "largest", "is_stable",
    "feature_group_count", "batch_group_count", "convolution_kind", "operand_precision", "algorithm",
    "sparsity_config", "padding_type", "custom_call_target", "operand_layout_constraints",
    "custom_call_has_side_effect", "literal", "output_to_operand_aliasing", "schedule",
    "custom_call_schedule", "api_version", "cross_program_prefetch_index",
    "left_side", "lower", "unit_diagonal", "transpose_a",
))}
_UNKNOWN = 100.0
_ORDER.update({key: 200.0 + i for i, key in enumerate((
    "to_apply", "calls", "called_computations", "condition", "body", "select", "scatter",
    "true_computation", "false_computation", "branch_computations", "is_composite",
    "sharding", "frontend_attributes", "control-predecessors", "statistics", "origin", "metadata",
    "backend_config",
))})

# Where one instruction class departs from the common order.
_ORDER_BY_OPCODE: dict[Opcode, dict[str, float]] = {
    # reduce-scatter writes use_global_device_ids (all-reduce's) before its dimension.
    Opcode.REDUCE_SCATTER: {"use_global_device_ids": _ORDER["dimensions"] - 0.5},
}

# Values XLA does not write: false flags (but `largest`), and these defaults.
_ALWAYS_WRITTEN_BOOLS = frozenset(("largest", "is_associative"))
_DEFAULTS = {
    "feature_group_count": "1", "batch_group_count": "1", "inferred_dimension": "-1",
    "api_version": "API_VERSION_ORIGINAL", "schedule": "SCHEDULE_NONE",
    "custom_call_schedule": "SCHEDULE_NONE", "backend_config": '""', "frontend_attributes": "{}",
    "infeed_config": "", "lhs_batch_dims": "()", "rhs_batch_dims": "()", "window": "{}",
    "is_reverse": "false",
}

_COLLECTIVES = frozenset((
    Opcode.ALL_GATHER, Opcode.ALL_GATHER_START, Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START,
    Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL, Opcode.RAGGED_ALL_TO_ALL, Opcode.COLLECTIVE_BROADCAST,
))


def _outfeed_shape(inst: Instruction) -> Any:
    return RawAttribute(filled_layouts(inst.operands[0].shape).to_text()) if inst.operands else None


# Attributes XLA always writes, with the value it has when the text leaves them out.
_ADDED: dict[Opcode, dict[str, Callable[[Instruction], Any]]] = {
    **{op: {"replica_groups": lambda inst: ReplicaGroups(groups=())} for op in _COLLECTIVES},
    Opcode.BROADCAST: {"dimensions": lambda inst: ()},
    Opcode.MAP: {"dimensions": lambda inst: tuple(range(len(getattr(inst.shape, "dimensions", ()))))},
    Opcode.DOT: {"lhs_contracting_dims": lambda inst: (), "rhs_contracting_dims": lambda inst: ()},
    Opcode.OUTFEED: {"outfeed_shape": _outfeed_shape},
    Opcode.SCAN: {"is_associative": lambda inst: RawAttribute("false")},
}


# Comparison::DefaultComparisonType: what `type=` is when a compare leaves it out.
_DEFAULT_COMPARISON_TYPE = {"float": "FLOAT", "signed": "SIGNED", "unsigned": "UNSIGNED", "pred": "UNSIGNED"}


def _element_kind(shape: Any) -> str:
    pt = getattr(shape, "primitive_type", None)
    return "" if pt is None else ("float" if pt.kind == "complex" else pt.kind)


def _is_default(key: str, value: Any) -> bool:
    if value is False:
        return key not in _ALWAYS_WRITTEN_BOOLS
    default = _DEFAULTS.get(key)
    if default is None:
        return False
    text = value if isinstance(value, str) else str(value)
    return text == default or (isinstance(value, tuple) and not value and default == "()")


def _all_default_precision(value: Any) -> bool:
    return isinstance(value, tuple) and all(str(p).lower() == "default" for p in value)


def _json_dict(text: str) -> bool:
    """XLA's LexesAsJsonDict: a braced group, balanced outside strings, spanning all of ``text``."""
    if not text.startswith("{"):
        return False
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i == n - 1
        i += 1
    return False


def frontend_attributes_text(value: FrontendAttributes) -> str:
    """XLA's FrontendAttributesToString: keys sorted, values quoted unless they are braced."""
    pairs = sorted(value.map.items())
    return "{" + ",".join(f"{k}={v}" if _json_dict(v) else f"{k}={quote(v)}" for k, v in pairs) + "}"


def _without_metadata(text: str) -> str:
    """A sharding's text without its ``metadata={...}`` parts (XLA prints them with metadata only)."""
    out, i = [], 0
    while True:
        j = text.find(" metadata={", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        depth, k = 0, j + 10
        while k < len(text):
            c = text[k]
            if c == '"':
                k += 1
                while k < len(text) and text[k] != '"':
                    k += 2 if text[k] == "\\" else 1
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


_ALIAS_ENTRY = re.compile(r"\{([0-9,\s]*)\}\s*:\s*\(\s*([0-9]+)\s*,\s*\{([0-9,\s]*)\}\s*\)")


def _aliasing_text(value: Any) -> Any:
    """``output_to_operand_aliasing`` as XLA writes it: ``{{0}: (1, {}), ...}``."""
    entries = _ALIAS_ENTRY.findall(str(value))
    if not entries:
        return value

    def index(t: str) -> str:
        return "{" + ",".join(x.strip() for x in t.split(",") if x.strip()) + "}"

    return RawAttribute("{" + ", ".join(f"{index(a)}: ({p}, {index(b)})" for a, p, b in entries) + "}")


def _top_level_groups(body: str) -> list[str]:
    """The brace groups of ``body`` (the inside of a tuple sharding), split at depth 0."""
    groups, depth, start = [], 0, None
    for i, c in enumerate(body):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and start is not None:
                groups.append(body[start : i + 1])
    return groups


def _sharding_text(value: Sharding, shape: Any) -> str:
    """A sharding as XLA prints it without metadata: single spaces, tuple elements joined by
    ", ", and one sharding given for a tuple shape repeated for each leaf (XLA's parser
    normalizes tuple shardings so)."""
    text = re.sub(r"\s+", " ", _without_metadata(value.text)).replace(" }", "}").replace("{ ", "{")
    if text.startswith("{{"):
        return _tuple_sharding(_top_level_groups(text[1:-1]))
    if isinstance(shape, TupleShape):
        return _tuple_sharding([text] * sum(1 for _ in shape.leaves()))
    return text


def _tuple_sharding(elements: list[str]) -> str:
    # As tuple shapes, every fifth element carries an /*index=N*/ marker.
    return "{" + ", ".join((f"/*index={i}*/" if i and i % 5 == 0 else "") + e for i, e in enumerate(elements)) + "}"


def _canonical_value(key: str, value: Any, shape: Any = None) -> Any:
    if isinstance(value, Sharding):
        return Sharding(_sharding_text(value, shape))
    if isinstance(value, FrontendAttributes):
        return RawAttribute(frontend_attributes_text(value))
    if key == "output_to_operand_aliasing":
        return _aliasing_text(value)
    if key == "operand_precision" and isinstance(value, tuple):
        return tuple(str(p).lower() for p in value)  # XLA writes the enum names in lower case
    return value


def xla_attributes(inst: Instruction, items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``items`` (the instruction's attributes as written) as XLA writes them: defaults it
    leaves out dropped, those it always writes added, in its order."""
    op = inst.opcode
    kept: list[tuple[str, Any]] = []
    for key, value in items:
        if _is_default(key, value) or (key == "operand_precision" and _all_default_precision(value)):
            continue
        if key == "to_apply" and op is Opcode.CUSTOM_CALL:
            key, value = "called_computations", [value]  # a custom-call's callee is written so
        kept.append((key, _canonical_value(key, value, inst.shape)))
    if op is Opcode.COMPARE and inst.operands:
        default_type = _DEFAULT_COMPARISON_TYPE.get(_element_kind(inst.operands[0].shape))
        kept = [(k, v) for k, v in kept if not (k == "type" and str(v) == default_type)]
    if op is Opcode.MAP:  # XLA maps over every dimension, whatever the text says
        kept = [(k, v) for k, v in kept if k != "dimensions"]
    elif op in (Opcode.ASYNC_UPDATE, Opcode.ASYNC_DONE):  # the thread is the start's to write
        kept = [(k, v) for k, v in kept if k != "async_execution_thread"]
    present = {key for key, _ in kept}
    for key, make in _ADDED.get(op, {}).items():
        if key not in present:
            value = make(inst)
            if value is not None:
                kept.append((key, value))
    order = _ORDER_BY_OPCODE.get(op)
    if order is None:
        return sorted(kept, key=lambda kv: _ORDER.get(kv[0], _UNKNOWN))
    return sorted(kept, key=lambda kv: order.get(kv[0], _ORDER.get(kv[0], _UNKNOWN)))
