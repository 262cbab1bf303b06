"""Lowering jax functions with XLA:CPU: the module before and after optimizations, XLA's own
analyses, and the program's inputs and outputs per device (``lower_jax``), as plain data.

Part of the XLA bridge (``client.py``): jax is imported inside the functions only.
"""
from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from hloscope.errors import InputError, MissingDependencyError, XlaCompileError
from hloscope.xla.client import INSTALL_HINT, jaxlib_api, leaf_shapes, module_config, parse_hlo_text

__all__ = ["JaxArtifacts", "lower_jax", "use_shardy"]


@dataclasses.dataclass(frozen=True)
class JaxArtifacts:
    """What XLA produces for one jax program, all as plain Python/numpy data.

    ``inputs``/``outputs`` are flattened lists of numpy arrays. For multi-device programs
    (``num_devices > 1``) they are per device: ``inputs[k]`` is device k's list of entry
    parameters (pmap: the k-th slice; sharded jit: device k's shard), likewise ``outputs``.
    ``dump_files`` maps the dump's file names (XLA's ``module_XXXX.<name>.`` prefix removed) to
    their text; only the text artifacts this project reads are kept. ``global_inputs`` and
    ``global_outputs`` are the program's flattened arguments and results as jax sees them
    (whole arrays; pmap: stacked over devices), what the module before partitioning computes.
    """

    pre_optimization_text: str
    post_optimization_text: str
    cost_analysis: dict[str, float]
    memory_analysis: dict[str, int]
    inputs: list[Any]
    outputs: list[Any]
    num_replicas: int
    num_partitions: int
    dump_files: dict[str, str]
    global_inputs: list[np.ndarray] = dataclasses.field(default_factory=list)
    global_outputs: list[np.ndarray] = dataclasses.field(default_factory=list)

    @property
    def num_devices(self) -> int:
        return self.num_replicas * self.num_partitions


_DUMP_SUFFIXES = (
    "before_optimizations.txt",
    "after_optimizations.txt",
    "after_optimizations-buffer-assignment.txt",
    "after_optimizations-buffer-assignment-values.txt",
    "after_optimizations-live-range.txt",
    "after_optimizations-memory-usage-report.txt",
)


_MEMORY_KEYS = tuple(f"{host}{kind}_size_in_bytes" for host in ("", "host_")
                     for kind in ("argument", "output", "alias", "temp", "generated_code"))


def _analyses(compiled: Any) -> tuple[dict[str, float], dict[str, int]]:
    """XLA's ``cost_analysis()`` and ``memory_analysis()`` of ``compiled`` ({} where it has none)."""
    cost: dict[str, float] = {}
    memory: dict[str, int] = {}
    with contextlib.suppress(Exception):
        got = compiled.cost_analysis()
        got = (got[0] if got else {}) if isinstance(got, list | tuple) else got
        cost = {str(k): float(v) for k, v in dict(got or {}).items()}
    with contextlib.suppress(Exception):
        stats = compiled.memory_analysis()
        keys = (*_MEMORY_KEYS, "peak_memory_in_bytes")
        memory = {k: int(getattr(stats, k)) for k in keys if stats is not None and hasattr(stats, k)}
    return cost, memory


def _read_dump(dirpath: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(dirpath, "module_*.txt"))):
        base = os.path.basename(path)
        for suffix in _DUMP_SUFFIXES:
            if base.endswith(suffix):
                with open(path, encoding="utf-8") as f:
                    files[_dump_key(base, suffix)] = f.read()
                break
    return files


def _dump_key(base: str, suffix: str) -> str:
    # The stage prefix (cpu_) sits just before the suffix; keep it so names say what they are.
    stem = base[: -len(suffix)]
    prefix = stem.rsplit(".", 1)[-1]
    return prefix + suffix


def use_shardy(enabled: bool | None) -> Any:
    """Context manager setting ``jax_use_shardy_partitioner`` (None leaves it unchanged)."""
    import jax

    @contextlib.contextmanager
    def ctx() -> Any:
        if enabled is None:
            yield
            return
        name = "jax_use_shardy_partitioner"
        old = getattr(jax.config, name)
        jax.config.update(name, enabled)
        try:
            yield
        finally:
            jax.config.update(name, old)

    return ctx()


def lower_jax(
    f: Callable[..., Any],
    *args: Any,
    mode: str = "jit",
    shardy: bool | None = None,
    dump: bool = True,
    run: bool = True,
    **jit_kwargs: Any,
) -> JaxArtifacts:
    """Lower, compile and run ``f(*args)`` with jax on XLA:CPU and collect XLA's artifacts.

    ``mode`` is ``"jit"`` (``jax.jit(f, **jit_kwargs)``; shardings go in ``jit_kwargs``) or
    ``"pmap"`` (``jax.pmap(f, **jit_kwargs)``; leading axis of each arg = devices); a jitted or
    pmapped ``f`` is lowered as it is (Note [Lowering the program as written]). ``shardy`` sets
    ``jax_use_shardy_partitioner`` while lowering (None: jax's default). With ``dump`` XLA's dump
    text files are returned. With ``run`` the program runs once for its inputs and outputs per
    device, keeping unused parameters (``keep_unused=True``) so that they are the module's;
    without, nothing runs (no inputs, no outputs) and the program is compiled as written.
    """
    import jax

    jaxlib_api()
    if mode not in ("jit", "pmap"):
        raise InputError(f"mode must be 'jit' or 'pmap', got {mode!r}")
    # Note [Lowering the program as written]
    #     An already-jitted function carries its own options (donation, shardings): wrapping it
    #     in another jit would compile an outer program without them, so it is lowered as it is.
    #     Options given besides would be silently lost the same way, so they are refused.
    #     A donating run deletes its inputs, which are the caller's arrays and are read
    #     afterwards (as the module's inputs): the run gets copies, taken only when donating.
    #     Without a run (from_jax) nothing is deleted and jit drops unused parameters as usual.
    jitted = hasattr(f, "lower")  # jax.jit(...) or jax.pmap(...): staged already
    if jitted and jit_kwargs:
        raise InputError(f"{getattr(f, '__name__', 'the function')} is already jitted or pmapped: pass the "
                         f"plain function with the jit options ({', '.join(sorted(jit_kwargs))}), "
                         "or the jitted function without them")
    if run and mode == "jit" and not jitted:
        # jit drops unused parameters by default; keep them so HLO parameters = flat inputs.
        jit_kwargs.setdefault("keep_unused", True)
    transform = jax.pmap if mode == "pmap" else jax.jit
    with use_shardy(shardy), tempfile.TemporaryDirectory(prefix="hloscope-dump-") as d:
        wrapped = f if jitted else transform(f, **jit_kwargs)
        lowered = wrapped.lower(*args)
        pre = _lowered_hlo_text(lowered)
        options = {"xla_dump_to": d, "xla_dump_hlo_as_text": True} if dump else {}
        compiled = lowered.compile(compiler_options=options) if options else lowered.compile()
        post = compiled.as_text()
        if post is None:  # jax returns None when the backend cannot print the executable
            raise XlaCompileError("XLA compiled the function but gave no HLO text for it")
        dump_files = _read_dump(d) if dump else {}
        config = module_config(post)
        replicas, partitions = config["replica_count"], config["num_partitions"]
        n = replicas * partitions
        cost, memory = _analyses(compiled)
        if not run:
            return JaxArtifacts(pre, post, cost, memory, [], [], replicas, partitions, dump_files)
        in_leaves = [_host_array(a) for a in jax.tree_util.tree_leaves(args)]
        in_shardings = ([] if n == 1 or mode == "pmap" else
                        jax.tree_util.tree_leaves(compiled.input_shardings[0]))
        header = post.split("\n", 1)[0]
        donates = "input_output_alias=" in header or "buffer_donor=" in header
        run_args = _copies(args) if donates else args
        outputs = compiled(*run_args) if mode == "jit" else wrapped(*run_args)
        jax.block_until_ready(outputs)
        del run_args
        out_leaves = jax.tree_util.tree_leaves(outputs)
        out_shardings = [a.sharding for a in out_leaves]
        out_arrays = [_host_array(a) for a in out_leaves]
        if n == 1:
            inputs: list[Any] = in_leaves
            outs: list[Any] = out_arrays
        elif mode == "pmap":
            # Device k holds slice k; its HLO shape may keep the mapped axis as size 1.
            params, results = _entryleaf_shapes(post)
            inputs = [[a[k].reshape(s[1]) for a, s in zip(in_leaves, params)] for k in range(n)]
            outs = [[a[k].reshape(s[1]) for a, s in zip(out_arrays, results)] for k in range(n)]
        else:
            inputs = _shards_by_device(in_leaves, in_shardings, n)
            outs = _shards_by_device(out_arrays, out_shardings, n)
    return JaxArtifacts(pre, post, cost, memory, inputs, outs, replicas, partitions, dump_files,
                        in_leaves, out_arrays)


def _host_array(leaf: Any) -> np.ndarray:
    """``leaf`` as a numpy array; a typed PRNG key (``jax.random.key``) as the uint32 data the
    module's parameter holds (``u32[..., 2]`` for threefry)."""
    import jax

    dtype = getattr(leaf, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    return np.asarray(leaf)


def _copies(args: Any) -> Any:
    """Fresh device copies of the jax arrays in ``args`` (same shardings), for a donating run."""
    import jax

    return jax.tree_util.tree_map(lambda a: a.copy() if isinstance(a, jax.Array) else a, args)


def _entryleaf_shapes(text: str) -> tuple[list[Any], list[Any]]:
    """(dtype, dims) of the entry parameters' and the result's array leaves."""
    module = parse_hlo_text(text)
    program_shape = jaxlib_api().XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
    params = [leaf for s in program_shape.parameter_shapes() for leaf in leaf_shapes(s)]
    return params, leaf_shapes(program_shape.result_shape())


def _shards_by_device(leaves: list[np.ndarray], shardings: list[Any], n: int) -> list[list[Any]]:
    """Device k's piece of each global value (a host array), by the value's sharding (Note [Device numbering]).

    Device k is the k-th device of the compiled module's device assignment, which for the
    meshes built over ``jax.devices()`` in order is ``jax.devices()[k]``.
    """
    import jax

    devices = jax.devices()[:n]
    result: list[list[Any]] = [[] for _ in range(n)]
    for arr, sharding in zip(leaves, shardings, strict=True):
        index_map = sharding.devices_indices_map(arr.shape)
        for k in range(n):
            # np.asarray: indexing a 0-d array by () gives a numpy scalar, which
            # np.ascontiguousarray would make 1-d; jax's shard of a scalar is 0-d.
            result[k].append(np.ascontiguousarray(np.asarray(arr[index_map[devices[k]]]))
                             if arr.ndim else arr.copy())
    return result


def _lowered_hlo_text(lowered: Any) -> str:
    for attempt in (lambda: lowered.as_text(dialect="hlo"),
                    lambda: lowered.compiler_ir("hlo").as_hlo_text()):
        try:
            return attempt()
        except Exception:
            continue
    raise MissingDependencyError(f"cannot get HLO text from jax's Lowered; {INSTALL_HINT}")

