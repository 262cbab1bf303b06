"""The IR stage: modules, computations, instructions, shapes, layouts and the opcode table."""
from hloscope.ir.attributes import (
    AliasEntry,
    BackendConfig,
    ConvolutionDimensionNumbers,
    FrontendAttributes,
    OpMetadata,
    PaddingConfig,
    RawAttribute,
    ReplicaGroups,
    Sharding,
    ShardingSpec,
    SliceRange,
    StackFrameIndex,
    Window,
    WindowDimension,
)
from hloscope.ir.computation import Computation
from hloscope.ir.dtypes import (
    PRIMITIVE_TYPES,
    PrimitiveType,
    dtype_of,
    primitive_type,
    type_name_of,
)
from hloscope.ir.equality import first_difference, modules_equal
from hloscope.ir.instruction import Instruction
from hloscope.ir.layout import Layout, Tile
from hloscope.ir.literal import Literal, LiteralError
from hloscope.ir.module import Module, ProgramShape
from hloscope.ir.op_table import DuplicateRuleError, OpTable, op_tables
from hloscope.ir.opcode import Family, Opcode, opcode_from_text
from hloscope.ir.shape import ArrayShape, Shape, ShapeIndex, TupleShape, subshape
from hloscope.ir.shape_inference import infer_shape
from hloscope.ir.verifier import Diagnostic, check, verify

__all__ = [
    "AliasEntry", "ArrayShape", "Diagnostic", "check", "infer_shape", "verify", "BackendConfig", "Computation", "ConvolutionDimensionNumbers",
    "DuplicateRuleError", "Family", "FrontendAttributes", "Instruction", "Layout", "Literal", "LiteralError", "Module",
    "OpMetadata", "OpTable", "Opcode", "PRIMITIVE_TYPES", "PaddingConfig", "PrimitiveType", "ProgramShape",
    "RawAttribute", "ReplicaGroups", "Shape", "ShapeIndex", "Sharding", "ShardingSpec",
    "SliceRange", "StackFrameIndex", "Tile", "TupleShape", "Window", "WindowDimension",
    "dtype_of", "first_difference", "modules_equal", "op_tables", "opcode_from_text", "primitive_type",
    "subshape", "type_name_of",
]
