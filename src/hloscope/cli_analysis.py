"""CLI subcommands that explain a module or a dump: buffers (and, as they land, cost, memory...)."""
from __future__ import annotations

import argparse
import sys

from hloscope.cli import EXIT_OK, _bytes, _console, _emit_json, command

__all__: list[str] = []


def _configure_buffers(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump", metavar="DUMP",
                   help="an XLA buffer-assignment dump: a file (joined or split form), a file prefix, or a dump directory")
    p.add_argument("--module", help="which module, when DUMP is a directory holding several")
    p.add_argument("--top", type=int, default=15, help="how many of the biggest buffers to list (default 15)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


@command("buffers", "read an XLA BufferAssignment dump: allocations by kind, total, the peak and what holds it")(
    _configure_buffers)
def _buffers(args: argparse.Namespace) -> int:
    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    ba = load_buffer_assignment(args.dump, module=args.module)
    peak = ba.peak_buffers
    if args.json:
        _emit_json({
            "module": ba.module_name,
            "allocation_count": ba.allocation_count,
            "total_bytes": ba.total_bytes,
            "bytes_by_kind": ba.bytes_by_kind,
            "count_by_kind": ba.count_by_kind,
            "peak_bytes": ba.peak_bytes,
            "peak_time": ba.peak_time,
            "peak_buffers": [e.to_json() for e in peak],
        })
        return EXIT_OK
    from rich.table import Table

    con = _console()
    con.print(f"[bold]{ba.module_name or args.dump}[/bold]: {ba.allocation_count} allocations, "
              f"{ba.total_bytes:,} bytes ({_bytes(ba.total_bytes)}) in total")
    t = Table(title="Allocations by kind", title_justify="left")
    for col in ("kind", "count", "bytes"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for kind, nbytes in ba.bytes_by_kind.items():
        t.add_row(kind, str(ba.count_by_kind.get(kind, 0)), f"{nbytes:,}")
    con.print(t)
    if ba.peak_time is not None:
        con.print(f"Peak: {ba.peak_bytes:,} bytes ({_bytes(ba.peak_bytes)}) at time {ba.peak_time}, "
                  f"{len(peak)} buffers live")
        t = Table(title=f"Biggest buffers live at the peak (top {args.top})", title_justify="left")
        t.add_column("buffer")
        t.add_column("bytes", justify="right")
        for e in peak[: args.top]:
            t.add_row(e.key, f"{e.bytes:,}")
        con.print(t)
    else:
        sys.stdout.write("The dump has no live-range section, so no peak is known.\n")
    return EXIT_OK
