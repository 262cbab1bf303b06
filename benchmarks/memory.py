"""Memory-analysis speed: ``analyze_memory`` on seed 003 and on modules 2, 5 and 10 times its size.

``parse.py``'s ``ten_times`` makes ten renamed copies of every computation but keeps only the
last entry reachable, so buffer assignment would see the 1x program. Here the copies are merged
into one entry instead: independent copies side by side (parameters renumbered, the root a
tuple of the copies' roots, each copy's input_output_alias carried over), so the flattened
schedule, the values and the heap all grow with the number of copies. Linear time shows as a
flat "cpu us/step" column and a "vs 1x" ratio equal to the number of copies.

Run: ``python benchmarks/memory.py [FILE ...]``; each FILE (such as XLA's benchmark modules in
``/work/xla_bench``) is timed too, once, with ``live_range_peaks`` (what ``hloscope run`` asks
before allocating) beside it. Prints CPU seconds (best of N; CPU time is steadier than
wall time on a shared machine), schedule steps, values and microseconds per step; no
pass/fail, the figures are for the issue tracker.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "tests" / "data" / "seeds" / "003_83a80cec1e7cc5e6.txt"


def copies_in_one_entry(text: str, copies: int = 10) -> object:
    """One module holding ``copies`` renamed copies of ``text``'s program in a single entry."""
    import hloscope as hs
    from hloscope.ir import Computation, Instruction, Module, Opcode
    from hloscope.ir.attributes import AliasEntry
    from hloscope.ir.shape import TupleShape

    comps: list[object] = []
    body: list[Instruction] = []
    roots: list[Instruction] = []
    aliases: list[AliasEntry] = []
    first = None
    for k in range(copies):
        m = hs.parse(text)
        first = first or m
        offset = k * len(m.entry.parameters)
        for c in m.computations:
            c.name = f"{c.name}.x{k}"
            for inst in c.instructions:
                inst.name = f"{inst.name}.x{k}"
            if c is not m.entry:
                comps.append(c)
        for p in m.entry.parameters:
            p.attrs["parameter_number"] += offset
        for a in m.input_output_alias:
            aliases.append(AliasEntry((k, *a.output_index), a.parameter_number + offset,
                                      a.parameter_index, a.kind))
        body.extend(m.entry.instructions)
        roots.append(m.entry.root)
    assert first is not None
    root = Instruction("root.x", Opcode.TUPLE, TupleShape(tuple(r.shape for r in roots)), roots)
    entry = Computation("main.x", [*body, root], root, is_entry=True)
    attrs = {k: v for k, v in first.attrs.items() if k != "entry_computation_layout"}
    attrs["input_output_alias"] = aliases
    big = Module(first.name, [*comps, entry], entry, attrs, stack_frames=first.stack_frames,
                 style=first.style)
    for c in big.computations:
        c.module = big
    return big


def best_of(fn, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds of ``repeat`` runs (CPU time is steadier when the
    machine is shared)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


SIZES = (1, 2, 5, 10)


def main(files: list[str]) -> int:
    import hloscope as hs
    from hloscope.analysis.memory.report import analyze_memory, live_range_peaks

    text = SEED.read_text()
    print(f"{'workload':<14} {'steps':>7} {'values':>8} {'wall s':>8} {'cpu s':>8} {'cpu us/step':>12}"
          f" {'vs 1x':>6} {'total bytes':>14}")
    base = None
    for copies in SIZES:
        module = hs.parse(text) if copies == 1 else copies_in_one_entry(text, copies)
        report = analyze_memory(module)
        wall, cpu = best_of(lambda m=module: analyze_memory(m), 5 if copies < 5 else 3)
        base = base or cpu
        steps = report.schedule_end_time
        values = len(report.buffer_assignment.values) if report.buffer_assignment else 0
        print(f"{f'seed 003 x{copies}':<14} {steps:>7} {values:>8} {wall:>8.3f} {cpu:>8.3f}"
              f" {1e6 * cpu / steps:>12.1f} {cpu / base:>6.1f} {report.total_bytes:>14}")
    for path in files:
        module = hs.load(path)
        holder: list[object] = []
        wall, cpu = best_of(lambda m=module, h=holder: h.append(analyze_memory(m)), 1)
        peaks_wall, peaks_cpu = best_of(lambda m=module: live_range_peaks(m), 1)
        report = holder[0]
        print(f"{Path(path).name}: {report.schedule_end_time} steps, analyze_memory {wall:.2f} s wall "  # type: ignore[attr-defined]
              f"{cpu:.2f} s CPU, live_range_peaks {peaks_cpu:.2f} s CPU; peak {report.peak_bytes:,} B "  # type: ignore[attr-defined]
              f"at {report.peak_time}, temps {report.temp_bytes:,} B")  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
