"""Builds the oracle corpus: for each program in ``programs.py``, XLA's view of it, on disk.

One directory per program (Note [Corpus layout]); it is created in a temporary directory and
renamed into place, so a reader never sees a half-written case; concurrent builders (pytest
-n) take turns under a per-case lock file. A case is rebuilt when ``registry.py`` (the shared helpers), the file defining the program (e.g.
``programs_more.py``), this file, ``hloscope/xla/client.py`` or ``lowering.py`` changes (their hash is in
``meta.json``).

Note [Corpus layout]
    <cache>/<jax version>/<program>/
        meta.json        name, mode, families, replicas, partitions, tolerances, jax version, hash
        pre.hlo          HLO text of the lowered module (before XLA's optimizations)
        post.hlo         compiled.as_text(): after optimizations (scheduled); constants XLA
                         folded and as_text() elided ({...}) are printed in full
        inputs.npz       arg0, arg1, ... (flattened pytree leaves); per device: d<k>.arg0, ...
        outputs.npz      out, or out.0, out.1, ...; per device: d<k>.out.0, ...
        global_inputs.npz, global_outputs.npz   several devices only: the same as jax sees
                         them, whole arrays (pmap: stacked), what the pre module computes
        cost_pre.json    XLA's hlo_module_cost_analysis of pre.hlo (or {"__error__": msg})
        cost_post.json   {"hlo_module_cost_analysis": of post.hlo, "compiled": compiled.cost_analysis()}
        memory.json      compiled.memory_analysis() sizes in bytes
        dump/            XLA's dump text files (buffer assignment, live ranges, memory report)

CLI: ``python -m hloscope.testing.oracle.corpus --out DIR [--only NAME ...]``.
"""
from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()
if "xla_cpu_max_isa" not in os.environ["XLA_FLAGS"]:  # Note [The oracle's instruction set]
    os.environ["XLA_FLAGS"] += " --xla_cpu_max_isa=AVX2"  # in tests/conftest.py

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import fcntl  # noqa: E402
import functools  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

from hloscope.interpret.npz_io import flatten_named, load_npz, save_npz  # noqa: E402
from hloscope.testing.cases import Case, jax_config  # noqa: E402
from hloscope.xla import client as xla  # noqa: E402
from hloscope.xla import lowering  # noqa: E402

from . import registry  # noqa: E402
from .programs import PROGRAMS, by_name  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[4]


def default_cache_dir() -> Path:
    """``$HLOSCOPE_ORACLE_CACHE`` or ``<repo>/.cache/oracle/<jax version>``."""
    root = os.environ.get("HLOSCOPE_ORACLE_CACHE")
    base = Path(root) if root else REPO_ROOT / ".cache" / "oracle"
    # XLA:CPU's numbers depend on the instruction set it compiles for (Note [The oracle's
    # instruction set] in tests/conftest.py): a cache built for another level is another cache.
    isa = re.search(r"--xla_cpu_max_isa=(\S+)", os.environ.get("XLA_FLAGS", ""))
    return base / (jax.__version__ + (f"-{isa.group(1).lower()}" if isa else ""))


def source_hash(prog: Case) -> str:
    """Hash of the sources that determine ``prog``'s case: registry.py (the shared helpers), the
    file defining ``prog``, hloscope/xla/client.py and lowering.py and this file. Hashing per defining
    file means editing one program file rebuilds only its own cases."""
    return _files_hash(getattr(sys.modules.get(prog.fn.__module__), "__file__", None))


@functools.cache
def _files_hash(defining_file: str | None) -> str:
    h = hashlib.sha256()
    paths = [Path(registry.__file__), Path(xla.__file__), Path(lowering.__file__), Path(__file__)]
    if defining_file is not None and Path(defining_file) != paths[0]:
        paths.append(Path(defining_file))
    for path in paths:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _device_keys(values: list[Any], stem: str, num_devices: int) -> dict[str, np.ndarray]:
    """npz keys for flattened values: arg0.. / out|out.0.. with a d<k>. prefix per device."""

    def one(vals: list[Any]) -> dict[str, np.ndarray]:
        if stem == "out":
            return flatten_named("out", vals[0] if len(vals) == 1 else tuple(vals))
        out: dict[str, np.ndarray] = {}
        for i, v in enumerate(vals):
            out.update(flatten_named(f"arg{i}", v))
        return out

    if num_devices == 1:
        return one(values)
    result: dict[str, np.ndarray] = {}
    for k in range(num_devices):
        result.update({f"d{k}.{key}": v for key, v in one(values[k]).items()})
    return result


def _cost_or_error(text: str) -> dict[str, Any]:
    try:
        return xla.cost_analysis(text)
    except Exception as e:  # recorded, not fatal: sharded pre-optimization modules may fail
        return {"__error__": str(e).splitlines()[0]}


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")


def _with_large_constants(prog: Case, inputs: tuple[Any, ...], kwargs: dict[str, Any], mode: str,
                          post: str) -> str:
    """``post`` with its elided constants (``constant({...})``) printed in full.

    ``compiled.as_text()`` elides large constants, and XLA folds some (pooling window counts,
    tables) into them, which leaves the module without values to run. Compiling again is
    deterministic; the reprint is used only if, printed the default way, it equals ``post``."""
    transform = jax.pmap if mode == "pmap" else jax.jit
    if mode == "jit":
        kwargs = {"keep_unused": True, **kwargs}
    with lowering.use_shardy(prog.shardy):
        executable = transform(prog.fn, **kwargs).lower(*inputs).compile().runtime_executable()
    # jax types this Optional (other backends may lack one); XLA:CPU always has it.
    assert executable is not None
    module = executable.hlo_modules()[0]
    options = xla.jaxlib_api().HloPrintOptions()
    if module.to_string(options) != post:
        return post
    options.print_large_constants = True
    return module.to_string(options)


def _is_current(case_dir: Path, prog: Case) -> bool:
    """Whether ``case_dir`` holds a whole case built from ``prog``'s current sources."""
    try:
        return json.loads((case_dir / "meta.json").read_text()).get("source_hash") == source_hash(prog)
    except (OSError, ValueError):
        return False


def build_case(prog: Case, cache_dir: Path) -> Path:
    """Generate one program's directory (Note [Corpus layout]) unless it is current.

    Builders of the same case take turns under a per-case file lock: without it, a second
    pytest-xdist worker that started building before the first finished would move the first's
    fresh case aside while a test was reading it (a FileNotFoundError seen in CI)."""
    final = cache_dir / prog.name
    if _is_current(final, prog):
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".lock-{prog.name}", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _is_current(final, prog):  # built by another worker while we waited
            return final
        return _build_locked(prog, cache_dir, final)


def _build_locked(prog: Case, cache_dir: Path, final: Path) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{prog.name}-", dir=cache_dir))
    try:
        start = time.perf_counter()
        with jax_config(prog.config):
            inputs = prog.make_inputs()
            kwargs = prog.jit_kwargs() if prog.jit_kwargs else {}
            mode = prog.lowering
            art = lowering.lower_jax(prog.fn, *inputs, mode=mode, shardy=prog.shardy, **kwargs)
            post = art.post_optimization_text
            if "{...}" in post:
                post = _with_large_constants(prog, inputs, kwargs, mode, post)
        n = art.num_devices
        (tmp / "pre.hlo").write_text(art.pre_optimization_text)
        (tmp / "post.hlo").write_text(post)
        save_npz(tmp / "inputs.npz", _device_keys(art.inputs, "arg", n))
        save_npz(tmp / "outputs.npz", _device_keys(art.outputs, "out", n))
        if n > 1:
            save_npz(tmp / "global_inputs.npz", _device_keys(art.global_inputs, "arg", 1))
            save_npz(tmp / "global_outputs.npz", _device_keys(art.global_outputs, "out", 1))
        _write_json(tmp / "cost_pre.json", _cost_or_error(art.pre_optimization_text))
        _write_json(tmp / "cost_post.json", {
            "hlo_module_cost_analysis": _cost_or_error(art.post_optimization_text),
            "compiled": art.cost_analysis,
        })
        _write_json(tmp / "memory.json", art.memory_analysis)
        (tmp / "dump").mkdir()
        for fname, text in art.dump_files.items():
            (tmp / "dump" / fname).write_text(text)
        _write_json(tmp / "meta.json", {
            "name": prog.name,
            "mode": prog.mode,
            "families": list(prog.families),
            "num_replicas": art.num_replicas,
            "num_partitions": art.num_partitions,
            "num_outputs": len(art.outputs if n == 1 else art.outputs[0]),
            "rtol": prog.rtol,
            "atol": prog.atol,
            "config": dict(prog.config),
            "jax_version": jax.__version__,
            "source_hash": source_hash(prog),
            "build_seconds": round(time.perf_counter() - start, 3),
        })
        # A stale case is moved aside first, so the rename below is atomic for readers.
        if final.exists():
            stale = Path(tempfile.mkdtemp(prefix=f".stale-{prog.name}-", dir=cache_dir))
            try:
                os.rename(final, stale / "case")
            except OSError:
                pass
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


@dataclasses.dataclass(frozen=True)
class OracleCase:
    """One built program: its directory plus readers for the files in it."""

    name: str
    path: Path

    @functools.cached_property
    def meta(self) -> dict[str, Any]:
        return json.loads((self.path / "meta.json").read_text())

    @property
    def num_devices(self) -> int:
        return int(self.meta["num_replicas"]) * int(self.meta["num_partitions"])

    @property
    def pre_text(self) -> str:
        return (self.path / "pre.hlo").read_text()

    @property
    def post_text(self) -> str:
        return (self.path / "post.hlo").read_text()

    def inputs(self) -> Any:
        """Entry parameters: a list (one device) or a list per device of lists."""
        from hloscope.interpret.npz_io import device_values

        return device_values(load_npz(self.path / "inputs.npz"), "arg", self.num_devices)

    def outputs(self) -> Any:
        """The result: array or tuple (one device), or a list of those per device."""
        from hloscope.interpret.npz_io import device_values

        return device_values(load_npz(self.path / "outputs.npz"), "out", self.num_devices)

    def global_inputs(self) -> list[Any]:
        """The entry parameters as whole arrays (one list; for one device, ``inputs()``)."""
        from hloscope.interpret.npz_io import device_values

        if self.num_devices == 1:
            return self.inputs()
        return device_values(load_npz(self.path / "global_inputs.npz"), "arg", 1)

    def global_outputs(self) -> Any:
        """The result as whole arrays (for one device, ``outputs()``)."""
        from hloscope.interpret.npz_io import device_values

        if self.num_devices == 1:
            return self.outputs()
        return device_values(load_npz(self.path / "global_outputs.npz"), "out", 1)

    def json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def dump_files(self) -> dict[str, Path]:
        return {p.name: p for p in sorted((self.path / "dump").iterdir())}


def build_corpus(cache_dir: str | os.PathLike[str] | None = None,
                 names: Iterable[str] | None = None, *, verbose: bool = False) -> dict[str, OracleCase]:
    """Build (or reuse) the cases for ``names`` (all programs by default) under ``cache_dir``."""
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    table = by_name()
    selected = list(names) if names is not None else [p.name for p in PROGRAMS]
    cases = {}
    for name in selected:
        t = time.perf_counter()
        path = build_case(table[name], cache)
        if verbose:
            print(f"{name:32s} {time.perf_counter() - t:6.2f}s  {path}", file=sys.stderr)
        cases[name] = OracleCase(name, path)
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", default=None, help="cache directory (default: .cache/oracle/<jax>)")
    parser.add_argument("--only", nargs="*", default=None, help="program names")
    parser.add_argument("--force", action="store_true", help="rebuild even if current")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else default_cache_dir()
    if args.force and out.exists():
        for name in args.only or [p.name for p in PROGRAMS]:
            shutil.rmtree(out / name, ignore_errors=True)
    start = time.perf_counter()
    build_corpus(out, args.only, verbose=True)
    print(f"built {len(args.only or PROGRAMS)} cases in {time.perf_counter() - start:.1f}s "
          f"under {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
