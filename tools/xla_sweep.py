"""Run every module of XLA's own test suite on hloscope and on XLA:CPU with the same random
inputs, and sort each into one kind, so that the next family of differences shows up by itself.

The modules are those ``tools/xla_corpus.py extract`` writes (``OUT/modules/*.hlo`` with
``OUT/index.jsonl``). For each module, in this order:

1. hloscope parses it; when it cannot, XLA's parser is asked (a module both refuse is a
   template or a deliberately invalid test string: ``xla-refuses``);
2. a module with elided constants (``{...}``) is ``skipped``: XLA fills them with garbage;
3. random inputs are drawn (``hloscope.interpret.inputs.random_inputs``, per device when the
   header asks for several) and XLA:CPU runs the module in its own child process
   (``hloscope.xla.worker.run_on_xla``); a module XLA:CPU cannot compile or run is
   ``xla-refuses``, one that kills XLA's process ``xla-crash``;
4. hloscope runs it on the same inputs and every output leaf is compared (integers and preds
   bit-exact, floats within a per-dtype tolerance, NaN where NaN).

That check is ``hloscope.testing.xla_modules.check_module``; this script runs it over the
corpus in watched worker processes and summarizes the rows.

Kinds (``KINDS``): match, differs, hloscope-error, xla-refuses, xla-crash, timeout, skipped.

Everything of one module happens in a worker process (this script's ``_worker``), started with
a memory limit (``--memory-gb``, an address-space limit that XLA's own child inherits) and
watched by the parent, which kills it when one phase takes longer than ``--timeout`` seconds
and restarts it for the next module. Results go to a JSON-lines file outside the repository
(``--results``, default ``OUT/sweep.jsonl``), one line per module as it finishes; a second run
skips the modules already there (resumable), and ``--only KIND`` runs again just the modules
of that kind (the newest line of a module wins). ``summary`` counts the kinds and groups the
differing and failing modules by cause. Usage (the machine is shared: be nice)::

    nice -n 10 python tools/xla_sweep.py run /work/xla_hlo [--limit N] [--timeout 60]
    nice -n 10 python tools/xla_sweep.py run /work/xla_hlo --only differs
    python tools/xla_sweep.py summary /work/xla_hlo [--show KIND] [--examples 3]

XLA's texts stay outside the repository (Apache-2.0); nothing here copies them.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import resource
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT / "src") not in sys.path:  # running from a checkout without installing
    sys.path.insert(0, str(_ROOT / "src"))

from hloscope.testing.xla_modules import KINDS, NeedsDevices, check_module, run_xla_in_process  # noqa: E402

# --- the worker: one module at a time ----------------------------------------------------------


def _phase(name: str) -> None:
    sys.stdout.write(json.dumps({"phase": name}) + "\n")
    sys.stdout.flush()


def _worker(seed: int, timeout: float, isolate_xla: bool) -> None:
    """Child process: one module path per stdin line; phase lines, then one result line (or a
    ``devices`` line: XLA:CPU in this process has another device count than the module needs,
    Note [XLA in the worker])."""
    import warnings

    warnings.filterwarnings("ignore")
    runner = None if isolate_xla else run_xla_in_process
    for line in sys.stdin:
        try:
            result = check_module(Path(line.strip()).read_text(), seed=seed, timeout=timeout, phase=_phase,
                                  xla_runner=runner)
        except NeedsDevices as e:
            sys.stdout.write(json.dumps({"devices": e.devices}) + "\n")
            sys.stdout.flush()
            continue
        except MemoryError:
            result = {"kind": "hloscope-error", "stage": "run", "detail": "MemoryError: over the memory limit"}
        sys.stdout.write(json.dumps({"result": result}) + "\n")
        sys.stdout.flush()


# --- the parent: a watched worker, restarted when it dies or is killed ------------------------

# Note [XLA in the worker]
#     The worker runs XLA:CPU in its own process (run_xla_in_process): it is already watched,
#     killed at the time limit and restarted when XLA aborts it, and a child process per module
#     (run_on_xla, as `--isolate-xla` still does) imported jax again for every module, which
#     was most of the sweep's time (5 modules a minute on a loaded 2-core machine). XLA:CPU's
#     host device count is fixed when jax starts, so the worker runs with one count
#     (--xla_force_host_platform_device_count, the module's replicas x partitions as
#     run_on_xla sets it); a module that needs another makes the worker answer with that count,
#     and the parent starts a worker with it and sends the module again. Modules are taken in
#     the order of the device count their header asks for, so that this happens rarely.


class Worker:
    """This script's ``_worker`` in its own session (so XLA's child dies with it when killed),
    with an address-space limit of ``memory_gb``."""

    def __init__(self, *, seed: int, timeout: float, memory_gb: float, isolate_xla: bool = False) -> None:
        self.seed, self.timeout, self.memory = seed, timeout, int(memory_gb * 2**30)
        self.isolate_xla = isolate_xla
        self.devices = 1  # the host device count of the next worker started (Note [XLA in the worker])
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending = b""

    def _limit(self) -> None:
        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
        src = str(Path(__file__).resolve().parents[1] / "src")
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
        env["XLA_FLAGS"] = " ".join([*flags, f"--xla_force_host_platform_device_count={self.devices}"])
        return subprocess.Popen([sys.executable, __file__, "_worker", "--seed", str(self.seed),
                                 "--timeout", str(self.timeout), *(["--isolate-xla"] if self.isolate_xla else [])],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env, start_new_session=True, preexec_fn=self._limit)

    def _readline(self, seconds: float) -> str | None:
        """The next line; None after ``seconds`` without one, "" when the worker died."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.pending:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return ""
                self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode()

    def stop(self) -> int | None:
        """Kill the worker and everything it started; its exit status."""
        if self.proc is None:
            return None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = self.proc.wait()
        self.proc, self.pending = None, b""
        return code

    def check(self, path: Path) -> dict[str, Any]:
        if self.proc is None:
            self.proc = self._start()
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{path}\n".encode())
        self.proc.stdin.flush()
        phase = "start"
        # A fresh worker imports jax first; XLA's phase has run_on_xla's own limit inside.
        limits = {"start": 60.0, "hloscope-parse": self.timeout, "xla-parse": self.timeout,
                  "xla": self.timeout + 30.0, "hloscope": self.timeout}
        while True:
            line = self._readline(limits.get(phase, self.timeout))
            if line is None:
                self.stop()
                side = "xla" if phase.startswith("xla") else "hloscope"
                return {"kind": "timeout", "stage": side if phase != "start" else "start"}
            if not line:
                code = self.stop()
                how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
                if phase.startswith("xla"):
                    return {"kind": "xla-crash", "stage": phase, "detail": f"the process died ({how})"}
                return {"kind": "hloscope-error", "stage": phase, "detail": f"the process died ({how})"}
            msg = json.loads(line)
            if "result" in msg:
                return msg["result"]
            if "devices" in msg:  # Note [XLA in the worker]: again, in a worker with that many
                self.stop()
                self.devices = msg["devices"]
                return self.check(path)
            phase = msg["phase"]


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """The newest row of every module in a results file."""
    rows: dict[str, dict[str, Any]] = {}
    if path.exists():
        with open(path) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[row["file"]] = row
    return rows


def _header_devices(path: Path) -> int:
    """replica_count x num_partitions as the module's header says (1 when it does not)."""
    head = path.read_text()[:4000]
    counts = [int(m.group(1)) if m else 1 for m in (re.search(r"replica_count=(\d+)", head),
                                                    re.search(r"num_partitions=(\d+)", head))]
    return counts[0] * counts[1]


def run(out: Path, results: Path, *, only: str | None, limit: int | None, timeout: float,
        memory_gb: float, seed: int, match: str | None, shuffle: int | None = None,
        isolate_xla: bool = False) -> None:
    with open(out / "index.jsonl") as f:
        index = [json.loads(line) for line in f]
    done = read_results(results)
    if only:
        todo = [row for row in index if done.get(row["file"], {}).get("kind") == only]
    else:
        todo = [row for row in index if row["file"] not in done]
    if match:
        todo = [row for row in todo if re.search(match, row["source"])]
    if shuffle is not None:  # a partial run then samples the whole corpus
        random.Random(shuffle).shuffle(todo)
    if limit:
        todo = todo[:limit]
    todo.sort(key=lambda row: _header_devices(out / "modules" / row["file"]))  # stable: the order within a count stays
    print(f"{len(todo)} modules to check ({len(done)} already in {results})", file=sys.stderr)
    worker = Worker(seed=seed, timeout=timeout, memory_gb=memory_gb, isolate_xla=isolate_xla)
    tally: collections.Counter[str] = collections.Counter()
    t0 = time.monotonic()
    try:
        with open(results, "a") as f:
            for k, row in enumerate(todo):
                s = time.monotonic()
                result = worker.check(out / "modules" / row["file"])
                result["wall"] = round(time.monotonic() - s, 2)
                f.write(json.dumps({**row, **result}) + "\n")
                f.flush()
                tally[result["kind"]] += 1
                if (k + 1) % 50 == 0:
                    rate = (k + 1) / (time.monotonic() - t0)
                    print(f"  {k + 1}/{len(todo)} ({rate:.2f}/s): " + ", ".join(
                        f"{kind} {c}" for kind, c in tally.most_common()), file=sys.stderr)
    finally:
        worker.stop()


# --- summary --------------------------------------------------------------------------------


def cause(row: dict[str, Any]) -> str:
    """A short key that groups modules failing for one reason."""
    kind = row["kind"]
    if kind == "differs":
        detail = row.get("detail", "")
        what = "shape/dtype" if detail.startswith("shape/dtype") else \
            "exact" if "(exact" in detail else "float"
        return f"{row.get('producer', '?')} ({what})"
    detail = row.get("detail", "") or row.get("stage", "")
    # "module.hlo:3:4: error: evaluating NAME (OPCODE) in computation C: WHY" -> "OPCODE: WHY"
    m = re.search(r"evaluating \S+ \(([\w-]+)\) in computation \S+: (.*)", detail)
    if m:
        detail = f"{m.group(1)}: {m.group(2)}"
        detail = re.sub(r"^custom-call: custom-call target '([^']*)'.*", r"custom-call target \1", detail)
        detail = re.sub(r" is not supported by the interpreter.*", " is not supported", detail)
    detail = re.sub(r"%?[\w.\-]*\d[\w.\-]*", "#", detail)  # names and numbers
    detail = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", detail)
    detail = re.sub(r"\[[^\]]*\]|\{[^}]*\}", "[…]", detail)
    return f"{row.get('stage', '')}: {detail[:110]}"


def summarize(rows: list[dict[str, Any]], *, show: str | None, examples: int, top: int) -> str:
    tally = collections.Counter(r["kind"] for r in rows)
    lines = [f"{len(rows)} modules checked"]
    for kind in KINDS:
        if tally[kind]:
            lines.append(f"  {tally[kind]:6d}  {kind:<15} {KINDS[kind]}")
    compared = tally["match"] + tally["differs"]
    if compared:
        lines.append(f"  hloscope equals XLA:CPU on {tally['match']} of the {compared} modules both ran "
                     f"({100 * tally['match'] / compared:.1f}%); hloscope fails on {tally['hloscope-error']} "
                     f"that XLA runs")
    for kind in ([show] if show else ["differs", "hloscope-error", "xla-crash", "timeout"]):
        group: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for r in rows:
            if r["kind"] == kind:
                group[cause(r)].append(r)
        if not group:
            continue
        lines.append(f"\n{kind} by cause ({sum(map(len, group.values()))} modules, {len(group)} causes):")
        for key, members in sorted(group.items(), key=lambda kv: -len(kv[1]))[:top]:
            lines.append(f"  {len(members):5d}  {key}")
            for r in members[:examples]:
                lines.append(f"           {r['file']}  {r['source']}  {r.get('detail', '')[:160]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rn = sub.add_parser("run", help="check the modules not yet in the results file")
    sm = sub.add_parser("summary", help="counts per kind, and the failing modules by cause")
    for p in (rn, sm):
        p.add_argument("out", type=Path, help="the folder tools/xla_corpus.py extract wrote")
        p.add_argument("--results", type=Path, help="JSON-lines results (default OUT/sweep.jsonl)")
    rn.add_argument("--only", metavar="KIND", choices=sorted(KINDS), help="check again the modules of this kind")
    rn.add_argument("--match", metavar="REGEX", help="only modules whose XLA source path matches")
    rn.add_argument("--limit", type=int, help="check at most N modules")
    rn.add_argument("--timeout", type=float, default=60.0, help="seconds per phase of a module (default 60)")
    rn.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit of the worker (default 4)")
    rn.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    rn.add_argument("--shuffle", type=int, metavar="SEED", help="check the modules in a random order")
    rn.add_argument("--isolate-xla", action="store_true",
                    help="run XLA:CPU in a child process per module (slower; Note [XLA in the worker])")
    sm.add_argument("--show", metavar="KIND", choices=sorted(KINDS), help="group only this kind")
    sm.add_argument("--examples", type=int, default=2, help="modules listed per cause")
    sm.add_argument("--top", type=int, default=40, help="causes listed per kind")
    wk = sub.add_parser("_worker")
    wk.add_argument("--seed", type=int, default=0)
    wk.add_argument("--timeout", type=float, default=60.0)
    wk.add_argument("--isolate-xla", action="store_true")
    args = ap.parse_args(argv)
    if args.command == "_worker":
        _worker(args.seed, args.timeout, args.isolate_xla)
        return 0
    results = args.results or args.out / "sweep.jsonl"
    if args.command == "run":
        run(args.out, results, only=args.only, limit=args.limit, timeout=args.timeout,
            memory_gb=args.memory_gb, seed=args.seed, match=args.match, shuffle=args.shuffle,
            isolate_xla=args.isolate_xla)
    print(summarize(list(read_results(results).values()), show=getattr(args, "show", None),
                    examples=getattr(args, "examples", 2), top=getattr(args, "top", 40)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
