"""The text stage: HLO text <-> IR, and XLA's buffer-assignment dumps."""
from hloscope.ir.print_options import PrintOptions
from hloscope.ir.printer import computation_to_text, instruction_to_text, to_text, write
from hloscope.source import Source, Span
from hloscope.text.buffer_assignment_dump import (
    format_buffer_assignment,
    load_buffer_assignment,
    parse_buffer_assignment,
)
from hloscope.text.parser import parse_module, parse_shape

__all__ = [
    "PrintOptions",
    "Source",
    "Span",
    "computation_to_text",
    "format_buffer_assignment",
    "instruction_to_text",
    "load_buffer_assignment",
    "parse_buffer_assignment",
    "parse_module",
    "parse_shape",
    "to_text",
    "write",
]
