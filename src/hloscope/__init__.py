"""hloscope: read, run and explain XLA HLO modules.

    import hloscope as hs
    m = hs.load("module.txt")
    print(m.to_text())
"""
from hloscope.api import load, parse
from hloscope.errors import HloscopeError, InterpretError, ParseError, VerifyError
from hloscope.ir import Computation, Instruction, Module, Opcode, verify
from hloscope.text import PrintOptions, to_text

__version__ = "0.1.0"

__all__ = [
    "Computation",
    "HloscopeError",
    "Instruction",
    "InterpretError",
    "Module",
    "Opcode",
    "ParseError",
    "PrintOptions",
    "VerifyError",
    "load",
    "parse",
    "to_text",
    "verify",
]
