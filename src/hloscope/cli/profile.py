"""``hloscope profile``: the op profile of a step's estimate (XProf's op profile, estimated).

The same figures as the report's Profile tab (``analysis.profile``): time by category and by
opcode with share, FLOP/s and bandwidth achieved against the hardware's peaks, what bounds
each, and a short list of what to fix first.
"""
from __future__ import annotations

import argparse

from hloscope.cli.common import (
    EXIT_OK,
    command,
    console,
    emit_json,
    format_bytes,
    format_count,
    format_seconds,
    input_file,
    non_negative_int,
    read_module,
    working,
)

__all__: list[str] = []


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    p.add_argument("--hardware", metavar="NAME",
                   help="a profile name (see `hloscope hardware`) or a profile JSON file; by default "
                        "the profile of the backend the module was compiled for (said in the output)")
    p.add_argument("--top", type=non_negative_int, default=15, help="how many opcode rows to list (0: all)")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%" if x >= 0.001 or x == 0 else f"{100 * x:.2f}%"


@command("profile", "op profile of the estimated step: time by category and opcode, FLOP/s and bandwidth "
         "against the peaks, what to fix first")(_configure)
def _profile(args: argparse.Namespace) -> int:
    from hloscope.analysis.cost import analyze_cost
    from hloscope.analysis.hardware import load_hardware
    from hloscope.analysis.profile import analyze_profile
    from hloscope.analysis.timing import estimate_time

    hw = load_hardware(args.hardware) if args.hardware else None
    m = read_module(args.file, "profile")
    assumed = None
    if hw is None:
        # Note [Inferring the backend] in analysis/backend.py, as `estimate` does
        from hloscope.analysis.backend import infer_backend

        inferred = infer_backend(m)
        hw, assumed = load_hardware(inferred.profile), inferred.assumed()
    with working(f"hloscope profile: timing every instruction on {hw.name}"):
        cost = analyze_cost(m)
        est = estimate_time(m, hw, cost_report=cost)
        prof = analyze_profile(m, est, cost, hw)
    if args.json:
        emit_json({**prof.to_json(top=args.top), "hardware_assumed": assumed})
        return EXIT_OK
    from rich.markup import escape
    from rich.table import Table

    con = console()
    con.print(f"[bold]{escape(m.name)}[/bold] on {escape(hw.name)}: step {format_seconds(prof.step_seconds)}, operations "
              f"{format_seconds(prof.op_seconds)} in all (shares are of the operations' time)")
    if assumed:
        con.print(f"[dim]{escape(assumed)}[/dim]")

    def rows_table(title: str, rows: list, key_label: str) -> Table:
        t = Table(title=title, title_justify="left")
        for col in (key_label, "time", "share", "ops", "FLOP/s", "of peak", "bandwidth", "of peak ", "bound"):
            t.add_column(col, justify="left" if col in (key_label, "bound") else "right")
        for r in rows:
            t.add_row(escape(r.key), format_seconds(r.seconds), _pct(r.share), str(r.instructions),
                      format_count(r.flop_rate) + "FLOP/s" if r.flop_rate else "–", _pct(r.flop_utilization),
                      format_bytes(r.bandwidth) + "/s" if r.bandwidth else "–", _pct(r.bandwidth_utilization), r.bound)
        return t

    con.print(rows_table("Time by category", list(prof.categories), "category"))
    shown = list(prof.opcodes) if args.top == 0 else list(prof.opcodes[:args.top])
    con.print(rows_table(f"Time by opcode ({len(shown)} of {len(prof.opcodes)})", shown, "opcode"))
    con.print("[bold]What to fix first[/bold]")
    for k, a in enumerate(prof.advice, 1):
        con.print(f"{k}. [bold]{a.title}[/bold]. {a.words}")
        con.print(f"   [dim]{', '.join(a.instructions[:8])}{' …' if len(a.instructions) > 8 else ''}[/dim]")
    return EXIT_OK
