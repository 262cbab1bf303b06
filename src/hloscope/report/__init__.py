"""Show a module: the self-contained HTML report, graph views, module diffs and the Jupyter summary.

    import hloscope as hs
    from hloscope.report import write_report
    write_report(hs.load("module.txt"), "report.html")

``report/`` only renders: it reads the module and the analyses' ``to_json()`` results and never
computes figures of its own.
"""
from __future__ import annotations

import os
from typing import Any

from hloscope.ir.module import HTML_DISPLAY, Module
from hloscope.report.summary_html import module_summary_html

__all__ = ["write_report", "report_html"]

# Note [HTML display] (ir/module.py): a Module shows this summary table in Jupyter.
if module_summary_html not in HTML_DISPLAY:
    HTML_DISPLAY.append(module_summary_html)


def report_html(module: Module, *, hardware: Any = None, title: str | None = None,
                source_path: str | None = None, progress: Any = None, run_inputs: Any = None,
                replicas: int | None = None, partitions: int | None = None, jobs: int | None = None) -> str:
    """The report page for ``module`` as an HTML string (see ``write_report``)."""
    import time

    from hloscope.report.data import collect_report_data
    from hloscope.report.html import pack_ahead, render_html

    numerics = None
    if run_inputs is not None:
        from functools import partial

        from hloscope.report.numerics import numerics_section

        numerics = partial(numerics_section, module, run_inputs, replicas=replicas, partitions=partitions)
    ahead: list[Any] = []

    def while_waiting(data: dict[str, Any]) -> None:
        # The page's blocks but the memory section's, while that is made in another process.
        ahead.append(pack_ahead(data, but=("memory",)))

    data = collect_report_data(module, hardware=hardware, title=title, source_path=source_path, progress=progress,
                               numerics=numerics, jobs=jobs, while_waiting=while_waiting)
    if progress is not None:
        progress("page", None)
    started = time.perf_counter()
    page = render_html(data, ahead[0] if ahead else None)
    if progress is not None:
        progress("page", time.perf_counter() - started)
    return page


def write_report(module: Module, path: str | os.PathLike[str], *, hardware: Any = None,
                 title: str | None = None, inputs: list[str | os.PathLike[str]] | None = None,
                 progress: Any = None, run_inputs: Any = None, replicas: int | None = None,
                 partitions: int | None = None, jobs: int | None = None) -> str:
    """Write the HTML report of ``module`` to ``path`` atomically; returns the path written.

    Refuses (InputError) to write over the file the module was read from, or over any of
    ``inputs`` (file paths). ``hardware`` (a HardwareSpec or bundled hardware name) feeds the
    time estimate. ``run_inputs`` (arrays, as ``hloscope.run`` takes them, on ``replicas`` x
    ``partitions`` devices) adds the Numerics tab: the statistics of a run on them.
    ``progress(step, seconds)`` hears each step start (``seconds=None``) and end. ``jobs``
    caps the processes building it (1: this one only; default: the CPUs it may use, for a big
    module), see Note [Memory beside the rest] in ``report/background.py``.
    """
    from hloscope.fileio import atomic_write_text, check_not_input

    sources: list[str | os.PathLike[str]] = list(inputs or [])
    source_name = getattr(getattr(module, "source", None), "name", None)
    # Parsed text has a pseudo-name such as "<string>" or "<stdin>", which is no file.
    if isinstance(source_name, str) and source_name and not source_name.startswith("<"):
        sources.append(source_name)
    check_not_input(path, sources)
    text = report_html(module, hardware=hardware, title=title, progress=progress,
                       source_path=str(source_name) if isinstance(source_name, str) else None,
                       run_inputs=run_inputs, replicas=replicas, partitions=partitions, jobs=jobs)
    atomic_write_text(path, text)
    return os.fspath(path)
