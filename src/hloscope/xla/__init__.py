"""Everything that talks to jax/jaxlib (an optional dependency), imported lazily.

- ``client``: XLA's parser, cost analysis and XLA:CPU compile/run/time;
- ``lowering``: ``lower_jax``, a jax function's modules, analyses and values per device;
- ``rewrite`` and ``gpu``: rewriting optimized and GPU modules into modules XLA:CPU compiles;
- ``worker``: the child process that runs a module on XLA:CPU;
- ``convert``: other module formats (StableHLO, protos) to HLO text through jaxlib;
- ``jax_bridge``: ``from_jax``, a jax function's modules and XLA's own figures for them.
"""
from hloscope.xla.client import (
    CompiledHlo,
    Rewrite,
    XlaCompileError,
    XlaTiming,
    available,
    compile_and_run,
    compile_and_time,
    compile_hlo,
    cost_analysis,
    instruction_opcodes,
    module_config,
    parse_hlo_text,
    rewrite_for_xla_cpu,
    xla_canonical_text,
)
from hloscope.xla.lowering import JaxArtifacts, lower_jax, use_shardy

__all__ = [
    "available",
    "parse_hlo_text",
    "xla_canonical_text",
    "instruction_opcodes",
    "module_config",
    "cost_analysis",
    "CompiledHlo",
    "XlaCompileError",
    "XlaTiming",
    "Rewrite",
    "rewrite_for_xla_cpu",
    "compile_hlo",
    "compile_and_run",
    "compile_and_time",
    "JaxArtifacts",
    "lower_jax",
    "use_shardy",
]
