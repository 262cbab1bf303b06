"""CLI subcommands that explain a module or a dump: buffers (and, as they land, cost, memory...)."""
from __future__ import annotations

import argparse
import sys

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
    output_file,
    positive_float,
    positive_int,
    read_module,
    short,
    working,
)

__all__: list[str] = []


def _configure_buffers(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump", metavar="DUMP",
                   help="an XLA buffer-assignment dump: a file (joined or split form), a file prefix, or a dump directory")
    p.add_argument("--module", help="which module, when DUMP is a directory holding several")
    p.add_argument("--top", type=non_negative_int, default=15, help="how many of the biggest buffers to list (default 15)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


@command("buffers", "read an XLA BufferAssignment dump: allocations by kind, total, the peak and what holds it")(
    _configure_buffers)
def _buffers(args: argparse.Namespace) -> int:
    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    ba = load_buffer_assignment(args.dump, module=args.module)
    peak = ba.peak_buffers
    if args.json:
        emit_json({
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

    con = console()
    con.print(f"[bold]{ba.module_name or args.dump}[/bold]: {ba.allocation_count} allocations, "
              f"{ba.total_bytes:,} bytes ({format_bytes(ba.total_bytes)}) in total")
    t = Table(title="Allocations by kind", title_justify="left")
    for col in ("kind", "count", "bytes"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for kind, nbytes in ba.bytes_by_kind.items():
        t.add_row(kind, str(ba.count_by_kind.get(kind, 0)), f"{nbytes:,}")
    con.print(t)
    if ba.peak_time is not None and ba.peak_bytes is not None:
        # The dump's live-range peak, not peak_memory_in_bytes (Note [peak_memory_in_bytes]).
        con.print(f"XLA's HloLiveRange peak: {ba.peak_bytes:,} bytes ({format_bytes(ba.peak_bytes)}) at time "
                  f"{ba.peak_time}, {len(peak)} buffers live")
        t = Table(title=f"Biggest buffers live at the peak (top {args.top})", title_justify="left")
        t.add_column("buffer")
        t.add_column("bytes", justify="right")
        for e in peak[: args.top]:
            t.add_row(e.key, f"{e.bytes:,}")
        con.print(t)
    else:
        sys.stdout.write("The dump has no live-range section, so no peak is known.\n")
    return EXIT_OK


_num = format_count  # Note [One unit convention] in cli/common.py
_seconds = format_seconds


# --- cost ---------------------------------------------------------------------------------------
def _configure_cost(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--per-op", action="store_true", help="list the costliest instructions (20 unless --top says)")
    p.add_argument("--top", type=non_negative_int, help="list this many of the costliest instructions (implies --per-op)")
    p.add_argument("--by", choices=("flops", "bytes_accessed", "transcendentals"), default="flops",
                   help="order of the --per-op list (default flops)")


@command("cost", "FLOPs, transcendentals and bytes accessed, as XLA counts them and loop-aware")(_configure_cost)
def _cost(args: argparse.Namespace) -> int:
    from hloscope.analysis.cost import analyze_cost

    m = read_module(args.file, "cost")
    with working("hloscope cost: counting FLOPs and bytes"):
        r = analyze_cost(m)
    top = args.top if args.top is not None else (20 if args.per_op else 0)
    if args.json:
        data = r.to_json(top=0)
        if top:
            data["per_instruction"] = [ic.to_json() for ic in r.top(top, key=args.by)]
        emit_json(data)
        return EXIT_OK
    from rich.table import Table

    con = console()
    t = Table(title=f"Cost of {m.name}", title_justify="left")
    t.add_column("")
    t.add_column("as XLA counts", justify="right")
    t.add_column("loop-aware", justify="right")
    for label, key in (("FLOPs", "flops"), ("transcendentals", "transcendentals"),
                       ("bytes accessed", "bytes_accessed")):
        fmt = format_bytes if key == "bytes_accessed" else _num
        t.add_row(label, fmt(getattr(r.total, key)), fmt(getattr(r.loop_aware, key)))
    con.print(t)
    if r.trip_counts:
        unknown = [n for n, c in r.trip_counts.items() if c is None]
        known = {n: c for n, c in r.trip_counts.items() if c is not None}
        con.print(f"while loops: {len(r.trip_counts)} ({len(known)} with a known trip count"
                  + (f"; unknown, counted once: {', '.join(unknown[:8])}" if unknown else "") + ")")
    con.print("[dim]'as XLA counts' matches HloCostAnalysis: loop bodies once, custom calls -1; "
              "'loop-aware' multiplies loops by their trip counts and counts custom calls by meaning "
              "(gemm, conv, TopK, threefry; sharding annotations nothing; others their operand and "
              "result bytes).[/dim]")
    if top:
        t = Table(title=f"Costliest instructions by {args.by} (loop-aware)", title_justify="left")
        for col in ("instruction", "opcode", "FLOPs", "bytes", "op_name", "source"):
            t.add_column(col, justify="right" if col in ("FLOPs", "bytes") else "left", overflow="fold")
        for ic in r.top(top, key=args.by):
            t.add_row(ic.name, ic.opcode, _num(ic.cost.flops), format_bytes(ic.cost.bytes_accessed),
                      short(ic.op_name), short(ic.source, 60))
        con.print(t)
    return EXIT_OK


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# --- collectives --------------------------------------------------------------------------------
def _configure_collectives(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    p.add_argument("--replicas", type=positive_int, help="number of replicas (default: the module's, or the replica groups')")
    p.add_argument("--partitions", type=positive_int, help="number of partitions (default: the module's)")
    p.add_argument("--top", type=non_negative_int, default=20,
                   help="how many collectives to list, most bytes on the wire first (default 20; 0: all)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (every collective)")


@command("collectives", "each collective: group size, bytes per device and on the wire (ring, tree)")(
    _configure_collectives)
def _collectives(args: argparse.Namespace) -> int:
    from hloscope.analysis.collectives import analyze_collectives

    m = read_module(args.file, "collectives")
    with working("hloscope collectives: reading replica groups"):
        r = analyze_collectives(m, num_replicas=args.replicas, num_partitions=args.partitions)
    if args.json:
        emit_json(r.to_json())
        return EXIT_OK
    from rich.table import Table

    con = console()
    con.print(f"[bold]{m.name}[/bold]: {_plural(len(r.collectives), 'collective')} on "
              f"{_plural(r.num_replicas, 'replica')} x {_plural(r.num_partitions, 'partition')}")
    if not r.collectives:
        return EXIT_OK
    # Bytes are per device and step (loop trip counts multiplied in), in binary units.
    t = Table(title="By kind (per step and device)", title_justify="left")
    for col in ("opcode", "mode", "group", "instructions", "x/step", "payload", "ring", "tree"):
        t.add_column(col, justify="left" if col in ("opcode", "mode") else "right")
    for k in r.by_kind():
        t.add_row(k.opcode, k.group_mode, str(k.group_size), str(k.instructions), str(k.count),
                  format_bytes(k.payload_bytes), format_bytes(k.ring_bytes), format_bytes(k.tree_bytes))
    con.print(t)
    shown = r.top(args.top)
    title = ("Every collective" if len(shown) == len(r.collectives)
             else f"The {len(shown)} moving the most bytes on the wire (ring)")
    t = Table(title=title + " (bytes per execution; x/step executions per step)", title_justify="left")
    for col in ("instruction", "opcode", "mode", "group", "groups", "payload", "ring", "tree", "x/step"):
        t.add_column(col, justify="left" if col in ("instruction", "opcode", "mode") else "right")
    for c in shown:
        t.add_row(c.name, c.opcode, c.group_mode, str(c.group_size), str(c.num_groups),
                  format_bytes(c.payload_bytes), format_bytes(c.ring_bytes), format_bytes(c.tree_bytes), str(c.count))
    con.print(t)
    if len(shown) < len(r.collectives):
        con.print(f"[dim]{len(r.collectives) - len(shown)} more: --top 0 lists every one, --json gives them all.[/dim]")
    con.print(f"Per step and device: {format_bytes(r.payload_bytes)} payload; {format_bytes(r.ring_bytes)} on the wire "
              f"(ring), {format_bytes(r.tree_bytes)} (tree).")
    return EXIT_OK


# --- estimate / hardware / calibrate ------------------------------------------------------------
def _configure_estimate(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    p.add_argument("--hardware", metavar="NAME",
                   help="a profile name (see `hloscope hardware`) or a profile JSON file; by default "
                        "the profile of the backend the module was compiled for (said in the output)")
    p.add_argument("--top", type=non_negative_int, default=15, help="how many of the longest operations to list")
    p.add_argument("--trace", metavar="OUT", type=output_file, help="write the simulated schedule as a Chrome/Perfetto trace JSON")
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")


@command("estimate", "estimated step time on named hardware: roofline per op, collectives, overlap")(
    _configure_estimate)
def _estimate(args: argparse.Namespace) -> int:
    import json

    from hloscope.analysis.backend import infer_backend
    from hloscope.analysis.hardware import load_hardware
    from hloscope.analysis.timing import estimate_time

    hw = load_hardware(args.hardware) if args.hardware else None
    m = read_module(args.file, "estimate")
    assumed = None
    if hw is None:
        # Note [Inferring the backend] in analysis/backend.py
        inferred = infer_backend(m)
        hw, assumed = load_hardware(inferred.profile), inferred.assumed()
    with working(f"hloscope estimate: timing every instruction on {hw.name}"):
        est = estimate_time(m, hw)
    if args.trace:
        from hloscope.fileio import atomic_write_text, check_not_input

        check_not_input(args.trace, [args.file])
        atomic_write_text(args.trace, json.dumps(est.to_chrome_trace()))
    data = est.to_json(top=args.top)
    data["hardware_assumed"] = assumed
    if args.json:
        emit_json(data)
        return EXIT_OK
    from rich.markup import escape
    from rich.table import Table

    con = console()
    con.print(f"[bold]{escape(m.name)}[/bold] on {escape(hw.name)}: about [bold]{_seconds(est.total_seconds)}[/bold] per step")
    if assumed:
        con.print(f"  {escape(assumed)} (--hardware NAME for another profile)", highlight=False)
    faults = (f", fresh pages {_seconds(est.fresh_page_seconds)} ({len(est.fresh_pages)} allocation"
              f"{'s' if len(est.fresh_pages) != 1 else ''} mapped anew each run)" if est.fresh_pages else "")
    con.print(f"  compute {_seconds(est.compute_seconds)}, memory {_seconds(est.memory_seconds)}, "
              f"communication {_seconds(est.communication_seconds)}, launch overhead {_seconds(est.launch_seconds)}"
              f"{faults} (summed per op; ops overlap, so these exceed the total)")
    for note in est.notes:
        con.print(f"[bold]note:[/bold] {escape(note)}", highlight=False)
    t = Table(title=f"Longest operations (top {args.top})", title_justify="left")
    for col in ("instruction", "opcode", "stream", "time"):
        t.add_column(col, justify="right" if col == "time" else "left")
    for row in data.get("longest", []):
        t.add_row(escape(row["instruction"]), row["opcode"], row["stream"], _seconds(row["seconds"]))
    con.print(t)
    if args.trace:
        con.print(f"trace written to {args.trace} (open it in ui.perfetto.dev or chrome://tracing)")
    return EXIT_OK


def _configure_hardware(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="show one profile in full")
    p.add_argument("--json", action="store_true", help="print as JSON")


@command("hardware", "list the bundled hardware profiles, or show one")(_configure_hardware)
def _hardware(args: argparse.Namespace) -> int:
    from hloscope.analysis.hardware import list_hardware, load_hardware

    if args.name:
        spec = load_hardware(args.name)
        emit_json(spec.to_json())
        return EXIT_OK
    names = list_hardware()
    if args.json:
        emit_json([load_hardware(n).to_json() for n in names])
        return EXIT_OK
    from rich.table import Table

    t = Table(title="Hardware profiles (copy one and edit it; pass its path to --hardware)", title_justify="left")
    for col in ("name", "kind", "bf16 FLOP/s", "f32 FLOP/s", "memory B/s", "link B/s"):
        t.add_column(col, justify="left" if col in ("name", "kind") else "right")
    for n in names:
        s = load_hardware(n)
        t.add_row(s.name, s.kind, _num(s.flops_per_second("bf16")), _num(s.flops_per_second("f32")),
                  _num(s.memory_bandwidth), _num(s.intra_node.bandwidth))
    console().print(t)
    return EXIT_OK


def _configure_calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", default="cpu-calibrated.json", metavar="OUT", type=output_file,
                   help="where to write the profile (default cpu-calibrated.json)")
    p.add_argument("--seconds", type=positive_float, default=2.0, help="measurement budget (default 2 s)")
    p.add_argument("--name", default="cpu-calibrated", help="the profile's name")


@command("calibrate", "measure this machine's matmul FLOP/s and memory bandwidth and write a profile")(
    _configure_calibrate)
def _calibrate(args: argparse.Namespace) -> int:
    from hloscope.analysis.hardware import save_hardware
    from hloscope.xla.calibrate import calibrate

    spec = calibrate(args.seconds, name=args.name)
    path = save_hardware(spec, args.output)
    sys.stdout.write(f"{spec.name}: f32 {_num(spec.flops_per_second('f32'))}FLOP/s, "
                     f"f64 {_num(spec.flops_per_second('f64'))}FLOP/s, memory {_num(spec.memory_bandwidth)}B/s\n"
                     f"written to {path}; use it with --hardware {path}\n")
    return EXIT_OK


# --- memory -------------------------------------------------------------------------------------
def _configure_memory(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    p.add_argument("--schedule", choices=("module", "xla", "min-memory"), default="module",
                   help="module: the module's own order (default); min-memory: a memory-minimizing list scheduler")
    p.add_argument("--top", type=non_negative_int, default=15, help="how many peak buffers to list (0: all)")
    p.add_argument("--dump", metavar="OUT", type=output_file, help="write the assignment in XLA's BufferAssignment text form")
    p.add_argument("--backend", choices=("cpu", "gpu", "tpu"), default=None,
                   help="the backend whose peak_memory_in_bytes to compute as XLA does (default: guessed "
                        "from the module: GPU custom calls, TPU tiled layouts, else CPU)")
    p.add_argument("--explain", action="store_true", help="explain how XLA's memory figures arise")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


@command("memory", "buffer assignment, live ranges and the peak, with the buffers that make it")(_configure_memory)
def _memory(args: argparse.Namespace) -> int:
    from hloscope.analysis.memory.report import LIVE_RANGE_PEAK_LABEL, analyze_memory

    m = read_module(args.file, "memory")
    with working("hloscope memory: live ranges, buffer assignment and the heap"):
        r = analyze_memory(m, schedule=args.schedule, backend=args.backend)
    if args.dump:
        from hloscope.fileio import atomic_write_text, check_not_input
        from hloscope.text.buffer_assignment_dump import format_buffer_assignment

        check_not_input(args.dump, [args.file])
        if r.buffer_assignment is None:
            raise_error = "the memory analysis produced no buffer assignment to dump"
            sys.stderr.write(raise_error + "\n")
            return 1
        atomic_write_text(args.dump, format_buffer_assignment(r.buffer_assignment))
    if args.json:
        data = r.to_json()
        if args.top:
            data["peak_buffers"] = data["peak_buffers"][: max(args.top, 0)]
            for space in data["memory_spaces"].values():
                space["peak_buffers"] = space["peak_buffers"][: max(args.top, 0)]
        emit_json(data)
        return EXIT_OK
    from rich.table import Table

    con = console()
    con.print(f"[bold]{m.name}[/bold] (schedule: {r.schedule})")
    t = Table(title_justify="left")
    t.add_column("figure")
    t.add_column("bytes", justify="right")
    t.add_column("")
    for label, value in (("arguments", r.argument_bytes), ("outputs", r.output_bytes),
                         ("aliased (outputs in donated arguments)", r.alias_bytes),
                         ("temporaries (heap)", r.temp_bytes), ("temporaries, lower bound", r.temp_lower_bound),
                         ("constants", r.constant_bytes), ("thread-local", r.thread_local_bytes),
                         ("total (XLA's 'Total bytes used')", r.total_bytes),
                         (f"{LIVE_RANGE_PEAK_LABEL}, at step {r.peak_time} of {r.schedule_end_time}"
                          + (f" ({r.peak_instruction})" if r.peak_instruction else ""), r.peak_bytes),
                         (f"XLA's HloLiveRange peak, at step {r.xla_peak_time}", r.xla_peak_bytes)):
        t.add_row(label, f"{value:,}", format_bytes(value))
    xp = r.xla_peak_memory
    t.add_row(xp.label, "-" if xp.bytes is None else f"{xp.bytes:,}",
              "not derivable" if xp.bytes is None else format_bytes(xp.bytes))
    con.print(t)
    # Note [peak_memory_in_bytes] in analysis/memory/xla_peak.py: say what XLA's figure counts.
    con.print(f"{xp.label}: {xp.counts} (backend {xp.backend}: {xp.backend_reason}).", soft_wrap=True)
    if r.peak_note():
        con.print(r.peak_note(), soft_wrap=True)
    for space in sorted(k for k in r.memory_spaces.keys() | r.other_memory_spaces.keys() if k):
        s = r.memory_spaces.get(space)
        con.print(f"memory space S({space}): temporaries {format_bytes(r.other_memory_spaces.get(space, 0))}, "
                  f"live-range peak {format_bytes(s.peak_bytes if s else 0)}"
                  + (f" at time {s.peak_time}" if s else "") + ", not included above")
    shown = len(r.peak_buffers) if args.top <= 0 else min(args.top, len(r.peak_buffers))
    title = (f"Buffers live at the peak (top {shown} of {len(r.peak_buffers)})" if shown < len(r.peak_buffers)
             else f"Buffers live at the peak ({len(r.peak_buffers)})")
    t = Table(title=title, title_justify="left")
    for col in ("buffer", "shape", "bytes", "opcode", "op_name", "source"):
        t.add_column(col, justify="right" if col == "bytes" else "left", overflow="fold")
    for b in r.peak_buffers[:shown]:
        idx = "{" + ",".join(map(str, b.index)) + "}" if b.index else ""
        t.add_row(b.instruction + idx, b.shape, f"{b.bytes:,}", b.opcode, short(b.op_name), short(b.source, 60))
    con.print(t)
    if args.explain:
        con.print(r.explain())
    if args.dump:
        con.print(f"buffer assignment written to {args.dump}")
    return EXIT_OK
