"""The top-level functions re-exported by ``hloscope``: load and parse.

``load`` reads HLO text itself and hands every other format (StableHLO/MHLO as MLIR text or
bytecode, HloModuleProto, HloProto and HloSnapshot binaries) to ``hloscope.formats.detect``, which
converts through jaxlib. The format is judged from the content, so a ``.txt`` holding StableHLO
or a ``.pb`` holding text both load; plain HLO text never imports jax.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.errors import InputError
from hloscope.fileio import read_input_bytes
from hloscope.ir.module import Module
from hloscope.text.parser import parse_module

__all__ = ["load", "load_bytes", "parse", "run", "ray_executor", "cost", "memory", "collectives", "estimate_time",
           "available_memory", "RunMemoryCheck", "check_run_memory", "NotEnoughMemoryError"]


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
        name = "<stdin>"
    else:
        p = Path(path)
        if p.is_dir():
            raise InputError(f"{p}: is a directory; give a module file (HLO text, StableHLO, .pb)")
        data = read_input_bytes(p)
        name = str(p)
    text = _hlo_text(data, name)
    del data  # the bytes are not needed while parsing (a 300 MB module's: 300 MB of fresh pages)
    return parse_module(text, name)


def load_bytes(data: bytes, name: str = "<bytes>") -> Module:
    """A Module from the bytes of a module file in any format ``load`` reads (``name`` for messages)."""
    return parse_module(_hlo_text(data, name), name)


def _hlo_text(data: bytes, name: str) -> str:
    """The HLO text of a module file's bytes: decoded, or converted from another format."""
    from hloscope.formats.detect import Format, detect_format

    if not data or data.isspace():  # (not ``strip()``: that copies the whole file)
        raise InputError(f"{name}: the file is empty; expected an HLO module")
    detected = detect_format(data, name)
    if detected.format is Format.HLO_TEXT:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"{name}: not UTF-8 text (byte {e.start})") from None
    # Converted text is XLA's own printing, so a parse error in it is our bug, not the user's;
    # the name still says which file it came from.
    from hloscope.xla.convert import convert_to_hlo_text

    return convert_to_hlo_text(data, detected.format, name)


def run(module: Module | str | os.PathLike[str], inputs: Any = (), *, executor: str | None = None,
        ray_address: str | None = None, devices_per_worker: int | None = None, force: bool = False,
        **kwargs: Any) -> Any:
    """Evaluate ``module`` (a Module or a path ``load`` reads) on ``inputs`` with numpy.

    The other keyword arguments are those of ``hloscope.interpret.run`` (``replicas``,
    ``partitions``, ``options``, ``donate``), which documents the inputs and the result.

    ``executor="ray"`` spreads the devices over Ray actors (``pip install 'hloscope[ray]'``;
    Note [Ray executor] in ``hloscope/interpret/ray_executor.py``), ``devices_per_worker``
    each (default: the grid spread over the cluster's CPUs): a local Ray instance started for
    the run, or the cluster at ``ray_address`` ("auto": the one ``ray start`` runs on this
    machine, or "host:port"). Its memory guard refuses a worker whose devices' predicted peak
    exceeds what its node offers (``NotEnoughMemoryError``-like ``WorkerMemoryError``); pass
    ``force=True`` to skip it. The results are those of a local run, bit for bit.
    """
    from hloscope.interpret import run as interpret_run

    m = module if isinstance(module, Module) else load(module)
    if executor in (None, "local"):
        return interpret_run(m, inputs, **kwargs)
    if executor != "ray":
        raise InputError(f"unknown executor {executor!r}: 'local' (this process) or 'ray'")
    return interpret_run(m, inputs, executor=ray_executor(m, ray_address, devices_per_worker, force=force),
                         **kwargs)


def ray_executor(module: Module, address: str | None = None, devices_per_worker: int | None = None, *,
                 force: bool = False, fill_elided: str | None = None) -> Any:
    """A ``RayExecutor`` for ``module`` with its memory guard set from the memory analysis's
    per-device peak (``check_run_memory``), unless ``force``."""
    try:
        from hloscope.interpret.ray_executor import RayExecutor
    except ModuleNotFoundError as e:
        if e.name != "ray":
            raise
        from hloscope.errors import MissingDependencyError

        raise MissingDependencyError("the Ray executor needs Ray: pip install 'hloscope[ray]'") from None
    per_device = None
    if not force:
        try:
            per_device = check_run_memory(module, 1, fill_elided=fill_elided, available=0).per_device_bytes
        except Exception:  # an analysis gap must not stop a run the interpreter can do
            per_device = None
    return RayExecutor(address, devices_per_worker, per_device_bytes=per_device)


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


def estimate_time(module: Module, hardware: Any = None):  # -> TimeEstimate
    """Estimated step time on ``hardware`` (a profile name, a JSON path or a ``HardwareSpec``);
    by default the profile of the backend the module was compiled for (Note [Inferring the
    backend] in ``hloscope.analysis.backend``; the result's ``backend`` says which and why)."""
    from hloscope.analysis.backend import infer_backend
    from hloscope.analysis.hardware import load_hardware
    from hloscope.analysis.timing import estimate_time as _estimate

    if hardware is None:
        hardware = infer_backend(module).profile
    return _estimate(module, load_hardware(hardware) if isinstance(hardware, (str, os.PathLike)) else hardware)


# --- will a run fit in memory? -------------------------------------------------------------------
class NotEnoughMemoryError(InputError):
    """``hloscope run`` would need more memory than the machine has available."""


def available_memory() -> int | None:
    """Bytes the kernel says can be allocated without swapping (``MemAvailable`` in
    ``/proc/meminfo``), or None where that is not known (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the kernel counts kB (KiB)
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass(frozen=True)
class RunMemoryCheck:
    """What a run of a module needs at least, against what the machine has.

    ``per_device_bytes`` is the live-range peak of one device's program, all memory spaces
    together (Note [One peak] in ``analysis/memory/peak.py``): parameters, constants and every
    value live at the worst step. The interpreter also materialises fusions' inner values and
    numpy's temporaries, so a run needs at least ``needed_bytes`` = ``devices`` x that.
    """

    devices: int
    per_device_bytes: int
    available_bytes: int | None
    elided_constant_bytes: int  # per device; --fill-elided random writes them, zeros leaves pages untouched

    @property
    def needed_bytes(self) -> int:
        return self.devices * self.per_device_bytes

    @property
    def fits(self) -> bool:
        return self.available_bytes is None or self.needed_bytes <= self.available_bytes

    def message(self) -> str:
        """Why the run was refused and what would fit, in plain words."""
        need, have = self.needed_bytes, self.available_bytes or 0
        each = (f"{self.devices} devices x {_format_bytes(self.per_device_bytes)}" if self.devices > 1
                else "one device")
        lines = ["not enough memory for this run:",
                 f"  needs at least  {_format_bytes(need):>12} ({need:,} bytes: {each}, the memory "
                 "analysis's live-range peak with parameters)",
                 f"  available       {_format_bytes(have):>12} ({have:,} bytes, MemAvailable in /proc/meminfo)",
                 "what would fit:"]
        fit = have // self.per_device_bytes if self.per_device_bytes else self.devices
        if 1 <= fit < self.devices:
            lines.append(f"  - fewer devices: at most {fit} (--replicas/--partitions with replicas x "
                         f"partitions <= {fit})")
        if self.elided_constant_bytes:
            lines.append(f"  - --fill-elided zeros: the {_format_bytes(self.elided_constant_bytes)} of elided "
                         "constants per device stay untouched zero pages")
        if fit < 1:
            lines.append("  - a smaller batch (or shorter sequences): even one device does not fit")
        lines.append("  - or pass --force to run anyway")
        return "\n".join(lines)


def _format_bytes(n: float) -> str:
    """``n`` bytes in binary units (GiB, MiB, KiB), two decimals."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def check_run_memory(module: Module, devices: int, *, available: int | None = None,
                     fill_elided: str | None = None) -> RunMemoryCheck:
    """How much memory running ``module`` on ``devices`` simulated devices needs, against
    ``available`` bytes (default: ``available_memory()``; a test may pass a small figure).

    Only dataflow and live ranges run (``live_range_peaks``), no heap simulation, so this
    costs less than ``hloscope memory``. A global program (a sharded module not partitioned
    yet) runs once with global shapes, so it counts as one device.
    """
    from hloscope.analysis.memory import live_range_peaks
    from hloscope.interpret.spmd import is_global_program
    from hloscope.ir import Opcode

    per_device = sum(u.peak_bytes for u in live_range_peaks(module).values())
    if devices > 1 and is_global_program(module):
        devices = 1
    elided = 0
    if fill_elided == "random":
        elided = sum(i.shape.byte_size() for i in module.instructions()
                     if i.opcode is Opcode.CONSTANT and getattr(i.attrs.get("literal"), "elided", False))
    return RunMemoryCheck(devices, per_device, available_memory() if available is None else available, elided)
