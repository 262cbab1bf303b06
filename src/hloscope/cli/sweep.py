"""The ``sweep`` command, and the index of a sweep (``report DIR``, ``report RESULTS.jsonl``),
written to disk or served with each module's report written when first opened."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from hloscope.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    command,
    output_file,
    positive_float,
    positive_int,
)

__all__ = ["write_index", "serve_index", "index_target"]


def _configure_sweep(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="DIR|GLOB",
                   help="a dump directory (every module file under it) or a glob pattern ('dump/*after_opt*.txt')")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--jobs", "-j", type=positive_int, metavar="N",
                       help="local processes running modules at once (default: the number of CPUs)")
    where.add_argument("--ray", nargs="?", const="", metavar="ADDR",
                       help="run each module as a Ray task: on a local Ray instance, or the cluster at ADDR "
                            "('auto' or host:port; pip install 'hloscope[ray]')")
    p.add_argument("--check-xla", action="store_true",
                   help="also run each module on random inputs with hloscope and on XLA:CPU (needs jax) and "
                        "record the largest difference")
    p.add_argument("-o", "--output", metavar="RESULTS.jsonl", required=True, type=output_file,
                   help="one JSON line per module; a sweep run again with the same file skips the modules "
                        "it holds (resumes)")
    p.add_argument("--report", metavar="INDEX.html", type=output_file,
                   help="also write the index page: every module with its figures, linked to its report "
                        "(written on demand)")
    p.add_argument("--hardware", default="h100-sxm", metavar="NAME",
                   help="hardware of the time estimate (default h100-sxm)")
    p.add_argument("--timeout", type=positive_float, default=300.0, metavar="S",
                   help="seconds one module may take before it is recorded as a timeout (default 300)")


class _Display:
    """Progress of a sweep: a live bar on a terminal, else a line every ten seconds."""

    def __init__(self, total: int, skipped: int) -> None:
        self.total, self.skipped = total, skipped
        self.done = 0
        self.bad = 0
        self.started = time.perf_counter()
        self.last_line = self.started
        self.bar: Any = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                                TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task("", total=total)
            self.bar.start()

    def rate(self) -> float:
        return self.done / max(1e-9, time.perf_counter() - self.started)

    def __call__(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.bad += record.get("status") != "ok"
        text = f"{self.bad} failed, {self.rate():.1f} modules/s"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=text)
        elif time.perf_counter() - self.last_line > 10 or self.done == self.total:
            self.last_line = time.perf_counter()
            sys.stderr.write(f"sweep: {self.done}/{self.total} modules, {text}\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@command("sweep", "analyse every module of a dump directory in parallel (processes or Ray): one JSON line each")(
    _configure_sweep)
def _sweep(args: argparse.Namespace) -> int:
    from hloscope.sweep import SweepOptions, find_modules, read_results, sweep

    paths = find_modules(args.target)
    if not paths:
        sys.stderr.write(f"hloscope sweep: no module files in {args.target}\n")
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        sys.stderr.write("hloscope sweep: --jobs must be at least 1\n")
        return EXIT_USAGE
    options = SweepOptions(hardware=args.hardware, check_xla=args.check_xla, timeout=args.timeout)
    display = _Display(len(paths), 0)
    started = time.perf_counter()
    try:
        count, skipped = sweep(paths, args.output, options, jobs=args.jobs or os.cpu_count() or 1,
                               use_ray=args.ray is not None, ray_address=args.ray or None, on_result=display)
    finally:
        display.close()
    seconds = time.perf_counter() - started
    results = read_results(args.output)
    keys = {_key(p) for p in paths}
    mine = [r for k, r in results.items() if k in keys]
    by_status: dict[str, int] = {}
    for r in mine:
        by_status[str(r.get("status"))] = by_status.get(str(r.get("status")), 0) + 1
    where = "Ray tasks" if args.ray is not None else f"{args.jobs or os.cpu_count() or 1} process(es)"
    sys.stdout.write(f"swept {count} module(s) in {seconds:.1f} s on {where} ({count / max(seconds, 1e-9):.1f} "
                     f"modules/s)" + (f"; {skipped} already in {args.output}" if skipped else "") + "\n")
    sys.stdout.write(f"{len(mine)} module(s): " + ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
                     + f"; results in {args.output}\n")
    if args.report:
        out = write_index(mine, args.report, source=args.output)
        sys.stdout.write(f"wrote {out} (reports are written on demand: `hloscope report {args.output} --serve`)\n")
    return EXIT_OK


def _key(path: Path) -> str:
    from hloscope.sweep import module_key

    try:
        return module_key(path)
    except OSError:
        return os.path.abspath(path)


def _links(records: list[dict[str, Any]], index: Path) -> dict[str, Any]:
    from hloscope.report.index import ReportLink
    from hloscope.sweep import report_slug

    reports = index.parent / "reports"
    links = {}
    for r in records:
        if r.get("status") == "ok" or r.get("module"):
            target = reports / f"{report_slug(r['path'])}.html"
            links[str(r["key"])] = ReportLink(f"reports/{target.name}", target.exists(),
                                              f"hloscope report {r['path']} -o {target}")
    return links


def write_index(records: list[dict[str, Any]], output: str | os.PathLike[str], *, source: str = "") -> Path:
    """The index page of ``records`` at ``output`` (report/index.py); returns its path."""
    from hloscope.fileio import atomic_write_text
    from hloscope.report.index import render_index

    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    page = render_index(sorted(records, key=lambda r: str(r.get("path"))), links=_links(records, out.resolve()),
                        source=source)
    atomic_write_text(out, page)
    return out.resolve()


def index_target(target: str, output: str | None, results: str | None, jobs: int | None,
                 ray: str | None) -> tuple[list[dict[str, Any]], Path, str]:
    """What ``hloscope report DIR`` indexes: DIR's modules, swept first where the results file
    (``--results``, default next to the index) has no line for them; or a results file's lines."""
    from hloscope.sweep import SweepOptions, find_modules, read_results, sweep

    if target.endswith(".jsonl") and Path(target).is_file():
        index = Path(output or Path(target).with_suffix(".html"))
        return list(read_results(target).values()), index, target
    index = Path(output or "index.html")
    source = results or str(index.with_suffix(".jsonl"))
    paths = find_modules(target)
    display = _Display(len(paths), 0)
    try:
        sweep(paths, source, SweepOptions(), jobs=jobs or os.cpu_count() or 1, use_ray=ray is not None,
              ray_address=ray or None, on_result=display)
    finally:
        display.close()
    done = read_results(source)
    keys = {_key(p) for p in paths}
    return [r for k, r in done.items() if k in keys], index, source


def serve_index(records: list[dict[str, Any]], index: Path, source: str, port: int) -> int:
    """Serve the index on localhost; a module's report is written the first time it is asked for."""
    import http.server
    import urllib.parse

    from hloscope.sweep import read_results, report_slug

    index = index.resolve()
    reports = index.parent / "reports"
    by_slug = {report_slug(r["path"]): r["path"] for r in records}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = urllib.parse.urlparse(self.path).path
            try:
                if path in ("/", "/index.html"):
                    fresh = list(read_results(source).values()) if source.endswith(".jsonl") else records
                    keys = {r["key"] for r in records}
                    write_index([r for r in fresh if r["key"] in keys] or records, index, source=source)
                    self._send(index.read_bytes())
                    return
                slug = path.removeprefix("/reports/").removesuffix(".html")
                if path.startswith("/reports/") and slug in by_slug:
                    page = reports / f"{slug}.html"
                    if not page.exists():
                        from hloscope.api import load
                        from hloscope.report import write_report

                        reports.mkdir(parents=True, exist_ok=True)
                        write_report(load(by_slug[slug]), page, inputs=[by_slug[slug]])
                    self._send(page.read_bytes())
                    return
                self.send_error(404)
            except Exception as e:  # a module whose report fails says why, in the page
                import html

                text = html.escape(f"{type(e).__name__}: {e}")
                self._send(f"<pre>hloscope could not write this report: {text}</pre>".encode(), 500)

        def _send(self, body: bytes, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    write_index(records, index, source=source)
    sys.stdout.write(f"serving {len(records)} modules at http://127.0.0.1:{server.server_address[1]}/ "
                     "(reports are written when first opened; Ctrl-C stops)\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK
