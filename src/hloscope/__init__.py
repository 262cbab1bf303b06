"""hloscope: read, run and explain XLA HLO modules.

    import hloscope as hs
    m = hs.load("module.txt")              # or hs.parse(text)
    outputs = hs.run(m, inputs)            # numpy, on one device or many
    hs.cost(m).flops, hs.memory(m).peak_bytes
    hs.write_report(m, "report.html")
    hs.find_nonfinite(m, inputs)           # where the first NaN or infinity is born
    hs.compare_modules(pre, post, inputs)  # where two modules of one program part
"""
import importlib
from typing import TYPE_CHECKING, Any

from hloscope.api import collectives, cost, estimate_time, load, memory, parse, run
from hloscope.errors import HloscopeError, InterpretError, ParseError, VerifyError
from hloscope.ir import Computation, Instruction, Module, Opcode, verify
from hloscope.text import PrintOptions, to_text

if TYPE_CHECKING:
    from hloscope.interpret import RunOptions, register_custom_call
    from hloscope.numerics import (
        compare_modules,
        compare_with_xla,
        find_nonfinite,
        reduce_module,
        value_stats,
    )
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
    "find_nonfinite": "hloscope.numerics",
    "value_stats": "hloscope.numerics",
    "compare_modules": "hloscope.numerics",
    "compare_with_xla": "hloscope.numerics",
    "reduce_module": "hloscope.numerics",
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
    "compare_modules",
    "compare_with_xla",
    "cost",
    "estimate_time",
    "find_nonfinite",
    "from_jax",
    "load",
    "memory",
    "parse",
    "reduce_module",
    "register_custom_call",
    "run",
    "to_text",
    "value_stats",
    "verify",
    "write_report",
]
