"""The ``report``, ``graph`` and ``diff`` subcommands: show a module as a page, a graph or a diff."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from hloscope.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    command,
    emit_json,
    input_file,
    input_file_or_dir,
    non_negative_int,
    output_file,
    read_module,
    working,
)
from hloscope.errors import InputError

__all__: list[str] = []


def _configure_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", metavar="FILE", type=input_file_or_dir,
                   help="HLO text file (default: the bundled example module); a directory or a sweep's "
                        "RESULTS.jsonl writes the index of its modules (see `hloscope sweep`)")
    p.add_argument("-o", "--output", metavar="OUT", default=None, type=output_file,
                   help="where to write the HTML page (default: report.html; index.html for a directory)")
    p.add_argument("--hardware", metavar="NAME", help="hardware for the time estimate (a bundled name or a JSON file)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="IN.npz", type=input_file,
                     help="run the module on these inputs and add a Numerics tab: every value's statistics "
                          "along the schedule, where magnitudes explode or vanish (as `hloscope run --inputs`)")
    src.add_argument("--random", type=non_negative_int, metavar="SEED", help="the same with random inputs from SEED")
    index = p.add_argument_group("the index of a directory or a sweep")
    index.add_argument("--results", metavar="RESULTS.jsonl",
                       help="the sweep results a directory's index reads, and where the modules not in it yet "
                            "are swept to (default: the index's name with .jsonl)")
    index.add_argument("--serve", nargs="?", type=int, const=0, metavar="PORT",
                       help="serve the index on localhost (PORT, default any free one): a module's report is "
                            "written the first time its link is opened")
    index.add_argument("--jobs", "-j", type=int, metavar="N",
                       help="processes sweeping a directory, or building one module's report (1: one process; "
                            "default: the CPUs this process may use, for a module of 20,000 instructions or more)")
    index.add_argument("--ray", nargs="?", const="", metavar="ADDR", help="sweep a directory with Ray tasks")


@command("report", "write a self-contained HTML report: summary, cost, memory, collectives, graphs, text")(_configure_report)
def _report(args: argparse.Namespace) -> int:
    from hloscope.api import load
    from hloscope.report import write_report

    if args.hardware:  # a bad name or file is the user's error, not a note inside the page
        from hloscope.analysis.hardware import load_hardware

        load_hardware(args.hardware)
    path = args.file
    if path is not None and (Path(path).is_dir() or path.endswith(".jsonl")):
        return _report_index(args)
    args.output = args.output or "report.html"
    if path is None:
        from hloscope.examples import default_example_path

        path = str(default_example_path())
    if _is_buffer_assignment_dump(path):
        return _report_dump(path, args.output)
    started = time.perf_counter()
    progress = TerminalProgress(sys.stderr)
    progress("parse", None)
    module = load(path)
    progress("parse", time.perf_counter() - started)
    run_inputs, grid = None, (None, None)
    if args.inputs or args.random is not None:
        from hloscope.interpret.inputs import inputs_from_mapping, random_inputs
        from hloscope.interpret.npz_io import load_npz
        from hloscope.interpret.run import default_grid

        grid = default_grid(module)
        n = grid[0] * grid[1]
        run_inputs = (inputs_from_mapping(module, load_npz(args.inputs), n) if args.inputs
                      else random_inputs(module, args.random, "normal", num_devices=n))
    out = write_report(module, args.output, hardware=args.hardware, inputs=[path] + ([args.inputs] if args.inputs else []),
                       progress=progress, run_inputs=run_inputs, replicas=grid[0], partitions=grid[1], jobs=args.jobs)
    sys.stdout.write(f"wrote {Path(out).resolve()} ({module.name}, {module.instruction_count} instructions, "
                     f"{time.perf_counter() - started:.1f} s)\n")
    return EXIT_OK


def _report_index(args: argparse.Namespace) -> int:
    """``hloscope report DIR|RESULTS.jsonl``: the index page of a sweep (cli/sweep.py)."""
    from hloscope.cli.sweep import index_target, serve_index, write_index

    records, index, source = index_target(args.file, args.output, args.results, args.jobs, args.ray)
    if not records:
        raise InputError(f"{args.file}: no modules to index")
    if args.serve is not None:
        return serve_index(records, index, source, args.serve)
    out = write_index(records, index, source=source)
    sys.stdout.write(f"wrote {out} ({len(records)} modules from {source}; reports are written on demand: "
                     f"--serve writes each when first opened)\n")
    return EXIT_OK


def _report_dump(path: str, output: str) -> int:
    """A BufferAssignment dump has no module to draw: its page shows the allocations and the peak."""
    from hloscope.fileio import atomic_write_text, check_not_input
    from hloscope.report.data import collect_dump_data
    from hloscope.report.html import render_html
    from hloscope.text.buffer_assignment_dump import load_buffer_assignment

    check_not_input(output, [path])
    ba = load_buffer_assignment(path)
    atomic_write_text(output, render_html(collect_dump_data(ba, source_path=path)))
    sys.stdout.write(f"wrote {Path(output).resolve()} (BufferAssignment dump: {ba.allocation_count} allocations; "
                     f"`hloscope buffers {path}` prints the same in the terminal)\n")
    return EXIT_OK


def _is_buffer_assignment_dump(path: str) -> bool:
    """Whether ``path`` starts like XLA's ``*buffer-assignment.txt`` (the report reads modules only)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False  # load() reports the real problem
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), "")
    return first.startswith("BufferAssignment:") or first.startswith("allocation 0:")


class TerminalProgress:
    """Report steps on the terminal as they start and end, so a big module is not a silent wait.

    On a terminal each step rewrites one status line; otherwise only steps slower than a second
    are written, one line each, so logs stay short.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, step: str, seconds: float | None) -> None:
        if self.tty:
            text = f"hloscope report: {step}…" if seconds is None else f"hloscope report: {step} {seconds:.1f} s"
            self.stream.write("\r\033[K" + text + ("\n" if seconds is not None and seconds >= 1 else ""))
        elif seconds is not None and seconds >= 1:
            self.stream.write(f"hloscope report: {step} took {seconds:.1f} s\n")
        self.stream.flush()


# A computation larger than this is drawn grouped by op_name namespace unless --group says
# otherwise (Note [Namespace groups] in report/graphs.py): a picture of thousands of boxes
# answers nothing, and a browser crawls over it.
GRAPH_MAX_NODES = 300
# Grouped by default: the deepest grouping into at most this many namespaces (a training
# step's layers and passes), GRAPH_MAX_NODES nodes in all.
GRAPH_GROUPS = 40
# Without op_names, up to this many instructions are drawn one by one (a second or two);
# beyond, consecutive runs of the program (group_by_order).
GRAPH_ALL_NODES = 4000


def _configure_graph(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", type=input_file, help="HLO text file ('-' reads standard input)")
    p.add_argument("--computation", metavar="NAME", help="computation to draw (default: the entry)")
    p.add_argument("--around", metavar="INSTR", help="draw only the neighbourhood of this instruction")
    p.add_argument("--depth", type=non_negative_int, default=2, help="neighbourhood depth in operand/user steps (default 2)")
    p.add_argument("--expand", metavar="FUSION", action="append", default=[],
                   help="inline this fusion instruction's body (repeatable)")
    p.add_argument("--group", type=non_negative_int, metavar="LEVELS",
                   help="one node per op_name namespace of LEVELS parts (jit(f)/block0/attn: 3); 0 draws "
                        f"every instruction; default: every instruction up to {GRAPH_MAX_NODES}, else the "
                        f"deepest grouping into at most {GRAPH_GROUPS} namespaces")
    p.add_argument("--graphviz", action="store_true",
                   help="draw the .svg with Graphviz's 'dot' (installed separately; slow on big graphs) "
                        "instead of hloscope's own layout")
    p.add_argument("-o", "--output", metavar="OUT", required=True, type=output_file,
                   help="out.svg for a drawing (no Graphviz needed), out.dot for Graphviz text, out.json for data")


@command("graph", "draw a computation's graph as SVG, or write it as DOT or JSON")(_configure_graph)
def _graph(args: argparse.Namespace) -> int:
    from hloscope.fileio import atomic_write_text, check_not_input
    from hloscope.ir import Opcode
    from hloscope.report.graphs import (
        computation_graph,
        group_by_namespace,
        group_by_order,
        namespace_depth_for,
        neighbourhood_graph,
        render_svg,
    )

    suffix = Path(args.output).suffix.lower()
    if suffix not in (".dot", ".gv", ".svg", ".json"):
        sys.stderr.write(f"hloscope graph: {args.output}: give a .svg, .dot or .json output path\n")
        return EXIT_USAGE
    check_not_input(args.output, [args.file])
    module = read_module(args.file, "graph")
    if args.computation:
        try:
            comp = module.computation(args.computation)
        except KeyError:
            raise InputError(f"no computation {args.computation!r} in {module.name}") from None
    elif args.around:
        # An instruction name is unique in the module, so find its computation for the user.
        comp = next((c for c in module.computations if any(i.name == args.around for i in c.instructions)), module.entry)
    else:
        comp = module.entry
    fusions = {i.name for i in comp.instructions if i.opcode is Opcode.FUSION}
    unknown = sorted(set(args.expand) - fusions)
    if unknown:
        raise InputError(f"--expand {unknown[0]}: no fusion instruction of that name in {comp.name}"
                         + (f" (its fusions: {', '.join(sorted(fusions)[:8])}{' ...' if len(fusions) > 8 else ''})"
                            if fusions else " (it has no fusions)"))
    if args.around:
        graph = neighbourhood_graph(comp, args.around, args.depth)
    else:
        graph = computation_graph(comp, expand=set(args.expand))
    instructions = len(graph.nodes)
    levels = args.group
    segments = False
    if levels is None and instructions > GRAPH_MAX_NODES:
        levels = namespace_depth_for(graph, GRAPH_GROUPS, GRAPH_MAX_NODES)
        if levels is None and instructions > GRAPH_ALL_NODES:
            graph, segments = group_by_order(graph, GRAPH_MAX_NODES // 2), True
    if levels:
        graph = group_by_namespace(graph, levels)
    with working(f"hloscope graph: drawing {len(graph.nodes):,} nodes"):
        if suffix == ".json":
            import json

            text = json.dumps(graph.to_json(), indent=1)
        elif suffix == ".svg" and args.graphviz:
            text = render_svg(graph.to_dot())
        elif suffix == ".svg":
            from hloscope.report.graph_svg import graph_to_svg

            text = graph_to_svg(graph)
        else:
            text = graph.to_dot()
    atomic_write_text(args.output, text)
    what = f"{len(graph.nodes):,} nodes, {len(graph.edges):,} edges of {comp.name}"
    if levels:
        what += (f"; {instructions:,} instructions grouped by the first {levels} op_name level(s)"
                 + ("" if args.group else ", --group 0 draws every one, --around NAME one's neighbourhood"))
    elif segments:
        what += (f"; no op_names to group by, so {instructions:,} instructions in runs of program order: "
                 "--group 0 draws every one (slow), --around NAME one's neighbourhood")
    elif instructions > GRAPH_MAX_NODES and args.group is None:
        what += "; no op_names to group by: --around NAME draws one instruction's neighbourhood"
    sys.stdout.write(f"wrote {args.output} ({what})\n")
    return EXIT_OK


def _configure_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("before", metavar="A", type=input_file, help="the module before")
    p.add_argument("after", metavar="B", type=input_file, help="the module after")
    p.add_argument("--json", action="store_true", help="print the diff as JSON")
    p.add_argument("--limit", type=non_negative_int, default=40, help="rows shown per list in the text form (default 40)")


@command("diff", "compare two modules: added, removed and changed instructions, and the change in totals")(_configure_diff)
def _diff(args: argparse.Namespace) -> int:
    from hloscope.report.diff import diff_modules

    before, after = read_module(args.before, "diff"), read_module(args.after, "diff")
    with working("hloscope diff: matching instructions and comparing totals"):
        d = diff_modules(before, after)
    if args.json:
        emit_json(d.to_json())
        return EXIT_OK
    w = sys.stdout.write
    w(f"{d.before} -> {d.after}: {d.matched_by_name} matched by name, {d.matched_by_structure} by structure; "
      f"{d.unchanged} unchanged, {len(d.changed)} changed, {len(d.added)} added, {len(d.removed)} removed\n")
    if d.before_view is not None and d.after_view is not None:
        w(f"  before: {d.before_view.describe()} ({d.before_view.why})\n")
        w(f"  after: {d.after_view.describe()} ({d.after_view.why})\n")
    if d.basis != "as given":
        w(f"  totals {d.basis} (the global program's figures brought to one device's):\n")
    for m in d.metrics:
        if m.before is None or m.after is None:
            w(f"  {m.name}: not available ({m.note})\n")
            continue
        pct = f" ({(m.after - m.before) / m.before:+.1%})" if m.before else ""
        w(f"  {m.name}: {m.before:,.0f} -> {m.after:,.0f} {m.unit}{pct}\n")
        if m.before_as_given is not None and (m.before_as_given, m.after_as_given) != (m.before, m.after):
            w(f"      as given {m.before_as_given:,.0f} -> {m.after_as_given:,.0f}; {m.note}\n")
    for title, rows in (("removed", d.removed), ("added", d.added)):
        if rows:
            w(f"{title}:\n")
            for r in rows[:args.limit]:
                w(f"  {r.name} = {r.shape} {r.opcode}  [{r.computation}]\n")
            if len(rows) > args.limit:
                w(f"  ... {len(rows) - args.limit} more\n")
    if d.changed:
        w("changed:\n")
        for c in d.changed[:args.limit]:
            name = c.before if c.before == c.after else f"{c.before} -> {c.after}"
            what = "; ".join(f"{k} {a} -> {b}" for k, (a, b) in c.changes.items())
            w(f"  {name}: {what}\n")
        if len(d.changed) > args.limit:
            w(f"  ... {len(d.changed) - args.limit} more\n")
    return EXIT_OK
