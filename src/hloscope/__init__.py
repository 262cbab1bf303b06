"""hloscope: read, run and explain XLA HLO modules.

    import hloscope as hs
    m = hs.load("module.txt")              # or hs.parse(text)
    outputs = hs.run(m, inputs)            # numpy, on one device or many
    hs.cost(m).flops, hs.memory(m).peak_bytes
    hs.write_report(m, "report.html")
"""
from hloscope.api import collectives, cost, estimate_time, load, memory, parse, run
from hloscope.errors import HloscopeError, InterpretError, ParseError, VerifyError
from hloscope.interpret import RunOptions, register_custom_call
from hloscope.ir import Computation, Instruction, Module, Opcode, verify
from hloscope.report import write_report
from hloscope.text import PrintOptions, to_text
from hloscope.version import __version__ as __version__
from hloscope.xla.jax_bridge import JaxModules, from_jax

__all__ = [
    "Computation",
    "HloscopeError",
    "Instruction",
    "InterpretError",
    "JaxModules",
    "Module",
    "Opcode",
    "ParseError",
    "PrintOptions",
    "RunOptions",
    "VerifyError",
    "collectives",
    "cost",
    "estimate_time",
    "from_jax",
    "load",
    "memory",
    "parse",
    "register_custom_call",
    "run",
    "to_text",
    "verify",
    "write_report",
]
