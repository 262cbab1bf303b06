"""XLA's own test suite as a parser stress test: extract every HLO module it holds, then check
hloscope against jaxlib's parser on each.

XLA writes HLO text in three places of its source tree, and this script reads all three from
bare git mirrors (the ``fetch`` tool's snapshots; openxla/xla itself is over its size limit, so
ROCm/xla, whose ``refs/heads/main`` mirrors XLA's main, stands in, with an older fork such as
apivovarov/openxla-xla for test strings since removed; modules are deduplicated by content):

* ``*.hlo`` files (lit tests, benchmarks, reproducers), split at ``// -----`` as lit's
  ``--split-input-file`` splits them; a part with a ``ROOT`` instruction is a module even
  without ``HloModule`` or ``ENTRY`` (XLA's parser takes the last computation as the entry:
  the GPU emitter tests are written so);
* C++ raw strings ``R"(...)"`` / ``R"hlo(...)hlo"`` in ``*.cc`` / ``*.h`` files that hold a
  module (``HloModule`` or ``ENTRY``), most of them in ``*_test.cc``;
* ``*.txt`` test data and fenced blocks of ``*.md`` documentation that hold ``HloModule``.

Many test strings are templates (``$0``, ``$param``, FileCheck ``[[X]]``) or deliberately
invalid; XLA's parser is the referee. ``check`` runs each extracted text through jaxlib's
parser and through hloscope and sorts the outcome into one kind per module (see ``_KINDS``):

* jaxlib accepts: hloscope must parse it, its canonical printing must equal XLA's
  ``ShortParsable`` printing, and XLA must read hloscope's own printing back as the same module;
* jaxlib rejects: hloscope must raise ParseError (another exception or a hang is a bug; parsing
  it is reported as ``lenient``, which is fine for newer syntax jaxlib does not know yet).

jaxlib aborts the process on some CHECK failures, so the checks run in a child process
(``hloscope.testing.xla_worker``) that is restarted when it dies; the module it was on is
counted as ``xla-crash``.

Usage::

    python tools/xla_corpus.py extract /work/.mirror/ROCm+xla/repo@refs/heads/main \
        /work/.mirror/apivovarov+openxla-xla/repo /tmp/xla_hlo
    python tools/xla_corpus.py check /tmp/xla_hlo [--results FILE] [--only KIND] [--show N]
    python tools/xla_corpus.py check /tmp/xla_hlo --previous results.jsonl --kinds parse-error
    python tools/xla_corpus.py summary /tmp/xla_hlo --results results.jsonl --only parse-error
    python tools/xla_corpus.py bench /work/.mirror/ROCm+xla/repo .cache/xla_bench   # LLM modules

The texts stay outside the repository: XLA is Apache-2.0, and tests copy no text from it.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

# A C++ raw string: R"delim( ... )delim". The delimiter is at most 16 characters (C++ rule).
_RAW_STRING_RE = re.compile(r'R"([^()\\\s"]{0,16})\((.*?)\)\1"', re.S)
# lit's --split-input-file separator.
_SPLIT_RE = re.compile(r"^// -----.*$", re.M)
_FENCE_RE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_MODULE_RE = re.compile(r"\bHloModule\b|^\s*ENTRY\b", re.M)
# A computation's root instruction: a lit test's module may be computations only.
_ROOT_RE = re.compile(r"^\s*ROOT\s+%?[\w.\-]+\s*=", re.M)


# --- extraction ----------------------------------------------------------------------------------


def _git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def _candidate_paths(git_dir: str, ref: str) -> list[str]:
    """Paths under ``ref`` whose text mentions ``HloModule`` or ``ENTRY``, and ``*.hlo`` files
    with a ``ROOT`` (git grep does the scan)."""
    out = subprocess.run(["git", f"--git-dir={git_dir}", "grep", "-l", "-I", "-E", r"HloModule|ENTRY|ROOT", ref],
                         capture_output=True).stdout.decode()
    paths = []
    for line in out.splitlines():
        path = line.split(":", 1)[1] if line.startswith(ref + ":") else line
        if path.endswith((".hlo", ".cc", ".h", ".txt", ".md")):
            paths.append(path)
    return paths


def _read_blobs(git_dir: str, ref: str, paths: list[str]) -> dict[str, str]:
    """Texts of ``paths`` at ``ref`` in one ``cat-file --batch`` (absent large blobs are skipped)."""
    proc = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                          input="".join(f"{ref}:{p}\n" for p in paths).encode(), capture_output=True)
    data = proc.stdout
    texts: dict[str, str] = {}
    pos = 0
    for path in paths:
        eol = data.index(b"\n", pos)
        header = data[pos:eol].split()
        pos = eol + 1
        if len(header) < 3 or header[1] != b"blob":  # "missing": a blob the snapshot left out
            continue
        size = int(header[2])
        texts[path] = data[pos : pos + size].decode("utf-8", "replace")
        pos += size + 1
    return texts


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _modules_in(path: str, text: str) -> list[tuple[int, str, str]]:
    """(line, kind, module text) for every module-like text in one file."""
    found: list[tuple[int, str, str]] = []
    if path.endswith(".hlo"):
        start = 0
        for m in [*_SPLIT_RE.finditer(text), None]:
            end = m.start() if m is not None else len(text)
            chunk = text[start:end]
            if _MODULE_RE.search(chunk) or _ROOT_RE.search(chunk):
                found.append((_line_of(text, start), "hlo-file", chunk))
            if m is not None:
                start = m.end()
    elif path.endswith((".cc", ".h")):
        for m in _RAW_STRING_RE.finditer(text):
            body = m.group(2)
            if _MODULE_RE.search(body):
                kind = "cc-test-string" if path.endswith("_test.cc") else "cc-string"
                found.append((_line_of(text, m.start()), kind, body))
    elif path.endswith(".md"):
        for m in _FENCE_RE.finditer(text):
            if "HloModule" in m.group(1):
                found.append((_line_of(text, m.start()), "md-block", m.group(1)))
    elif "HloModule" in text:
        found.append((1, "txt-file", text))
    return found


def extract(sources: list[str], out: Path) -> int:
    """Write every module of every ``GIT_DIR[@REF]`` source to ``out``; returns how many."""
    (out / "modules").mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    index = []
    per_kind: collections.Counter[str] = collections.Counter()
    for source in sources:
        git_dir, _, ref = source.partition("@")
        ref = ref or "HEAD"
        commit = _git(git_dir, "rev-parse", ref).decode().strip()
        paths = _candidate_paths(git_dir, ref)
        texts = _read_blobs(git_dir, ref, paths)
        for path in sorted(texts):
            for line, kind, body in _modules_in(path, texts[path]):
                digest = hashlib.sha1(body.encode()).hexdigest()[:16]
                if digest in seen:
                    continue
                seen.add(digest)
                name = f"{len(index):05d}_{digest}.hlo"
                (out / "modules" / name).write_text(body)
                index.append({"file": name, "source": f"{path}:{line}", "kind": kind, "commit": commit,
                              "mirror": git_dir})
                per_kind[kind] += 1
    with open(out / "index.jsonl", "w") as f:
        for row in index:
            f.write(json.dumps(row) + "\n")
    print(f"{len(index)} distinct modules written to {out / 'modules'}: "
          + ", ".join(f"{k} {v}" for k, v in per_kind.most_common()))
    return len(index)


# --- checking ------------------------------------------------------------------------------------

# One outcome per module: the first check that fails, in this order.
_KINDS = {
    "ok": "jaxlib accepts; hloscope parses, prints XLA's canonical text, and XLA reads its printing back",
    "rejected-ok": "jaxlib rejects; hloscope raises ParseError",
    "lenient": "jaxlib rejects; hloscope parses it (fine for syntax newer than jaxlib)",
    "hs-crash": "hloscope raised something other than ParseError",
    "hs-timeout": "hloscope took longer than the time limit",
    "parse-error": "jaxlib accepts; hloscope raises ParseError",
    "printed-rejected": "jaxlib rejects hloscope's printing of the module",
    "printed-differs": "XLA reads hloscope's printing as a different module",
    "reparse-differs": "hloscope parses its own printing into a different module",
    "canonical-differs": "hloscope's canonical printing differs from XLA's ShortParsable printing",
    "xla-crash": "jaxlib's parser killed the process",
    "xla-timeout": "jaxlib's parser took longer than the time limit",
}
# Kinds whose module jaxlib accepts, whatever hloscope did.
_ACCEPTED = ("ok", "parse-error", "printed-rejected", "printed-differs", "reparse-differs", "canonical-differs")


def _elided_names(module: object) -> set[str]:
    """Names of the constants whose value the text elided (``{...}``): XLA fills those with
    garbage that differs on every parse, so comparisons mask them."""
    from hloscope.ir.literal import Literal

    return {i.name for i in module.instructions()  # type: ignore[attr-defined]
            if isinstance(i.attrs.get("literal"), Literal) and i.attrs["literal"].elided}


def _mask(text: str, names: set[str]) -> str:
    if not names:
        return text
    lines = text.split("\n")
    for k, line in enumerate(lines):
        m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = .*? constant\(", line)
        if m and m.group(1) in names:
            lines[k] = line[: m.end()] + "{...})"
    return "\n".join(lines)


def xla_phase(path: str) -> tuple[str | None, str]:
    """XLA's ShortParsable printing of the module at ``path`` (None when XLA's parser rejects
    it) and XLA's message; run in the worker process, under the parent's XLA time limit."""
    from hloscope.errors import ParseError
    from hloscope.xla import client as xla

    try:
        return xla.short_parsable_text(Path(path).read_text()), ""
    except ParseError as e:
        return None, str(e)


def hloscope_phase(path: str, theirs: str | None, xla_error: str, timeout: int) -> dict[str, str]:
    """hloscope's reading and printing of the module at ``path`` against XLA's (``theirs``);
    run in the worker process, which stops itself after ``timeout`` seconds."""
    import signal

    import hloscope as hs
    from hloscope.errors import ParseError
    from hloscope.ir.equality import first_difference
    from hloscope.xla import client as xla

    text = Path(path).read_text()
    verdict = {"xla": "accepts" if theirs is not None else "rejects"}

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(timeout)
    try:
        m = hs.parse(text, "module.hlo")
        canonical = m.to_text(hs.PrintOptions.canonical())
        printed = m.to_text()
    except ParseError as e:
        if theirs is None:
            return {"kind": "rejected-ok"}
        return {"kind": "parse-error", "detail": str(e)}
    except TimeoutError:
        return {**verdict, "kind": "hs-timeout"}
    except Exception as e:  # noqa: BLE001 - the point is to find these
        return {**verdict, "kind": "hs-crash", "detail": f"{type(e).__name__}: {e}"}
    finally:
        signal.alarm(0)
    if theirs is None:
        return {"kind": "lenient", "detail": xla_error}
    elided = _elided_names(m)
    theirs = _mask(theirs, elided)
    try:
        again = _mask(xla.short_parsable_text(printed), elided)
    except ParseError as e:
        return {"kind": "printed-rejected", "detail": str(e)}
    if again != theirs:
        return {"kind": "printed-differs", "detail": _first_line_diff(theirs, again)}
    try:
        diff = first_difference(m, hs.parse(printed))
    except Exception as e:  # noqa: BLE001
        return {"kind": "reparse-differs", "detail": f"{type(e).__name__}: {e}"}
    if diff is not None:
        return {"kind": "reparse-differs", "detail": str(diff)}
    if canonical != theirs:
        return {"kind": "canonical-differs", "detail": _first_line_diff(theirs, canonical)}
    return {"kind": "ok"}


def _first_line_diff(expected: str, actual: str) -> str:
    a, b = expected.splitlines(), actual.splitlines()
    for x, y in zip(a, b, strict=False):
        if x != y:
            return f"XLA:      {x.strip()[:400]}\nhloscope: {y.strip()[:400]}"
    return f"XLA has {len(a)} lines, hloscope {len(b)}"


class _Checker:
    """The two phases of one module in a worker process (``hloscope.testing.xla_worker``),
    which is replaced whenever it dies or is killed for taking too long: jaxlib's parse first
    (with time for a new worker to import jax), then hloscope's, which stops itself at
    ``timeout``; the margin covers printing and the comparisons."""

    def __init__(self, timeout: int, xla_timeout: int) -> None:
        from hloscope.testing.xla_worker import XlaWorker

        self.timeout = timeout
        self.xla_timeout = xla_timeout
        self.worker = XlaWorker()

    def check(self, path: Path) -> dict[str, str]:
        self.worker.timeout = self.xla_timeout + 10
        status, value = self.worker.call("call", __file__, "xla_phase", str(path))
        if status == "timeout":
            return {"kind": "xla-timeout"}
        if status != "ok":
            self.worker.close()
            return {"kind": "xla-crash"}
        theirs, xla_error = value
        self.worker.timeout = 4 * self.timeout
        status, value = self.worker.call("call", __file__, "hloscope_phase", str(path), theirs, xla_error,
                                         self.timeout)
        if status != "ok":
            self.worker.close()
            return {"kind": "hs-timeout"}
        return value

    def close(self) -> None:
        self.worker.close()


def _read_jsonl(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return [json.loads(line) for line in f]


def check(out: Path, *, timeout: int, xla_timeout: int, results_name: str, limit: int | None = None,
          previous: str | None = None, kinds: str | None = None) -> dict[str, dict[str, str]]:
    """Check the extracted modules (all, or those of ``kinds`` in the ``previous`` results);
    writes ``results_name`` (JSON lines) and returns the results by file."""
    index = _read_jsonl(out / "index.jsonl")
    if previous:
        wanted = set(kinds.split(",")) if kinds else None
        keep = {r["file"] for r in _read_jsonl(out / previous) if wanted is None or r["kind"] in wanted}
        index = [row for row in index if row["file"] in keep]
    if limit:
        index = index[:limit]
    results: dict[str, dict[str, str]] = {}
    child = _Checker(timeout, xla_timeout)
    t0 = time.perf_counter()
    with open(out / results_name, "w") as f:
        for k, row in enumerate(index):
            results[row["file"]] = result = child.check(out / "modules" / row["file"])
            f.write(json.dumps({**row, **result}) + "\n")
            f.flush()
            if (k + 1) % 1000 == 0:
                print(f"  ... {k + 1} checked", file=sys.stderr)
    child.close()
    print(f"{len(index)} modules checked in {time.perf_counter() - t0:.0f} s")
    return results


def summarize(rows: list[dict[str, str]], *, only: str | None = None, show: int = 20) -> None:
    """Print the tally of a results file, and the details of up to ``show`` modules of ``only``."""
    tally = collections.Counter(r["kind"] for r in rows)
    accepted = sum(r["kind"] in _ACCEPTED or r.get("xla") == "accepts" for r in rows)
    parsed = sum(r["kind"] in _ACCEPTED[:1] + _ACCEPTED[2:] for r in rows)
    print(f"{len(rows)} modules; jaxlib accepts {accepted}; hloscope parses {parsed} of those, "
          f"round-trips {tally['ok'] + tally['canonical-differs'] + tally['reparse-differs']} "
          f"(XLA reads its printing as the same module), canonical text equal on {tally['ok']}")
    for kind in _KINDS:
        if tally[kind]:
            print(f"  {tally[kind]:6d}  {kind:<18} {_KINDS[kind]}")
    if only:
        for r in [r for r in rows if r["kind"] == only][:show]:
            print(f"\n--- {r['file']}  {r['source']}\n{r.get('detail', '')}")


_BENCH_DIR = "xla/tools/benchmarks/hlo"


def bench(git_dir: str, out: Path) -> int:
    """Copy XLA's benchmark modules (``xla/tools/benchmarks/hlo/*.hlo``) out of a git mirror into
    ``out``: of each file, the largest version found on any branch (a mirror may lack the newest
    commit's large files; an empty file is a missing one). Returns how many were written."""
    refs = _git(git_dir, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags").decode().split()
    best: dict[str, bytes] = {}
    for ref in refs:
        try:
            names = _git(git_dir, "ls-tree", "-r", "--name-only", ref, "--", _BENCH_DIR).decode().split()
        except subprocess.CalledProcessError:
            continue
        for path in names:
            name = path.rsplit("/", 1)[-1]
            if not name.endswith(".hlo") or name in best and len(best[name]) > 0:
                continue
            try:
                best[name] = _git(git_dir, "show", f"{ref}:{path}")
            except subprocess.CalledProcessError:
                best.setdefault(name, b"")
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, data in sorted(best.items()):
        if data:
            (out / name).write_bytes(data)
            written += 1
    print(f"{written} of XLA's benchmark modules written to {out} "
          f"({len(best) - written} found only empty)")
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("extract", help="write the modules of XLA mirrors to a directory")
    ex.add_argument("sources", nargs="+", metavar="GIT_DIR[@REF]")
    ex.add_argument("out", type=Path)
    ck = sub.add_parser("check", help="run jaxlib and hloscope on every extracted module")
    ck.add_argument("out", type=Path)
    ck.add_argument("--timeout", type=int, default=20, help="seconds hloscope may take per module")
    ck.add_argument("--xla-timeout", type=int, default=30, help="seconds jaxlib may take per module")
    ck.add_argument("--results", default="results.jsonl", help="file (in OUT) the results go to")
    ck.add_argument("--previous", help="check only modules listed in this results file (in OUT)...")
    ck.add_argument("--kinds", help="... with these kinds (comma-separated)")
    ck.add_argument("--limit", type=int, help="check only the first N modules")
    bn = sub.add_parser("bench", help="copy XLA's benchmark modules (xla/tools/benchmarks/hlo) out of a mirror")
    bn.add_argument("git_dir", metavar="GIT_DIR")
    bn.add_argument("out", type=Path, help="e.g. .cache/xla_bench (where the models tier looks)")
    sm = sub.add_parser("summary", help="tally a results file")
    sm.add_argument("out", type=Path)
    sm.add_argument("--results", default="results.jsonl")
    for p in (ck, sm):
        p.add_argument("--only", help="print the details of the modules of this kind")
        p.add_argument("--show", type=int, default=20, help="how many details --only prints")
    args = ap.parse_args()
    if args.command == "extract":
        extract(args.sources, args.out)
    elif args.command == "check":
        results = check(args.out, timeout=args.timeout, xla_timeout=args.xla_timeout, results_name=args.results,
                        limit=args.limit, previous=args.previous, kinds=args.kinds)
        summarize(_read_jsonl(args.out / args.results), only=args.only, show=args.show)
        del results
    elif args.command == "bench":
        bench(args.git_dir, args.out)
    elif args.command == "summary":
        summarize(_read_jsonl(args.out / args.results), only=args.only, show=args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
