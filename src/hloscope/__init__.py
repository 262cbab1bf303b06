"""hloscope: read, run and explain XLA HLO modules.

    import hloscope as hs
    m = hs.load("module.txt")              # or hs.parse(text)
    outputs = hs.run(m, inputs)            # numpy, on one device or many
    hs.cost(m).flops, hs.memory(m).peak_bytes
    hs.write_report(m, "report.html")
"""
import importlib
from typing import TYPE_CHECKING, Any

from hloscope.api import collectives, cost, estimate_time, load, memory, parse, run
from hloscope.errors import HloscopeError, InterpretError, ParseError, VerifyError
from hloscope.ir import Computation, Instruction, Module, Opcode, verify
from hloscope.text import PrintOptions, to_text

if TYPE_CHECKING:
    from hloscope.interpret import RunOptions, register_custom_call
    from hloscope.report import write_report
    from hloscope.version import __version__ as __version__
    from hloscope.xla.jax_bridge import JaxModules, from_jax

# Imported on first use (PEP 562): the interpreter, the page writer, jax's bridge and the
# package metadata cost about 0.1 s to import, which every CLI command would pay otherwise.
_LAZY = {
    "RunOptions": "hloscope.interpret",
    "register_custom_call": "hloscope.interpret",
    "write_report": "hloscope.report",
    "__version__": "hloscope.version",
    "JaxModules": "hloscope.xla.jax_bridge",
    "from_jax": "hloscope.xla.jax_bridge",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

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
