"""XLA's HloModuleProto schema as a table, and protobuf message classes built from it.

jaxlib ships no Python descriptors for XLA's protos, so reading text-format protos (``.pbtxt``)
would otherwise need tensorflow's ``hlo_pb2``. This module describes every message and enum
reachable from ``HloSnapshot`` (and so from ``HloProto`` and ``HloModuleProto``, plus
``HloUnoptimizedSnapshot``) in two plain tables, builds a ``FileDescriptorProto`` from them at
run time and hands out message classes through ``google.protobuf.message_factory``; no
generated ``_pb2`` files, no ``protoc``. The tables import nothing, so format detection can read
the field names without protobuf installed.

Note [Schema version]
    The rows follow ``xla/service/hlo.proto`` and ``xla/xla_data.proto`` as compiled into
    jaxlib 0.10.2, which is newer than some published copies (it has ``Payload``,
    ``SparsityConfig``, ``MeshAxesReplicaGroupListProto``, instruction fields 92-99 and no
    ``dot_sparsity``). ``tests/test_formats.py`` parses XLA's own serialized modules with these
    classes and fails on any field the table lacks. Rows are in declaration order, which is
    the order ``text_format`` prints. Deprecated fields are kept (old dumps use them); reserved
    numbers and field options are left out, as are messages no module can reach
    (``HloPassMetadata``, ``GemmPerfTable``, ...).

Table format
    ``MESSAGES[name]`` is a tuple of ``(field name, number, type, label)`` rows. ``name`` is the
    message's path inside package ``xla`` (``"HloInstructionProto.SliceDimensions"`` is nested).
    ``type`` is a scalar type (``int64``, ``string``, ...), a key of ``MESSAGES`` or ``ENUMS``,
    or ``map<K, V>``. ``label`` is ``""`` (singular), ``"repeated"``, ``"optional"`` (proto3
    explicit presence) or ``"oneof NAME"``. ``ENUMS[name]`` maps value names to numbers.
"""
from __future__ import annotations

import functools
import re
from typing import Any

__all__ = [
    "ENUMS",
    "MESSAGES",
    "PACKAGE",
    "Field",
    "file_descriptor",
    "message_class",
    "top_level_field_names",
]

PACKAGE = "xla"
Field = tuple[str, int, str, str]

MESSAGES: dict[str, tuple[Field, ...]] = {
    "HloSnapshot": (
        ("hlo", 1, "HloProto", ""),
        ("arguments", 2, "LiteralProto", "repeated"),
        ("result", 3, "LiteralProto", ""),
        ("execution_platform", 4, "string", ""),
    ),
    "HloProto": (
        ("hlo_module", 1, "HloModuleProto", ""),
        ("buffer_assignment", 3, "BufferAssignmentProto", ""),
    ),
    "HloModuleProto": (
        ("name", 1, "string", ""),
        ("entry_computation_name", 2, "string", ""),
        ("entry_computation_id", 6, "int64", ""),
        ("computations", 3, "HloComputationProto", "repeated"),
        ("host_program_shape", 4, "ProgramShapeProto", ""),
        ("id", 5, "int64", ""),
        ("pjrt_id", 23, "int64", "optional"),
        ("schedule", 7, "HloScheduleProto", ""),
        ("input_output_alias", 8, "HloInputOutputAliasProto", ""),
        ("payloads", 22, "bytes", "repeated"),
        ("buffer_donor", 18, "HloBufferDonorProto", ""),
        ("cross_program_prefetches", 10, "CrossProgramPrefetch", "repeated"),
        ("is_dynamic", 11, "bool", ""),
        ("spmd_output_sharding", 12, "OpSharding", ""),
        ("spmd_parameters_shardings", 14, "OpSharding", "repeated"),
        ("use_auto_spmd_partitioning", 16, "bool", ""),
        ("profile_info", 13, "HloModuleProto.ProfileInfo", "repeated"),
        ("device_assignment", 15, "DeviceAssignmentProto", ""),
        ("stack_frame_index", 17, "StackFrameIndexProto", ""),
        ("frontend_attributes", 19, "FrontendAttributes", ""),
        ("original_value_recovery_table", 20, "OriginalValueRecoveryTableProto", ""),
        ("device_type", 21, "string", ""),
    ),
    "HloComputationProto": (
        ("name", 1, "string", ""),
        ("instructions", 2, "HloInstructionProto", "repeated"),
        ("program_shape", 4, "ProgramShapeProto", ""),
        ("id", 5, "int64", ""),
        ("root_id", 6, "int64", ""),
        ("is_fusion_computation", 7, "bool", ""),
        ("execution_thread", 8, "string", ""),
    ),
    "HloInstructionProto": (
        ("name", 1, "string", ""),
        ("opcode", 2, "string", ""),
        ("shape", 3, "ShapeProto", ""),
        ("metadata", 7, "OpMetadata", ""),
        ("literal", 8, "LiteralProto", ""),
        ("parameter_number", 9, "int64", ""),
        ("fusion_kind", 11, "string", ""),
        ("tuple_index", 13, "int64", ""),
        ("dimensions", 14, "int64", "repeated"),
        ("window", 15, "Window", ""),
        ("convolution_dimension_numbers", 16, "ConvolutionDimensionNumbers", ""),
        ("feature_group_count", 50, "int64", ""),
        ("batch_group_count", 58, "int64", ""),
        ("slice_dimensions", 17, "HloInstructionProto.SliceDimensions", "repeated"),
        ("exponent_bits", 18, "int32", ""),
        ("mantissa_bits", 19, "int32", ""),
        ("dynamic_slice_sizes", 20, "int64", "repeated"),
        ("padding_config", 21, "PaddingConfig", ""),
        ("outfeed_config", 22, "bytes", ""),
        ("distribution", 23, "RandomDistribution", ""),
        ("epsilon", 24, "float", ""),
        ("feature_index", 25, "int64", ""),
        ("channel_id", 26, "int64", ""),
        ("infeed_config", 27, "bytes", ""),
        ("custom_call_target", 28, "string", ""),
        ("outfeed_shape", 29, "ShapeProto", ""),
        ("dot_dimension_numbers", 30, "DotDimensionNumbers", ""),
        ("ragged_dot_dimension_numbers", 90, "RaggedDotDimensionNumbers", ""),
        ("fft_type", 31, "FftType", ""),
        ("fft_length", 32, "int64", "repeated"),
        ("comparison_direction", 63, "string", ""),
        ("gather_dimension_numbers", 33, "GatherDimensionNumbers", ""),
        ("gather_slice_sizes", 34, "int64", "repeated"),
        ("id", 35, "int64", ""),
        ("operand_ids", 36, "int64", "repeated"),
        ("control_predecessor_ids", 37, "int64", "repeated"),
        ("called_computation_ids", 38, "int64", "repeated"),
        ("sharding", 40, "OpSharding", ""),
        ("backend_config", 43, "bytes", ""),
        ("backend_config_payload", 99, "Payload", ""),
        ("replica_groups", 49, "ReplicaGroup", "repeated"),
        ("all_reduce_id", 45, "int64", ""),
        ("use_global_device_ids", 71, "bool", ""),
        ("is_host_transfer", 47, "bool", ""),
        ("is_stable", 60, "bool", ""),
        ("scatter_dimension_numbers", 48, "ScatterDimensionNumbers", ""),
        ("precision_config", 51, "PrecisionConfig", ""),
        ("source_target_pairs", 52, "SourceTarget", "repeated"),
        ("domain_entry_sharding", 54, "OpSharding", ""),
        ("domain_exit_sharding", 55, "OpSharding", ""),
        ("constrain_layout", 56, "bool", ""),
        ("operand_shapes_with_layout", 57, "ShapeProto", "repeated"),
        ("triangular_solve_options", 59, "TriangularSolveOptions", ""),
        ("cholesky_options", 62, "CholeskyOptions", ""),
        ("parameter_replication", 61, "ParameterReplication", ""),
        ("custom_call_has_side_effect", 65, "bool", ""),
        ("output_operand_aliasing", 74, "OutputOperandAliasing", "repeated"),
        ("custom_call_schedule", 76, "CustomCallSchedule", ""),
        ("delta", 66, "int64", ""),
        ("indices_are_sorted", 67, "bool", ""),
        ("frontend_attributes", 68, "FrontendAttributes", ""),
        ("unique_indices", 69, "bool", ""),
        ("rng_algorithm", 70, "RandomAlgorithm", ""),
        ("comparison_type", 72, "string", ""),
        ("is_cross_program_prefetch", 73, "bool", ""),
        ("cross_program_prefetch_index", 80, "int32", "oneof optional_cross_program_prefetch_index"),
        ("padding_type", 75, "PaddingType", ""),
        ("custom_call_api_version", 77, "CustomCallApiVersion", ""),
        ("async_execution_thread", 79, "string", ""),
        ("k", 81, "int64", ""),
        ("largest", 85, "bool", ""),
        ("statistics_viz", 82, "StatisticsViz", ""),
        ("collective_device_list", 87, "CollectiveDeviceListProto", "oneof replica_group_list"),
        ("iota_collective_device_list", 92, "IotaReplicaGroupListProto", "oneof replica_group_list"),
        ("mesh_axes_replica_group_list", 93, "MeshAxesReplicaGroupListProto", "oneof replica_group_list"),
        ("original_value", 88, "OriginalValueProto", ""),
        ("is_composite", 89, "bool", ""),
        ("result_accuracy", 91, "ResultAccuracy", ""),
        ("is_reverse", 94, "bool", ""),
        ("num_carries", 95, "int64", ""),
        ("is_associative", 96, "TriState", ""),
        ("conv_kind", 97, "ConvolutionKind", ""),
        ("sparsity_config", 98, "SparsityConfig", ""),
    ),
    "ShapeProto": (
        ("element_type", 2, "PrimitiveType", ""),
        ("dimensions", 3, "int64", "repeated"),
        ("is_dynamic_dimension", 6, "bool", "repeated"),
        ("tuple_shapes", 4, "ShapeProto", "repeated"),
        ("layout", 5, "LayoutProto", ""),
    ),
    "LayoutProto": (
        ("minor_to_major", 1, "int64", "repeated"),
        ("dim_level_types", 9, "DimLevelType", "repeated"),
        ("dim_unique", 13, "bool", "repeated"),
        ("dim_ordered", 14, "bool", "repeated"),
        ("tiles", 6, "TileProto", "repeated"),
        ("tail_padding_alignment_in_elements", 16, "int64", ""),
        ("element_size_in_bits", 7, "int64", ""),
        ("memory_space", 8, "int64", ""),
        ("index_primitive_type", 11, "PrimitiveType", ""),
        ("pointer_primitive_type", 12, "PrimitiveType", ""),
        ("physical_shape", 10, "ShapeProto", ""),
        ("dynamic_shape_metadata_prefix_bytes", 15, "int64", ""),
        ("split_configs", 17, "SplitConfigProto", "repeated"),
    ),
    "TileProto": (
        ("dimensions", 1, "int64", "repeated"),
    ),
    "SplitConfigProto": (
        ("dimension", 1, "int64", ""),
        ("split_indices", 2, "int64", "repeated"),
    ),
    "OpMetadata": (
        ("op_type", 1, "string", ""),
        ("op_name", 2, "string", ""),
        ("source_file", 3, "string", ""),
        ("source_line", 4, "int32", ""),
        ("source_end_line", 17, "int32", ""),
        ("source_column", 18, "int32", ""),
        ("source_end_column", 19, "int32", ""),
        ("profile_type", 5, "ProfileType", "repeated"),
        ("size_of_generated_code_in_bytes", 8, "int64", ""),
        ("size_of_memory_working_set_in_bytes", 9, "int64", ""),
        ("profile_info", 10, "OpMetadata.ProfileInfo", ""),
        ("deduplicated_name", 12, "string", ""),
        ("stack_frame_id", 15, "int32", ""),
        ("scheduling_name", 16, "string", ""),
        ("metadata_payload", 20, "Payload", ""),
    ),
    "OpMetadata.ProfileInfo": (
        ("profile_type", 1, "ProfileType", "repeated"),
        ("relative_speedup", 2, "double", ""),
        ("profile_source", 3, "ProfileSource", ""),
        ("compilation_event", 4, "CompilationEvent", ""),
        ("profile_generation_strategy", 5, "ProfileGenerationStrategy", ""),
    ),
    "Payload": (
        ("value", 1, "bytes", "oneof payload_source"),
        ("id", 2, "int64", "oneof payload_source"),
    ),
    "LiteralProto": (
        ("shape", 1, "ShapeProto", ""),
        ("preds", 2, "bool", "repeated"),
        ("s1s", 30, "bytes", ""),
        ("s2s", 26, "bytes", ""),
        ("s4s", 21, "bytes", ""),
        ("s8s", 15, "bytes", ""),
        ("u1s", 31, "bytes", ""),
        ("u2s", 27, "bytes", ""),
        ("u4s", 22, "bytes", ""),
        ("u8s", 3, "bytes", ""),
        ("s32s", 4, "int32", "repeated"),
        ("s64s", 5, "int64", "repeated"),
        ("u32s", 6, "uint32", "repeated"),
        ("u64s", 7, "uint64", "repeated"),
        ("f32s", 8, "float", "repeated"),
        ("f64s", 9, "double", "repeated"),
        ("c64s", 12, "float", "repeated"),
        ("c128s", 18, "double", "repeated"),
        ("tuple_literals", 10, "LiteralProto", "repeated"),
        ("f16s", 11, "bytes", ""),
        ("bf16s", 13, "bytes", ""),
        ("u16s", 16, "bytes", ""),
        ("s16s", 17, "bytes", ""),
        ("f4e2m1fns", 32, "bytes", ""),
        ("f8e3m4s", 29, "bytes", ""),
        ("f8e4m3b11fnuzs", 23, "bytes", ""),
        ("f8e4m3fns", 20, "bytes", ""),
        ("f8e4m3fnuzs", 25, "bytes", ""),
        ("f8e4m3s", 28, "bytes", ""),
        ("f8e5m2fnuzs", 24, "bytes", ""),
        ("f8e5m2s", 19, "bytes", ""),
        ("f8e8m0fnus", 33, "bytes", ""),
        ("f6e3m2fns", 35, "bytes", ""),
        ("f6e2m3fns", 36, "bytes", ""),
        ("sparse_indices", 14, "int64", "repeated"),
        ("dynamic_sizes", 34, "int32", "repeated"),
    ),
    "Window": (
        ("dimensions", 1, "WindowDimension", "repeated"),
    ),
    "WindowDimension": (
        ("size", 1, "int64", ""),
        ("stride", 2, "int64", ""),
        ("padding_low", 3, "int64", ""),
        ("padding_high", 4, "int64", ""),
        ("window_dilation", 5, "int64", ""),
        ("base_dilation", 6, "int64", ""),
        ("window_reversal", 7, "bool", ""),
    ),
    "ConvolutionDimensionNumbers": (
        ("input_batch_dimension", 7, "int64", ""),
        ("input_feature_dimension", 8, "int64", ""),
        ("input_spatial_dimensions", 11, "int64", "repeated"),
        ("kernel_input_feature_dimension", 3, "int64", ""),
        ("kernel_output_feature_dimension", 4, "int64", ""),
        ("kernel_spatial_dimensions", 6, "int64", "repeated"),
        ("output_batch_dimension", 9, "int64", ""),
        ("output_feature_dimension", 10, "int64", ""),
        ("output_spatial_dimensions", 12, "int64", "repeated"),
    ),
    "HloInstructionProto.SliceDimensions": (
        ("start", 1, "int64", ""),
        ("limit", 2, "int64", ""),
        ("stride", 3, "int64", ""),
    ),
    "PaddingConfig": (
        ("dimensions", 1, "PaddingConfig.PaddingConfigDimension", "repeated"),
    ),
    "PaddingConfig.PaddingConfigDimension": (
        ("edge_padding_low", 1, "int64", ""),
        ("edge_padding_high", 2, "int64", ""),
        ("interior_padding", 3, "int64", ""),
    ),
    "DotDimensionNumbers": (
        ("lhs_contracting_dimensions", 1, "int64", "repeated"),
        ("rhs_contracting_dimensions", 2, "int64", "repeated"),
        ("lhs_batch_dimensions", 3, "int64", "repeated"),
        ("rhs_batch_dimensions", 4, "int64", "repeated"),
    ),
    "RaggedDotDimensionNumbers": (
        ("dot_dimension_numbers", 1, "DotDimensionNumbers", ""),
        ("lhs_ragged_dimensions", 2, "int64", "repeated"),
        ("rhs_group_dimensions", 3, "int64", "repeated"),
    ),
    "GatherDimensionNumbers": (
        ("offset_dims", 1, "int64", "repeated"),
        ("collapsed_slice_dims", 2, "int64", "repeated"),
        ("start_index_map", 3, "int64", "repeated"),
        ("index_vector_dim", 4, "int64", ""),
        ("operand_batching_dims", 5, "int64", "repeated"),
        ("start_indices_batching_dims", 6, "int64", "repeated"),
    ),
    "OpSharding": (
        ("type", 1, "OpSharding.Type", ""),
        ("tile_shape", 2, "ShapeProto", ""),
        ("tile_assignment_dimensions", 3, "int64", "repeated"),
        ("tile_assignment_devices", 4, "int64", "repeated"),
        ("tuple_shardings", 5, "OpSharding", "repeated"),
        ("replicate_on_last_tile_dim", 6, "bool", ""),
        ("metadata", 7, "OpMetadata", "repeated"),
        ("last_tile_dims", 8, "OpSharding.Type", "repeated"),
        ("iota_reshape_dims", 9, "int64", "repeated"),
        ("iota_transpose_perm", 10, "int32", "repeated"),
        ("is_shard_group", 11, "bool", ""),
        ("shard_group_id", 12, "int64", ""),
        ("shard_group_type", 13, "OpSharding.ShardGroupType", ""),
        ("named_sharding", 14, "NamedShardingProto", "optional"),
    ),
    "NamedShardingProto": (
        ("mesh", 2, "MeshProto", ""),
        ("dim_shardings", 3, "NamedShardingProto.DimensionSharding", "repeated"),
        ("replicated_axes", 4, "AxisRefProto", "repeated"),
        ("unreduced_axes", 5, "AxisRefProto", "repeated"),
        ("manual_axes", 7, "AxisRefProto", "repeated"),
        ("metadata", 6, "OpMetadata", "repeated"),
    ),
    "MeshProto": (
        ("axes", 1, "MeshProto.MeshAxis", "repeated"),
        ("device_ids", 2, "int64", "repeated"),
        ("iota_transform", 3, "MeshProto.IotaTransform", "optional"),
    ),
    "MeshProto.MeshAxis": (
        ("name", 1, "string", ""),
        ("size", 2, "int64", ""),
    ),
    "MeshProto.IotaTransform": (
        ("reshape_dims", 1, "int64", "repeated"),
        ("transpose_perm", 2, "int64", "repeated"),
    ),
    "NamedShardingProto.DimensionSharding": (
        ("axes", 1, "AxisRefProto", "repeated"),
        ("is_closed", 2, "bool", ""),
    ),
    "AxisRefProto": (
        ("mesh_axis_index", 1, "int64", ""),
        ("sub_axis_info", 2, "AxisRefProto.SubAxis", "optional"),
    ),
    "AxisRefProto.SubAxis": (
        ("pre_size", 1, "int64", ""),
        ("size", 2, "int64", ""),
    ),
    "ReplicaGroup": (
        ("replica_ids", 1, "int64", "repeated"),
    ),
    "ScatterDimensionNumbers": (
        ("update_window_dims", 1, "int64", "repeated"),
        ("inserted_window_dims", 2, "int64", "repeated"),
        ("scatter_dims_to_operand_dims", 3, "int64", "repeated"),
        ("index_vector_dim", 4, "int64", ""),
        ("input_batching_dims", 5, "int64", "repeated"),
        ("scatter_indices_batching_dims", 6, "int64", "repeated"),
    ),
    "PrecisionConfig": (
        ("operand_precision", 1, "PrecisionConfig.Precision", "repeated"),
        ("algorithm", 2, "PrecisionConfig.Algorithm", ""),
    ),
    "SourceTarget": (
        ("source", 1, "int64", ""),
        ("target", 2, "int64", ""),
    ),
    "TriangularSolveOptions": (
        ("left_side", 1, "bool", ""),
        ("lower", 2, "bool", ""),
        ("unit_diagonal", 3, "bool", ""),
        ("transpose_a", 4, "TriangularSolveOptions.Transpose", ""),
    ),
    "CholeskyOptions": (
        ("lower", 1, "bool", ""),
    ),
    "ParameterReplication": (
        ("replicated_at_leaf_buffers", 1, "bool", "repeated"),
    ),
    "OutputOperandAliasing": (
        ("output_shape_index", 1, "int64", "repeated"),
        ("operand_index", 2, "int64", ""),
        ("operand_shape_index", 3, "int64", "repeated"),
    ),
    "FrontendAttributes": (
        ("map", 1, "map<string, string>", ""),
    ),
    "StatisticsViz": (
        ("stat_index_to_visualize", 1, "int64", ""),
        ("statistics", 2, "Statistic", "repeated"),
    ),
    "Statistic": (
        ("stat_name", 1, "string", ""),
        ("stat_val", 2, "double", ""),
    ),
    "CollectiveDeviceListProto": (
        ("replica_groups", 1, "ReplicaGroup", "repeated"),
    ),
    "IotaReplicaGroupListProto": (
        ("num_replica_groups", 1, "int64", ""),
        ("num_devices_per_group", 2, "int64", ""),
        ("iota_reshape_dims", 3, "int64", "repeated"),
        ("iota_transpose_perm", 4, "int32", "repeated"),
    ),
    "MeshAxesReplicaGroupListProto": (
        ("mesh", 1, "MeshProto", ""),
        ("axes", 2, "AxisRefProto", "repeated"),
    ),
    "OriginalValueProto": (
        ("elements", 1, "OriginalValueElementProto", "repeated"),
        ("is_synthetic_call", 2, "bool", ""),
    ),
    "OriginalValueElementProto": (
        ("shape_index", 1, "int64", "repeated"),
        ("original_array", 2, "OriginalArrayProto", ""),
    ),
    "OriginalArrayProto": (
        ("instruction_name", 1, "string", ""),
        ("shape_index", 2, "int64", "repeated"),
    ),
    "ResultAccuracy": (
        ("mode", 1, "ResultAccuracy.Mode", "oneof specs"),
        ("tolerance", 2, "ResultAccuracy.Tolerance", "oneof specs"),
    ),
    "ResultAccuracy.Tolerance": (
        ("atol", 1, "double", ""),
        ("rtol", 2, "double", ""),
        ("ulps", 3, "int64", ""),
    ),
    "SparsityConfig": (
        ("lhs", 1, "SparsityConfig.TensorSparsityConfig", ""),
        ("rhs", 2, "SparsityConfig.TensorSparsityConfig", ""),
    ),
    "SparsityConfig.TensorSparsityConfig": (
        ("num_non_zero", 1, "int64", ""),
        ("block_size", 2, "int64", ""),
        ("dimension", 3, "int64", ""),
        ("stride", 4, "int64", ""),
    ),
    "ProgramShapeProto": (
        ("parameters", 1, "ShapeProto", "repeated"),
        ("result", 2, "ShapeProto", ""),
        ("parameter_names", 3, "string", "repeated"),
    ),
    "HloScheduleProto": (
        ("sequences", 1, "map<int64, HloScheduleProto.InstructionSequence>", ""),
    ),
    "HloScheduleProto.InstructionSequence": (
        ("instruction_ids", 1, "int64", "repeated"),
    ),
    "HloInputOutputAliasProto": (
        ("entries", 1, "HloInputOutputAliasProto.AliasEntryProto", "repeated"),
    ),
    "HloInputOutputAliasProto.AliasEntryProto": (
        ("output_shape_index", 1, "int64", "repeated"),
        ("parameter_number", 2, "int64", ""),
        ("parameter_shape_index", 3, "int64", "repeated"),
        ("kind", 4, "Kind", ""),
    ),
    "HloBufferDonorProto": (
        ("entries", 1, "HloBufferDonorProto.BufferDonorEntryProto", "repeated"),
    ),
    "HloBufferDonorProto.BufferDonorEntryProto": (
        ("parameter_number", 1, "int64", ""),
        ("parameter_shape_index", 2, "int64", "repeated"),
    ),
    "CrossProgramPrefetch": (
        ("parameter", 1, "int64", ""),
        ("index", 2, "int64", "repeated"),
        ("offset", 3, "int64", ""),
    ),
    "HloModuleProto.ProfileInfo": (
        ("profile_type", 1, "HloModuleProto.ProfileType", ""),
        ("relative_speedup", 2, "double", ""),
        ("profile_source", 3, "ProfileSource", ""),
        ("compilation_event", 4, "CompilationEvent", ""),
        ("fingerprint", 5, "string", ""),
        ("profile_generation_strategy", 6, "ProfileGenerationStrategy", ""),
        ("original_changelist", 7, "int64", ""),
        ("changelist", 8, "int64", ""),
    ),
    "DeviceAssignmentProto": (
        ("replica_count", 1, "int32", ""),
        ("computation_count", 2, "int32", ""),
        ("computation_devices", 3, "DeviceAssignmentProto.ComputationDevice", "repeated"),
    ),
    "DeviceAssignmentProto.ComputationDevice": (
        ("replica_device_ids", 1, "int64", "repeated"),
    ),
    "StackFrameIndexProto": (
        ("file_names", 1, "string", "repeated"),
        ("function_names", 2, "string", "repeated"),
        ("file_locations", 3, "StackFrameIndexProto.FileLocation", "repeated"),
        ("stack_frames", 4, "StackFrameIndexProto.StackFrame", "repeated"),
    ),
    "StackFrameIndexProto.FileLocation": (
        ("file_name_id", 1, "int32", ""),
        ("function_name_id", 2, "int32", ""),
        ("line", 3, "int32", ""),
        ("end_line", 5, "int32", ""),
        ("column", 4, "int32", ""),
        ("end_column", 6, "int32", ""),
    ),
    "StackFrameIndexProto.StackFrame": (
        ("file_location_id", 1, "int32", ""),
        ("parent_frame_id", 2, "int32", ""),
    ),
    "OriginalValueRecoveryTableProto": (
        ("entries", 1, "OriginalValueRecoveryTableProto.Entry", "repeated"),
    ),
    "OriginalValueRecoveryTableProto.Entry": (
        ("old_original_array", 1, "OriginalArrayProto", ""),
        ("new_original_array", 2, "OriginalArrayProto", ""),
        ("recovery_module", 3, "HloModuleProto", ""),
    ),
    "BufferAssignmentProto": (
        ("logical_buffers", 1, "LogicalBufferProto", "repeated"),
        ("buffer_aliases", 2, "BufferAssignmentProto.BufferAlias", "repeated"),
        ("buffer_allocations", 3, "BufferAllocationProto", "repeated"),
        ("heap_simulator_traces", 4, "HeapSimulatorTrace", "repeated"),
        ("peak_buffers", 5, "BufferAssignmentProto.PeakBuffers", "repeated"),
    ),
    "LogicalBufferProto": (
        ("id", 1, "int64", ""),
        ("size", 2, "int64", ""),
        ("defined_at", 3, "LogicalBufferProto.Location", ""),
        ("color", 4, "int64", ""),
    ),
    "LogicalBufferProto.Location": (
        ("instruction_name", 2, "string", ""),
        ("instruction_id", 4, "int64", ""),
        ("shape_index", 3, "int64", "repeated"),
    ),
    "BufferAssignmentProto.BufferAlias": (
        ("source_buffer_id", 1, "int64", ""),
        ("location", 2, "LogicalBufferProto.Location", ""),
    ),
    "BufferAllocationProto": (
        ("index", 1, "int64", ""),
        ("size", 2, "int64", ""),
        ("is_thread_local", 3, "bool", ""),
        ("is_tuple", 11, "bool", ""),
        ("is_entry_computation_parameter", 5, "bool", ""),
        ("is_constant", 12, "bool", ""),
        ("parameter_number", 6, "int64", ""),
        ("parameter_shape_index", 10, "int64", "repeated"),
        ("is_parameter_aliased_with_output", 13, "bool", ""),
        ("maybe_live_out", 7, "bool", ""),
        ("color", 8, "int64", ""),
        ("assigned", 9, "BufferAllocationProto.Assigned", "repeated"),
    ),
    "BufferAllocationProto.Assigned": (
        ("logical_buffer_id", 1, "int64", ""),
        ("offset", 2, "int64", ""),
        ("size", 3, "int64", ""),
        ("element_type", 4, "PrimitiveType", ""),
    ),
    "HeapSimulatorTrace": (
        ("events", 1, "HeapSimulatorTrace.Event", "repeated"),
        ("whole_module_simulation", 2, "bool", ""),
        ("buffer_allocation_index", 3, "int64", ""),
    ),
    "HeapSimulatorTrace.Event": (
        ("kind", 1, "HeapSimulatorTrace.Event.Kind", ""),
        ("buffer_id", 2, "int64", ""),
        ("computation_name", 3, "string", ""),
        ("instruction_name", 4, "string", ""),
        ("share_with_canonical_id", 5, "int64", ""),
    ),
    "BufferAssignmentProto.PeakBuffers": (
        ("index", 1, "int64", ""),
        ("logical_buffer_ids", 2, "int64", "repeated"),
    ),
    "HloUnoptimizedSnapshot": (
        ("hlo_module", 1, "HloModuleProto", ""),
        ("partitions", 2, "HloInputs", "repeated"),
        ("version", 3, "int32", ""),
    ),
    "HloInputs": (
        ("arguments", 1, "LiteralProto", "repeated"),
        ("arguments_descriptors", 2, "HloInputs.LiteralDescriptor", "repeated"),
    ),
    "HloInputs.LiteralDescriptor": (
        ("version", 1, "int32", ""),
        ("argument_size_bytes", 2, "uint64", ""),
    ),
}

ENUMS: dict[str, dict[str, int]] = {
    "PrimitiveType": {
        "PRIMITIVE_TYPE_INVALID": 0, "PRED": 1, "S1": 30, "S2": 26, "S4": 21, "S8": 2, "S16": 3,
        "S32": 4, "S64": 5, "U1": 31, "U2": 27, "U4": 22, "U8": 6, "U16": 7, "U32": 8, "U64": 9,
        "F16": 10, "F32": 11, "BF16": 16, "F64": 12, "F8E5M2": 19, "F8E4M3": 28, "F8E4M3FN": 20,
        "F8E4M3B11FNUZ": 23, "F8E3M4": 29, "F8E5M2FNUZ": 24, "F8E4M3FNUZ": 25, "F4E2M1FN": 32,
        "F8E8M0FNU": 33, "F6E3M2FN": 35, "F6E2M3FN": 36, "C64": 15, "C128": 18, "TUPLE": 13,
        "OPAQUE_TYPE": 14, "TOKEN": 17, "BUFFER": 34,
    },
    "DimLevelType": {
        "DIM_DENSE": 0, "DIM_COMPRESSED": 1, "DIM_SINGLETON": 2, "DIM_LOOSE_COMPRESSED": 3,
    },
    "ProfileType": {"INVALID": 0, "WINDOW": 1, "FLAG": 2, "INTEGER": 3},
    "ProfileSource": {
        "PROFILE_SOURCE_UNKNOWN_SOURCE": 0, "PROFILE_SOURCE_EMBEDDED": 1,
        "PROFILE_SOURCE_REMOTE": 2,
    },
    "CompilationEvent": {
        "COMPILATION_EVENT_UNKNOWN_EVENT": 0, "COMPILATION_EVENT_FIRST_COMPILATION": 1,
        "COMPILATION_EVENT_RECOMPILATION": 2,
    },
    "ProfileGenerationStrategy": {
        "PROFILE_GENERATION_STRATEGY_UNKNOWN": 0, "PROFILE_GENERATION_STRATEGY_GA": 1,
        "PROFILE_GENERATION_STRATEGY_FANTA": 2, "PROFILE_GENERATION_STRATEGY_CFO": 3,
        "PROFILE_GENERATION_STRATEGY_EXHAUSTIVE": 4, "PROFILE_GENERATION_STRATEGY_LCM_GNN": 5,
        "PROFILE_GENERATION_STRATEGY_LCM_MOE": 6,
    },
    "RandomDistribution": {"RNG_INVALID": 0, "RNG_UNIFORM": 1, "RNG_NORMAL": 2},
    "FftType": {"FFT": 0, "IFFT": 1, "RFFT": 2, "IRFFT": 3},
    "OpSharding.Type": {
        "REPLICATED": 0, "MAXIMAL": 1, "TUPLE": 2, "OTHER": 3, "MANUAL": 4, "UNKNOWN": 5,
        "UNREDUCED": 6,
    },
    "OpSharding.ShardGroupType": {"AS": 0, "LIKE": 1},
    "PrecisionConfig.Precision": {"DEFAULT": 0, "HIGH": 1, "HIGHEST": 2},
    "PrecisionConfig.Algorithm": {
        "ALG_UNSET": 0, "ALG_DOT_ANY_F8_ANY_F8_F32": 1, "ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM": 2,
        "ALG_DOT_F16_F16_F16": 3, "ALG_DOT_F16_F16_F32": 4, "ALG_DOT_BF16_BF16_BF16": 5,
        "ALG_DOT_BF16_BF16_F32": 6, "ALG_DOT_BF16_BF16_F32_X3": 7, "ALG_DOT_BF16_BF16_F32_X6": 8,
        "ALG_DOT_TF32_TF32_F32": 9, "ALG_DOT_TF32_TF32_F32_X3": 10, "ALG_DOT_F32_F32_F32": 11,
        "ALG_DOT_F64_F64_F64": 12, "ALG_DOT_BF16_BF16_F32_X9": 13,
    },
    "TriangularSolveOptions.Transpose": {
        "TRANSPOSE_INVALID": 0, "NO_TRANSPOSE": 1, "TRANSPOSE": 2, "ADJOINT": 3,
    },
    "CustomCallSchedule": {"SCHEDULE_NONE": 0, "SCHEDULE_LATEST": 1, "SCHEDULE_EARLIEST": 2},
    "RandomAlgorithm": {"RNG_DEFAULT": 0, "RNG_THREE_FRY": 1, "RNG_PHILOX": 2},
    "PaddingType": {"PADDING_INVALID": 0, "PADDING_VALID": 1, "PADDING_SAME": 2},
    "CustomCallApiVersion": {
        "API_VERSION_UNSPECIFIED": 0, "API_VERSION_ORIGINAL": 1, "API_VERSION_STATUS_RETURNING": 2,
        "API_VERSION_STATUS_RETURNING_UNIFIED": 3, "API_VERSION_TYPED_FFI": 4,
    },
    "ResultAccuracy.Mode": {"DEFAULT": 0, "HIGHEST": 1},
    "TriState": {"TRI_STATE_UNSPECIFIED": 0, "TRI_STATE_TRUE": 1, "TRI_STATE_FALSE": 2},
    "ConvolutionKind": {
        "CONVOLUTION_KIND_UNSET": 0, "CONVOLUTION_KIND_FPROP": 1, "CONVOLUTION_KIND_DGRAD": 2,
        "CONVOLUTION_KIND_WGRAD": 3,
    },
    "Kind": {"UNDEFINED_ALIAS": 0, "MAY_ALIAS": 1, "MUST_ALIAS": 2},
    "HloModuleProto.ProfileType": {
        "INVALID": 0, "FLAG": 1, "FUSION": 2, "LAYOUT": 3, "DOT": 4, "FLAGNET": 5, "SHARDING": 6,
        "SCHEDULE": 7,
    },
    "HeapSimulatorTrace.Event.Kind": {"ALLOC": 0, "FREE": 1, "SHARE_WITH": 2},
}


# --------------------------------------------------------------------------------------------
# Building descriptors and classes from the table

_SCALARS = ("double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool",
            "string", "bytes", "uint32", "sfixed32", "sfixed64", "sint32", "sint64")
_MAP = re.compile(r"map<(\w+), ([\w.]+)>")


def _camel(field_name: str) -> str:
    """protoc's name for a map field's entry message: ``sequences`` -> ``SequencesEntry``."""
    return "".join(part[:1].upper() + part[1:] for part in field_name.split("_")) + "Entry"


def _set_type(field: Any, type_name: str) -> None:
    """Point ``field`` (a FieldDescriptorProto) at a scalar, enum or message type from the table."""
    from google.protobuf import descriptor_pb2

    types = descriptor_pb2.FieldDescriptorProto
    if type_name in _SCALARS:
        field.type = getattr(types, "TYPE_" + type_name.upper())
    elif type_name in ENUMS:
        field.type, field.type_name = types.TYPE_ENUM, f".{PACKAGE}.{type_name}"
    elif type_name in MESSAGES:
        field.type, field.type_name = types.TYPE_MESSAGE, f".{PACKAGE}.{type_name}"
    else:
        raise KeyError(f"hlo_proto_schema: unknown type {type_name!r}")


def _add_fields(message: Any, path: str, rows: tuple[Field, ...]) -> None:
    """Fill one DescriptorProto from its rows: maps get entry messages, oneofs their decls
    (real ones first, then proto3 ``optional``'s synthetic ``_name`` ones, as protoc orders them)."""
    from google.protobuf import descriptor_pb2

    types = descriptor_pb2.FieldDescriptorProto
    real = list(dict.fromkeys(label[6:] for _, _, _, label in rows if label.startswith("oneof ")))
    synthetic = [f"_{name}" for name, _, _, label in rows if label == "optional"]
    for oneof in real + synthetic:
        message.oneof_decl.add(name=oneof)
    for name, number, type_name, label in rows:
        field = message.field.add(name=name, number=number, label=types.LABEL_OPTIONAL)
        if label == "repeated":
            field.label = types.LABEL_REPEATED
        elif label == "optional":
            field.proto3_optional = True
            field.oneof_index = len(real) + synthetic.index(f"_{name}")
        elif label.startswith("oneof "):
            field.oneof_index = real.index(label[6:])
        elif label:
            raise ValueError(f"hlo_proto_schema: {path}.{name} has unknown label {label!r}")
        if m := _MAP.fullmatch(type_name):
            entry = message.nested_type.add(name=_camel(name))
            entry.options.map_entry = True
            _set_type(entry.field.add(name="key", number=1, label=types.LABEL_OPTIONAL), m[1])
            _set_type(entry.field.add(name="value", number=2, label=types.LABEL_OPTIONAL), m[2])
            field.label = types.LABEL_REPEATED
            field.type = types.TYPE_MESSAGE
            field.type_name = f".{PACKAGE}.{path}.{entry.name}"
        else:
            _set_type(field, type_name)


def file_descriptor() -> Any:
    """A ``google.protobuf.descriptor_pb2.FileDescriptorProto`` holding every table entry.

    Raises ``ImportError`` without protobuf.
    """
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name="hloscope/xla_hlo.proto", package=PACKAGE,
                                            syntax="proto3")
    protos: dict[str, Any] = {}
    # Parents before the messages nested in them.
    for path in sorted(MESSAGES, key=lambda p: p.count(".")):
        parent, _, short = path.rpartition(".")
        protos[path] = (protos[parent].nested_type if parent else fd.message_type).add(name=short)
    for path, values in ENUMS.items():
        parent, _, short = path.rpartition(".")
        enum = (protos[parent].enum_type if parent else fd.enum_type).add(name=short)
        for value_name, number in values.items():
            enum.value.add(name=value_name, number=number)
    for path, rows in MESSAGES.items():
        _add_fields(protos[path], path, rows)
    return fd


@functools.cache
def _pool() -> Any:
    # A private pool: tensorflow or another package may register its own xla.* messages in the
    # default pool, and two definitions of one name there clash.
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor())
    return pool


@functools.cache
def message_class(name: str) -> type:
    """The protobuf message class for ``MESSAGES[name]`` (``"HloModuleProto"``, ``"HloProto"``,
    ``"HloSnapshot"``, ...). Raises ``ImportError`` without protobuf, ``KeyError`` for a name
    the table lacks."""
    from google.protobuf import message_factory

    if name not in MESSAGES:
        raise KeyError(f"hlo_proto_schema: no message {name!r}")
    descriptor = _pool().FindMessageTypeByName(f"{PACKAGE}.{name}")
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:  # protobuf < 4.22
        factory: Any = message_factory.MessageFactory(_pool())  # GetPrototype is gone from newer stubs
        return factory.GetPrototype(descriptor)
    return get_class(descriptor)


def top_level_field_names(name: str) -> frozenset[str]:
    """The field names of ``MESSAGES[name]``; what a text-format message of that type starts with."""
    return frozenset(row[0] for row in MESSAGES[name])
