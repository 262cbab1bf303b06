"""The XLA bridge: the one module of hloscope that talks to jax/jaxlib (optional dependency).

It gives hloscope XLA's own answers to compare against: XLA's parser (``parse_hlo_text``), XLA's
cost analysis (``cost_analysis``), XLA:CPU execution of arbitrary HLO text (``compile_hlo``,
``compile_and_run``, ``compile_and_time``); the artifacts of lowering a jax function
(``lower_jax``) are in ``lowering.py``. jax is imported lazily, inside functions, so ``import hloscope`` never needs it.

jaxlib's Python surface for HLO is private and moves between releases, so every private name is
looked up from a list of candidates (see ``_PROBES``); when jax is missing or none of the
candidates exists, a ``MissingDependencyError`` with one line of advice is raised.

Optimized and GPU modules are rewritten before XLA:CPU compiles them (``rewrite_for_xla_cpu``):
Note [Recompiling optimized HLO], Note [GPU custom calls on XLA:CPU] and Note [Partitioned
modules as replicated modules] are in ``hloscope/xla/rewrite.py``.

Note [Global runs on XLA:CPU]
    A sharded module not partitioned yet (jax's lowering of a sharded jit, a shard_map or a
    pmap: ``hloscope.interpret.spmd.is_global_program``) is one global program, and hloscope
    runs it as such. XLA:CPU compiles it through its SPMD partitioner, after which each device
    takes and returns only its shards. ``CompiledHlo.run_global`` bridges the two: it cuts each
    global input by the parameter sharding XLA's partitioner chose (``get_parameter_shardings``,
    which may differ from the text's where propagation decided), runs, and puts the devices'
    outputs back together by the output shardings XLA chose, so the result is the global
    arrays the module declares: like is compared with like, whatever XLA propagated.

Note [Device numbering]
    A run on ``replicas`` x ``partitions`` devices uses device ``k = replica * partitions +
    partition``, the order of ``DeviceAssignment`` rows; inputs and outputs are lists indexed
    by ``k``.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from hloscope.errors import (
    InputError,
    MissingDependencyError,
    ParseError,
    XlaCompileError,
)
from hloscope.xla.jaxlib_probes import PROBES
from hloscope.xla.rewrite import (
    Rewrite,
    collectives_need_rewrite,
    is_optimized,
    needs_rewrite,
    recompilable_text,
)

__all__ = [
    "available",
    "parse_hlo_text",
    "xla_canonical_text",
    "instruction_opcodes",
    "module_config",
    "cost_analysis",
    "CompiledHlo",
    "XlaCompileError",
    "XlaTiming",
    "Rewrite",
    "rewrite_for_xla_cpu",
    "compile_hlo",
    "compile_and_run",
    "compile_and_time",
    "leaf_shapes",
    "INSTALL_HINT",
]

# What every "jax is missing" message advises.
INSTALL_HINT = "pip install 'hloscope[jax]'"


# --------------------------------------------------------------------------------------------
# Probing jaxlib's private API


# Each entry: attribute name in the namespace -> candidate dotted paths, first found wins
# (jaxlib_probes.py; a dict of this module's own, which tests may patch).
_PROBES: dict[str, tuple[str, ...]] = dict(PROBES)


def _resolve(path: str) -> Any:
    import importlib

    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


@functools.cache
def jaxlib_api() -> SimpleNamespace:
    """The probed jaxlib names; raises MissingDependencyError with one line if any is missing."""
    try:
        import jax  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(
            f"the XLA bridge needs jax and jaxlib ({e}); {INSTALL_HINT}"
        ) from None
    found: dict[str, Any] = {}
    for name, candidates in _PROBES.items():
        for path in candidates:
            try:
                found[name] = _resolve(path)
                break
            except (ImportError, AttributeError):
                continue
        else:
            raise MissingDependencyError(
                f"this jax/jaxlib ({jax.__version__}) has none of {', '.join(candidates)}; "
                f"{INSTALL_HINT} installs the tested version"
            )
    return SimpleNamespace(**found)


def enable_x64() -> Any:
    """jax's context manager that turns 64-bit types on: ``jax.enable_x64(True)`` (jax 0.7
    and later), ``jax.experimental.enable_x64()`` before."""
    import jax

    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    import importlib

    return importlib.import_module("jax.experimental").enable_x64()  # gone from jax 0.10


def available() -> bool:
    """True when jax/jaxlib are installed and expose everything this bridge needs."""
    try:
        jaxlib_api()
    except MissingDependencyError:
        return False
    return True


def _cpu_client() -> Any:
    return jaxlib_api().get_backend("cpu")


# --------------------------------------------------------------------------------------------
# Parsing and inspection


def parse_hlo_text(text: str) -> Any:
    """Parse HLO module text with XLA's own parser and return jaxlib's ``HloModule``.

    Raises ``ParseError`` carrying XLA's message (``line:col: error: ...``) when XLA rejects it.
    """
    api = jaxlib_api()
    try:
        return api.hlo_module_from_text(text)
    except Exception as e:  # jaxlib raises XlaRuntimeError/JaxRuntimeError
        raise ParseError(f"XLA's parser rejected the module: {e}") from None


def _print_options(*, metadata: bool = True, layouts: bool = True) -> Any:
    opts = jaxlib_api().HloPrintOptions()
    opts.print_large_constants = True
    opts.print_metadata = metadata
    opts.include_layout_in_shapes = layouts
    return opts


def xla_canonical_text(text: str) -> str:
    """XLA's ``to_string`` of the parsed module (large constants in full, metadata kept)."""
    return parse_hlo_text(text).to_string(_print_options())


def short_parsable_text(text: str) -> str:
    """XLA's ``HloPrintOptions::ShortParsable`` text of the parsed module (what
    ``hloscope print --canonical`` reproduces)."""
    return parse_hlo_text(text).to_string(jaxlib_api().HloPrintOptions.short_parsable())


def instruction_opcodes(text_or_module: str | Any) -> dict[str, list[tuple[str, str]]]:
    """Per computation name, the ``(instruction name, opcode text)`` pairs in XLA's order.

    Lets tests assert that XLA's parser reads our printed text as the same instructions.
    """
    module = parse_hlo_text(text_or_module) if isinstance(text_or_module, str) else text_or_module
    result: dict[str, list[tuple[str, str]]] = {}
    for comp in module.computations():
        result[comp.name] = [(i.name, _opcode_text(i)) for i in comp.instructions()]
    return result


_OPCODE_IN_TEXT = re.compile(r" = .*? ([a-z][a-z0-9-]*)\(")


def _opcode_text(instruction: Any) -> str:
    # jaxlib's HloOpcode names (kExp, kPopulationCount) are not XLA's spellings (exponential,
    # popcnt); XLA's own printing of the instruction is.
    m = _OPCODE_IN_TEXT.search(instruction.to_string())
    if m is None:
        raise XlaCompileError(f"cannot find the opcode in {instruction.to_string()!r}")
    return m.group(1)


_HEADER_INT = re.compile(r"\b(replica_count|num_partitions)=(\d+)")


def module_config(text: str) -> dict[str, int]:
    """``replica_count`` and ``num_partitions`` from the module header (1 when absent)."""
    header = text.lstrip().split("\n", 1)[0]
    config = {"replica_count": 1, "num_partitions": 1}
    for key, value in _HEADER_INT.findall(header):
        config[key] = int(value)
    return config


def cost_analysis(text: str) -> dict[str, float]:
    """XLA's ``HloCostAnalysis`` of the module as configured for XLA:CPU.

    Keys are XLA's: ``flops``, ``transcendentals``, ``bytes accessed`` (bytes), plus per-operand
    ``bytes accessed{i}{shape index}``, ``bytes accessedout{...}`` and ``utilization...``.
    """
    api = jaxlib_api()
    module = parse_hlo_text(text)
    try:
        return dict(api.hlo_module_cost_analysis(_cpu_client(), module))
    except Exception as e:
        raise XlaCompileError(f"XLA's cost analysis failed: {e}") from None


# --------------------------------------------------------------------------------------------
# Making any module compilable (Note [Recompiling optimized HLO] in xla/rewrite.py)


def rewrite_for_xla_cpu(text: str, *, partitions_as_replicas: int = 0) -> Rewrite | None:
    """The module ``text`` as XLA:CPU can compile it, and what was changed (Note [Recompiling
    optimized HLO], Note [GPU custom calls on XLA:CPU]); None when XLA:CPU compiles it as it
    is. ``partitions_as_replicas`` (a partition count, or 0) applies Note [Partitioned modules
    as replicated modules].
    Raises ``ParseError`` when XLA cannot parse ``text``."""
    canonical = parse_hlo_text(text).to_string(_print_options(metadata=False))
    single_partition = bool(partitions_as_replicas) or module_config(text)["num_partitions"] == 1
    if not (needs_rewrite(canonical) or partitions_as_replicas
            or collectives_need_rewrite(canonical, single_partition=single_partition)):
        return None
    return recompilable_text(canonical, partitions_as_replicas=partitions_as_replicas,
                             single_partition=single_partition)


# --------------------------------------------------------------------------------------------
# Compiling and running


def _result_tree(shape: Any) -> Any:
    """Nested structure of leaf counts: None for an array leaf, a tuple for a tuple shape."""
    if shape.is_tuple():
        return tuple(_result_tree(s) for s in shape.tuple_shapes())
    return None


def _unflatten(tree: Any, leaves: list[np.ndarray], pos: int = 0) -> tuple[Any, int]:
    if tree is None:
        return leaves[pos], pos + 1
    items = []
    for sub in tree:
        value, pos = _unflatten(sub, leaves, pos)
        items.append(value)
    return tuple(items), pos


def leaf_shapes(shape: Any) -> list[tuple[np.dtype[Any], tuple[int, ...]]]:
    """(dtype, dims) of each array leaf of an XLA shape, depth first."""
    if shape.is_tuple():
        return [leaf for s in shape.tuple_shapes() for leaf in leaf_shapes(s)]
    return [(np.dtype(shape.numpy_dtype()), tuple(shape.dimensions()))]


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


@dataclasses.dataclass
class CompiledHlo:
    """An HLO module compiled by XLA:CPU for ``replicas`` x ``partitions`` devices.

    ``run(inputs)`` executes it: ``put`` copies the inputs to the devices, ``execute`` runs
    on those (again and again if wanted). With one device ``inputs`` is the list of entry parameters
    and the result is one value; with several it is a list (indexed by device, Note [Device
    numbering]) of such lists and the result is the list of per-device values. A value is an
    ``np.ndarray`` or, for a tuple-shaped root, a tuple nested like the root's shape.
    """

    executable: Any
    devices: list[Any]
    replicas: int
    partitions: int
    parameter_shapes: list[tuple[np.dtype[Any], tuple[int, ...]]]
    result_tree: Any
    compiled_text: str
    rewrite: Rewrite | None = None  # what was rewritten before compiling; None if nothing
    # For a module XLA's SPMD partitioner split (Note [Global runs on XLA:CPU]): the global
    # (dtype, dims) of each parameter and result leaf, and the HloSharding text XLA chose for
    # each; None otherwise.
    global_parameter_shapes: list[tuple[np.dtype[Any], tuple[int, ...]]] | None = None
    global_result_tree: Any = None
    global_result_shapes: list[tuple[np.dtype[Any], tuple[int, ...]]] | None = None
    parameter_shardings: list[str] | None = None
    output_shardings: list[str] | None = None

    @property
    def num_devices(self) -> int:
        return self.replicas * self.partitions

    @property
    def parameter_count(self) -> int:
        """Number of array leaves over all entry parameters (tuple parameters flattened)."""
        return len(self.parameter_shapes)

    def run(self, inputs: Sequence[Any]) -> Any:
        """Execute once; see the class docstring for the shape of ``inputs`` and the result."""
        return self.execute(self.put(inputs))

    def put(self, inputs: Sequence[Any]) -> list[Any]:
        """Check ``inputs`` (as ``run`` takes them) and copy them to the devices; the result is
        what ``execute`` takes, and may be executed many times. No host copy is kept, so the
        caller may drop ``inputs`` afterwards (benchmarks/run.py does, to measure XLA's own
        memory)."""
        import jax

        n = self.num_devices
        per_device = [list(inputs)] if n == 1 else [list(x) for x in inputs]
        if len(per_device) != n:
            raise InputError(f"expected inputs for {n} devices, got {len(per_device)}")
        flat = [[np.asarray(a) for arg in args for a in _flatten(arg)] for args in per_device]
        for k, args in enumerate(flat):
            if len(args) != self.parameter_count:
                raise InputError(
                    f"device {k}: the module takes {self.parameter_count} array parameters, "
                    f"got {len(args)}"
                )
            for i, (arg, (dtype, dims)) in enumerate(zip(args, self.parameter_shapes)):
                # execute_sharded does not check, and a mismatch crashes the process.
                if arg.dtype != dtype or arg.shape != dims:
                    raise InputError(
                        f"device {k}: array parameter {i} must be {dtype}{list(dims)}, "
                        f"got {arg.dtype}{list(arg.shape)}"
                    )
        # x64 on, so that jax's transfer keeps f64/s64 arrays as they are.
        with enable_x64():
            arrays = []
            for i in range(self.parameter_count):
                # Own, contiguous copies: XLA:CPU may alias host memory of transferred arrays.
                # Each lives only until its transfer, so inputs are never held twice.
                shards = [jax.device_put(np.array(flat[k][i], copy=True, order="C"), self.devices[k])
                          for k in range(n)]
                arrays.append(_assemble(shards, self.devices))
        return arrays

    def execute(self, arrays: list[Any]) -> Any:
        """Execute once on inputs already on the devices (``put``); returns host values as
        ``run`` does."""
        import jax

        n = self.num_devices
        with enable_x64():
            try:
                results = self.executable.execute_sharded(arrays)
                per_output: list[Any] = results.disassemble_into_single_device_arrays()
                jax.block_until_ready(per_output)
            except Exception as e:
                raise XlaCompileError(f"XLA:CPU failed to execute the module: {e}") from None
        del results
        # Copy one output at a time and release its device buffers, so the outputs are never
        # held twice (seed 003 on 8 replicas returns 3.6 GB).
        host: list[list[np.ndarray]] = []
        for j in range(len(per_output)):
            host.append([np.array(a, copy=True) for a in per_output[j]])
            per_output[j] = None
        values = [_unflatten(self.result_tree, [h[k] for h in host])[0] for k in range(n)]
        return values[0] if n == 1 else values


    def run_global(self, inputs: Sequence[Any]) -> Any:
        """Run a module XLA partitioned on its global inputs and return its global outputs
        (Note [Global runs on XLA:CPU]): ``inputs`` holds one whole array per parameter leaf,
        the result is nested like the module's (unpartitioned) root shape."""
        from hloscope.interpret.spmd import assemble, cut, hlo_layout, parse_sharding

        if self.parameter_shardings is None or self.output_shardings is None:
            raise InputError("run_global needs a module compiled by XLA's SPMD partitioner "
                             "(compile_hlo(..., spmd_partition=True))")
        assert self.global_parameter_shapes is not None and self.global_result_shapes is not None
        n = self.num_devices
        flat = [np.asarray(a) for arg in inputs for a in _flatten(arg)]
        if len(flat) != len(self.global_parameter_shapes):
            raise InputError(f"the module takes {len(self.global_parameter_shapes)} array "
                             f"parameters, got {len(flat)}")
        per_device: list[list[np.ndarray]] = [[] for _ in range(n)]
        for i, (x, (dtype, dims), text, (_, local)) in enumerate(zip(
                flat, self.global_parameter_shapes, self.parameter_shardings, self.parameter_shapes,
                strict=True)):
            if x.dtype != dtype or x.shape != dims:
                raise InputError(f"array parameter {i} must be {dtype}{list(dims)}, "
                                 f"got {x.dtype}{list(x.shape)}")
            for k, piece in enumerate(cut(x, hlo_layout(parse_sharding(text), dims, n))):
                per_device[k].append(piece.reshape(local) if piece.size == int(np.prod(local)) else piece)
        del flat
        outputs = self.run(per_device)
        leaves = [_flatten(v) for v in outputs]
        whole = []
        for j, ((dtype, dims), text) in enumerate(zip(self.global_result_shapes, self.output_shardings,
                                                      strict=True)):
            layout = hlo_layout(parse_sharding(text), dims, n)
            shards = []
            for k in range(n):
                want = tuple(s.stop - s.start for s in layout[k])
                shard = np.asarray(leaves[k][j])
                # A partitioned scalar may come back as f32[1] (a size-1 axis XLA kept).
                shards.append(shard.reshape(want) if shard.size == int(np.prod(want)) else shard)
                leaves[k][j] = None
            whole.append(assemble(shards, layout, dims, dtype))
        return _unflatten(self.global_result_tree, whole)[0]


def _assemble(shards: list[Any], devices: list[Any]) -> Any:
    """One jax Array whose per-device buffers are ``shards`` (for ``execute_sharded``).

    The array claims a replicated sharding although its buffers differ: ``execute_sharded``
    only hands each device its own buffer, and this is the one sharding every shape (scalars
    included) admits.
    """
    import jax

    if len(shards) == 1:
        return shards[0]
    mesh = jax.sharding.Mesh(np.array(devices), ("hloscope_devices",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return jax.make_array_from_single_device_arrays(shards[0].shape, sharding, shards)


def compile_hlo(
    text: str,
    *,
    replicas: int | None = None,
    partitions: int | None = None,
    spmd_partition: bool | None = None,
) -> CompiledHlo:
    """Compile HLO module text for XLA:CPU.

    ``replicas``/``partitions`` default to the header's ``replica_count``/``num_partitions``.
    ``spmd_partition`` says the module is sharded but not yet partitioned, so XLA's SPMD
    partitioner (Shardy when the text has ``xla.sdy.`` attributes) splits it; by default it is
    on when ``partitions > 1`` and the module is not already optimized (``needs_rewrite``).
    When off, the module's ``sharding=`` attributes are ignored: it already is the per-device
    program. Optimized modules are first rewritten (``CompiledHlo.rewrite`` says how; Note
    [Recompiling optimized HLO]). Raises ``ParseError`` if XLA cannot parse the text and
    ``XlaCompileError`` if XLA:CPU cannot compile it.
    """
    api = jaxlib_api()
    config = module_config(text)
    replicas = config["replica_count"] if replicas is None else replicas
    partitions = config["num_partitions"] if partitions is None else partitions
    module = parse_hlo_text(text)
    canonical = module.to_string(_print_options(metadata=False))
    if spmd_partition is None:
        # An optimized module (scheduled, fusions, bitcasts) is already partitioned; GPU dumps
        # such as seed 001 are not scheduled and do not print num_partitions. Else hloscope's
        # rule decides (Note [Recognising a global program] in interpret/spmd.py): a module
        # with collectives and no sharding annotation is a per-device program.
        spmd_partition = partitions > 1 and not is_optimized(canonical) and _is_global_program(canonical)
    # Note [Partitioned modules as replicated modules]
    as_replicas = partitions > 1 and not spmd_partition
    if as_replicas and replicas > 1:
        raise XlaCompileError(
            f"the XLA:CPU bridge cannot run an already partitioned module on {replicas} replicas "
            f"x {partitions} partitions (only one of the two may exceed 1)"
        )
    rewrite = None
    compiled_text = canonical
    # Note [Collectives XLA:CPU compiles]: with one partition (as compiled), channel ids on
    # all-reduces mean nothing and make combined ones fail in layout assignment.
    single_partition = as_replicas or partitions == 1
    if (needs_rewrite(canonical) or as_replicas
            or collectives_need_rewrite(canonical, single_partition=single_partition)):
        rewrite = recompilable_text(canonical, partitions_as_replicas=partitions if as_replicas else 0,
                                    single_partition=single_partition, keep_shardings=spmd_partition)
        compiled_text = rewrite.text
        module = parse_hlo_text(compiled_text)
    client = _cpu_client()
    _initialize_lapack()
    n = replicas * partitions
    if n > client.device_count():
        raise InputError(
            f"the module needs {n} devices but XLA:CPU has {client.device_count()}; set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n} before jax is imported"
        )
    xla_computation = api.XlaComputation(module.as_serialized_hlo_module_proto())
    program_shape = xla_computation.program_shape()
    parameter_shapes = [leaf for s in program_shape.parameter_shapes() for leaf in leaf_shapes(s)]
    try:
        mlir = api.xla_computation_to_mlir_module(xla_computation)
    except Exception as e:
        raise XlaCompileError(f"XLA could not convert the module to MLIR: {e}") from None
    compile_replicas, compile_partitions = (n, 1) if as_replicas else (replicas, partitions)
    options = api.CompileOptions()
    options.num_replicas = compile_replicas
    options.num_partitions = compile_partitions
    build = options.executable_build_options
    build.num_replicas = compile_replicas
    build.num_partitions = compile_partitions
    if compile_partitions > 1:
        build.use_spmd_partitioning = True
        build.use_shardy_partitioner = "xla.sdy." in text
    devices = list(client.local_devices()[:n])
    assignment = np.arange(n).reshape(compile_replicas, compile_partitions)
    options.device_assignment = api.DeviceAssignment.create(
        np.array([[devices[k].id for k in row] for row in assignment])
    )
    try:
        executable = client.compile_and_load(mlir, api.DeviceList(tuple(devices)), options)
    except Exception as e:
        raise XlaCompileError(f"XLA:CPU could not compile the module: {e}") from None
    global_info: dict[str, Any] = {}
    if compile_partitions > 1:
        # The partitioner changed the entry signature from global to per-device shapes.
        global_info = {
            "global_parameter_shapes": parameter_shapes,
            "global_result_tree": _result_tree(program_shape.result_shape()),
            "global_result_shapes": leaf_shapes(program_shape.result_shape()),
            "parameter_shardings": _sharding_texts(executable, "get_parameter_shardings"),
            "output_shardings": _sharding_texts(executable, "get_output_shardings"),
        }
    # The executable's own signature: the partitioner changes it from global to per-device
    # shapes, and an entry_computation_layout that disagrees with the entry computation (XLA's
    # layouts_and_names.hlo: f32 over an f16 computation) is dropped on the way to MLIR, while
    # XlaComputation.program_shape() reads the layout.
    # The result's nesting stays the module's own: XLA:CPU's compiled entry returns a flat tuple
    # ((a, (b, c)) comes back as (a, b, c)), which the outputs are put back into.
    result_tree = _result_tree(program_shape.result_shape())
    compiled_module = executable.hlo_modules()[0]
    program_shape = api.XlaComputation(compiled_module.as_serialized_hlo_module_proto()).program_shape()
    parameter_shapes = [leaf for s in program_shape.parameter_shapes() for leaf in leaf_shapes(s)]
    return CompiledHlo(
        executable=executable,
        devices=devices,
        replicas=replicas,
        partitions=partitions,
        parameter_shapes=parameter_shapes,
        result_tree=result_tree,
        compiled_text=compiled_text,
        rewrite=rewrite,
        **global_info,
    )


def _initialize_lapack() -> None:
    """Fill in jaxlib's LAPACK kernels, which XLA:CPU's ``lapack_*_ffi`` custom calls (jax's
    linalg: cholesky, qr, eig, solve, ...) call through function pointers that jaxlib sets
    only when jax lowers a linalg op in the same process (``jaxlib.lapack.prepare_lapack_call``
    calls ``_lapack.initialize()``). A process that only compiles HLO text, as the XLA:CPU
    worker does, had them null, and executing such a module crashed it (SIGSEGV)."""
    for path in ("jax._src.lib.lapack._lapack.initialize", "jaxlib.lapack._lapack.initialize"):
        try:
            _resolve(path)()
            return
        except (ImportError, AttributeError):
            continue


def _is_global_program(canonical: str) -> bool:
    """Whether XLA's text of a module is a sharded program not partitioned yet."""
    from hloscope.interpret.spmd import is_global_program
    from hloscope.text import parse_module

    return is_global_program(parse_module(canonical, "<XLA's canonical text>"))


def _sharding_texts(executable: Any, method: str) -> list[str] | None:
    """XLA's text (``{devices=[8,1]<=[8]}``) of each OpSharding ``executable.<method>()``
    returns (one per parameter or output leaf); None when this jaxlib does not expose them."""
    try:
        from jax._src.lib import xla_client

        shardings = getattr(executable, method)()
        return None if shardings is None else [str(xla_client.HloSharding.from_proto(o)) for o in shardings]
    except (ImportError, AttributeError):
        return None


def compile_and_run(
    text: str,
    inputs: Sequence[Any],
    *,
    replicas: int | None = None,
    partitions: int | None = None,
    spmd_partition: bool | None = None,
) -> Any:
    """Compile ``text`` on XLA:CPU and run it once on ``inputs``; see ``CompiledHlo.run``.

    bf16/fp8/int4 inputs are ``ml_dtypes`` arrays; outputs come back in the same dtypes.
    """
    compiled = compile_hlo(text, replicas=replicas, partitions=partitions,
                           spmd_partition=spmd_partition)
    return compiled.run(inputs)


@dataclasses.dataclass(frozen=True)
class XlaTiming:
    """Wall-clock seconds of XLA:CPU stages: parse (+rewrite), compile, and the fastest run."""

    parse_s: float
    compile_s: float
    execute_s: float
    execute_runs: tuple[float, ...]
    outputs: Any

    @property
    def total_s(self) -> float:
        """Parse + compile + one (the fastest) execution, in seconds."""
        return self.parse_s + self.compile_s + self.execute_s


def compile_and_time(
    text: str,
    inputs: Sequence[Any],
    *,
    replicas: int | None = None,
    partitions: int | None = None,
    repeat: int = 3,
) -> XlaTiming:
    """Like ``compile_and_run`` but measures seconds for parsing, compiling and executing.

    The execution is repeated ``repeat`` times (inputs transferred each time); ``execute_s`` is
    the minimum. ``parse_s`` is XLA parsing the text alone.
    """
    t0 = time.perf_counter()
    parse_hlo_text(text)
    t1 = time.perf_counter()
    compiled = compile_hlo(text, replicas=replicas, partitions=partitions)
    t2 = time.perf_counter()
    runs = []
    outputs = None
    for _ in range(max(1, repeat)):
        s = time.perf_counter()
        outputs = compiled.run(inputs)
        runs.append(time.perf_counter() - s)
    return XlaTiming(t1 - t0, t2 - t1, min(runs), tuple(runs), outputs)
