"""The top-level functions re-exported by ``hloscope``: load and parse.

``load`` reads HLO text itself and hands every other format (StableHLO/MHLO as MLIR text or
bytecode, HloModuleProto, HloProto and HloSnapshot binaries) to ``hloscope.formats.detect``, which
converts through jaxlib. The format is judged from the content, so a ``.txt`` holding StableHLO
or a ``.pb`` holding text both load; plain HLO text never imports jax.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hloscope.errors import InputError
from hloscope.ir.module import Module
from hloscope.text.parser import parse_module

__all__ = ["load", "load_bytes", "parse", "run", "cost", "memory", "collectives", "estimate_time"]


def parse(text: str, name: str = "<string>") -> Module:
    """Parse HLO module text into a Module. Errors name ``name:line:col`` with a caret."""
    return parse_module(text, name)


def load(path: str | os.PathLike[str]) -> Module:
    """Read a module file (``-`` for standard input) into a Module, whatever its format.

    HLO text is parsed directly. StableHLO/MHLO (MLIR text or bytecode), binary HloModuleProto
    (``.pb``), XLA's dumped HloProto and HloSnapshot files are converted to HLO text through
    jaxlib first (``pip install 'hloscope[jax]'``); text-format protos (``.pbtxt``) are read
    with protobuf, which the same extra installs. The format is detected from the content.
    """
    if str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)  # a text-only stdin (e.g. in notebooks) has none
        data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8")
        return load_bytes(data, "<stdin>")
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory; give a module file (HLO text, StableHLO, .pb)") from None
    except OSError as e:
        raise InputError(f"{p}: cannot read: {e.strerror}") from None
    return load_bytes(data, str(p))


def load_bytes(data: bytes, name: str = "<bytes>") -> Module:
    """A Module from the bytes of a module file in any format ``load`` reads (``name`` for messages)."""
    from hloscope.formats.detect import Format, detect_format

    if not data.strip():
        raise InputError(f"{name}: the file is empty; expected an HLO module")
    detected = detect_format(data, name)
    if detected.format is Format.HLO_TEXT:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{name}: not UTF-8 text (byte {e.start})") from None
        return parse_module(text, name)
    # Converted text is XLA's own printing, so a parse error in it is our bug, not the user's;
    # the name still says which file it came from.
    from hloscope.xla.convert import convert_to_hlo_text

    return parse_module(convert_to_hlo_text(data, detected.format, name), name)


def run(module: Module | str | os.PathLike[str], inputs: Any = (), **kwargs: Any) -> Any:
    """Evaluate ``module`` (a Module or a path ``load`` reads) on ``inputs`` with numpy.

    The keyword arguments are those of ``hloscope.interpret.run`` (``replicas``,
    ``partitions``, ``options``, ``donate``), which documents the inputs and the result.
    """
    from hloscope.interpret import run as interpret_run

    return interpret_run(module if isinstance(module, Module) else load(module), inputs, **kwargs)


def cost(module: Module):  # -> CostReport
    """FLOPs, transcendentals and bytes accessed, as XLA counts them and loop-aware
    (see ``hloscope.analysis.cost.CostReport``)."""
    from hloscope.analysis.cost import analyze_cost

    return analyze_cost(module)


def memory(module: Module, *, schedule: str = "module"):  # -> MemoryReport
    """Buffer assignment, live ranges and the peak (see ``hloscope.analysis.memory.report.MemoryReport``)."""
    from hloscope.analysis.memory.report import analyze_memory

    return analyze_memory(module, schedule=schedule)


def collectives(module: Module, *, replicas: int | None = None, partitions: int | None = None):
    """Each collective's groups and bytes (see ``hloscope.analysis.collectives.CollectivesReport``)."""
    from hloscope.analysis.collectives import analyze_collectives

    return analyze_collectives(module, num_replicas=replicas, num_partitions=partitions)


def estimate_time(module: Module, hardware: str = "h100-sxm"):  # -> TimeEstimate
    """Estimated step time on ``hardware`` (a profile name or JSON path)."""
    from hloscope.analysis.hardware import load_hardware
    from hloscope.analysis.timing import estimate_time as _estimate

    return _estimate(module, load_hardware(hardware) if isinstance(hardware, str) else hardware)
