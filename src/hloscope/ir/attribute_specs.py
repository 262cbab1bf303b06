"""Which attributes hloscope types, and how: one table shared by the parser and the printer.

Each attribute name maps to a kind. The parser reads a value of that kind and the printer
writes it back; an attribute not listed here is kept as ``RawAttribute`` with its exact text.
"""
from __future__ import annotations

__all__ = ["ATTRIBUTE_KINDS", "MODULE_ATTRIBUTE_KINDS"]

_KINDS: dict[str, tuple[str, ...]] = {
    "int": (
        "index", "iota_dimension", "channel_id", "feature_group_count", "batch_group_count",
        "index_vector_dim", "exponent_bits", "mantissa_bits", "k", "cross_program_prefetch_index",
        "split_dimension", "concat_dimension", "mantissa", "tuple_index",
    ),
    "bool": (
        "is_stable", "indices_are_sorted", "unique_indices", "constrain_layout",
        "use_global_device_ids", "largest", "is_host_transfer", "custom_call_has_side_effect",
        "is_cross_program_prefetch",
    ),
    "ints": (
        "dimensions", "slice_sizes", "dynamic_slice_sizes", "lhs_batch_dims", "rhs_batch_dims",
        "lhs_contracting_dims", "rhs_contracting_dims", "offset_dims", "collapsed_slice_dims",
        "start_index_map", "operand_batching_dims", "start_indices_batching_dims",
        "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
        "input_batching_dims", "scatter_indices_batching_dims", "fft_length", "lhs_ragged_dims",
        "rhs_group_dims", "lhs_batch_dimensions",
    ),
    "intss": ("source_target_pairs",),
    "computation": (
        "to_apply", "condition", "body", "select", "scatter", "true_computation",
        "false_computation", "comparator",
    ),
    "computations": ("branch_computations", "called_computations"),
    "computation_or_list": ("calls",),
    "ident": (
        "kind", "direction", "type", "fft_type", "distribution", "algorithm", "api_version",
        "custom_call_schedule", "padding_type", "mode",
    ),
    "string": (
        "custom_call_target", "infeed_config", "outfeed_config", "async_execution_thread",
        "execution_thread", "op_name",
    ),
    "window": ("window",),
    "dim_labels": ("dim_labels",),
    "slice": ("slice",),
    "padding": ("padding",),
    "metadata": ("metadata",),
    "sharding": ("sharding",),
    "frontend_attributes": ("frontend_attributes",),
    "backend_config": ("backend_config",),
    "replica_groups": ("replica_groups",),
    "precision": ("precision_config", "operand_precision"),
    "shapes": ("operand_layout_constraints",),
    "instructions": ("control-predecessors",),
    "bools": ("parameter_replication",),
    "literal": ("literal",),  # a custom-call's literal: `s32[2]{0} {1, 2}`, or a tuple of them
}

ATTRIBUTE_KINDS: dict[str, str] = {name: kind for kind, names in _KINDS.items() for name in names}

MODULE_ATTRIBUTE_KINDS: dict[str, str] = {
    "is_scheduled": "bool",
    "replica_count": "int",
    "num_partitions": "int",
    "alias_passthrough_params": "bool",
    "input_output_alias": "io_alias",
    "buffer_donor": "buffer_donor",
    "entry_computation_layout": "program_shape",
    "frontend_attributes": "frontend_attributes",
}

