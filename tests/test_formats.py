"""``hloscope.load`` on every format users hold: HLO text, StableHLO (text, bytecode), protos.

The same jax programs are loaded from HLO text, a binary HloModuleProto, XLA's dumped HloProto,
an HloSnapshot, StableHLO text (with and without debug info) and MLIR bytecode, and must give
the same IR. Instruction names: StableHLO printed without debug info (``as_text()``) has no
locations, so XLA names instructions after their opcode (``Arg_0.1``, ``dot.2``) instead of
jax's name stack (``x.1``, ``dot_general.1``); those are compared structurally, names replaced
by positions. The module config (``num_partitions``, ``replica_count``,
``allow_spmd_sharding_propagation_*``) is no part of an HloModuleProto, and jax's HLO text
leaves ``num_partitions`` out, so header comparisons skip those keys (Note [Module config lost
in protos]); MLIR restores the first two. Metadata is never compared: jax's HLO text omits it and MLIR carries it as
locations whose ``op_name`` differs slightly on reducer parameters.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hloscope
from hloscope.api import load_bytes
from hloscope.errors import HloscopeError, InputError, MissingDependencyError
from hloscope.formats import Format, detect_format, unwrap_hlo_module_proto
from hloscope.ir.equality import first_difference

HLO = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT a = f32[4]{0} add(p, p)
}
"""


def _wrap(field: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (what HloProto/HloSnapshot put around a module)."""
    n, length = len(payload), b""
    while True:
        b = n & 0x7F
        n >>= 7
        length += bytes([b | (0x80 if n else 0)])
        if not n:
            break
    return bytes([field << 3 | 2]) + length + payload


# --- structure-only comparison ------------------------------------------------------------------


_CONFIG_KEYS = ("num_partitions", "replica_count", "allow_spmd_sharding_propagation_to_parameters",
                "allow_spmd_sharding_propagation_to_output")


def _module_key(m, *, names: bool):
    comp_ids = {c.name: (c.name if names else i) for i, c in enumerate(m.computations)}

    def norm(v):
        from hloscope.ir.computation import Computation
        from hloscope.ir.instruction import Instruction

        if isinstance(v, Computation):
            return ("computation", comp_ids[v.name])
        if isinstance(v, Instruction):
            return ("instruction", v.name if names else pos[v.name])
        if isinstance(v, list | tuple):
            return [norm(x) for x in v]
        return v

    key = [("entry", comp_ids[m.entry.name]),
           ("header", sorted((k, repr(norm(v))) for k, v in m.attrs.items() if k not in _CONFIG_KEYS))]
    for c in m.computations:
        pos = {inst.name: i for i, inst in enumerate(c.instructions)}
        insts = []
        for inst in c.instructions:
            attrs = tuple((k, norm(v)) for k, v in inst.attrs.items() if k != "metadata")
            insts.append((inst.name if names else pos[inst.name], inst.opcode, inst.shape,
                          tuple(o.name if names else pos[o.name] for o in inst.operands),
                          attrs, inst.is_root))
        key.append((comp_ids[c.name], insts))
    return key


def _first_key_difference(a, b, *, names: bool) -> str | None:
    ka, kb = _module_key(a, names=names), _module_key(b, names=names)
    if len(ka) != len(kb):
        return f"{len(ka) - 2} vs {len(kb) - 2} computations"
    for x, y in zip(ka, kb, strict=True):
        if x != y:
            if isinstance(x[1], list) and isinstance(y[1], list) and len(x[1]) == len(y[1]):
                for i, j in zip(x[1], y[1], strict=True):
                    if i != j:
                        return f"computation {x[0]}: {i} != {j}"
            return f"{x!r:.300} != {y!r:.300}"
    return None


# --- the programs, in every format --------------------------------------------------------------

PROGRAM_NAMES = ["mlp_step", "transformer_block", "scan", "conv", "sort", "while",
                 "gather_scatter", "cond", "sharded_matmul", "shard_map_psum"]


@functools.cache
def _formats(name: str, tmp: str) -> dict[str, Path]:
    jax = pytest.importorskip("jax")
    from jax._src.interpreters import mlir as jax_mlir

    from tests.test_from_jax import PROGRAMS

    f, make_args, make_kwargs = PROGRAMS[name]
    args = make_args()
    lowered = jax.jit(f, keep_unused=True, **make_kwargs()).lower(*args)
    d = Path(tmp) / name
    d.mkdir(parents=True, exist_ok=True)
    module_proto = lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()
    out = {
        "hlo": lowered.as_text(dialect="hlo").encode(),
        "pb": module_proto,
        "snapshot": _wrap(1, _wrap(1, module_proto)),  # HloSnapshot{hlo: HloProto{hlo_module}}
        "mlir": lowered.as_text().encode(),
        "mlir_debug": lowered.as_text(debug_info=True).encode(),
        "bytecode": jax_mlir.module_to_bytecode(lowered.compiler_ir("stablehlo")),
    }
    paths = {}
    for kind, data in out.items():
        paths[kind] = d / f"{name}.{kind}"
        paths[kind].write_bytes(data)
    dump = d / "dump"
    lowered.compile(compiler_options={"xla_dump_to": str(dump), "xla_dump_hlo_as_proto": True,
                                      "xla_dump_hlo_as_text": True})
    for stage in ("before_optimizations", "cpu_after_optimizations"):
        paths[f"dump_{stage}.pb"] = next(dump.glob(f"*.{stage}.hlo.pb"))
        paths[f"dump_{stage}.txt"] = next(dump.glob(f"*.{stage}.txt"))
    return paths


@pytest.fixture(scope="module")
def fmt_dir(tmp_path_factory):
    pytest.importorskip("jax")
    return str(tmp_path_factory.mktemp("formats"))


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_every_format_gives_the_same_module(name: str, fmt_dir: str) -> None:
    paths = _formats(name, fmt_dir)
    expected_formats = {"hlo": Format.HLO_TEXT, "pb": Format.HLO_MODULE_PROTO,
                        "snapshot": Format.HLO_SNAPSHOT, "mlir": Format.MLIR_TEXT,
                        "mlir_debug": Format.MLIR_TEXT, "bytecode": Format.MLIR_BYTECODE,
                        "dump_before_optimizations.pb": Format.HLO_PROTO}
    for kind, fmt in expected_formats.items():
        assert detect_format(paths[kind].read_bytes()).format is fmt, kind
    m = {kind: hloscope.load(p) for kind, p in paths.items()}
    ref = m["hlo"]
    # Same names: the proto and debug-info MLIR carry jax's names; only metadata differs.
    for kind in ("pb", "snapshot", "mlir_debug", "bytecode", "dump_before_optimizations.pb"):
        assert _first_key_difference(ref, m[kind], names=True) is None, kind
    # StableHLO without locations: XLA invents names from opcodes; structure must still agree.
    assert _first_key_difference(ref, m["mlir"], names=False) is None
    # Dumped proto and dumped text of one module: identical but for the config in the header.
    for stage in ("before_optimizations", "cpu_after_optimizations"):
        a, b = m[f"dump_{stage}.txt"], m[f"dump_{stage}.pb"]
        assert _first_key_difference(a, b, names=True) is None, stage
    # MLIR keeps the partition count that protos lose.
    partitions = m["dump_before_optimizations.txt"].num_partitions
    for kind in ("mlir", "mlir_debug", "bytecode"):
        assert m[kind].num_partitions == partitions, kind
    # The proto and the jax HLO text differ only in what the text leaves out (metadata).
    assert first_difference(m["pb"], m["snapshot"]) is None


def test_mlir_names_differ_only_without_debug_info(fmt_dir: str) -> None:
    paths = _formats("mlp_step", fmt_dir)
    plain, ref = hloscope.load(paths["mlir"]), hloscope.load(paths["hlo"])
    assert _first_key_difference(ref, plain, names=True) is not None
    assert {i.name for i in plain.entry.instructions if i.opcode.text == "parameter"} != {
        i.name for i in ref.entry.instructions if i.opcode.text == "parameter"}


def test_large_constants_are_printed_in_full(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    import numpy as np

    table = np.arange(1000, dtype=np.float32)
    lowered = jax.jit(lambda x: x * table).lower(np.ones(1000, np.float32))
    p = tmp_path / "c.pb"
    p.write_bytes(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
    m = hloscope.load(p)
    consts = [i for i in m.entry.instructions if i.opcode.text == "constant"]
    assert any(c.shape.to_text(layout=False) == "f32[1000]" for c in consts)
    assert "{...}" not in hloscope.to_text(m)


# --- detection from content -----------------------------------------------------------------


def test_content_wins_over_suffix(tmp_path: Path, fmt_dir: str) -> None:
    paths = _formats("sort", fmt_dir)
    as_txt = tmp_path / "stablehlo.txt"
    as_txt.write_bytes(paths["mlir"].read_bytes())
    as_pb = tmp_path / "really_text.pb"
    as_pb.write_text(HLO)
    assert hloscope.load(as_txt).entry is not None
    assert hloscope.load(as_pb).name == "m"


def test_detect_text_forms() -> None:
    assert detect_format(HLO.encode()).format is Format.HLO_TEXT
    assert detect_format(b"// comment\n\nHloModule x\n").format is Format.HLO_TEXT
    assert detect_format(b"#loc1 = loc(\"x\")\nmodule @jit_f {\n").format is Format.MLIR_TEXT
    assert detect_format(b"func.func @main() {\n  return\n}\n").format is Format.MLIR_TEXT
    assert detect_format(b"ML\xefR\x00\x01").format is Format.MLIR_BYTECODE
    assert detect_format(b'name: "m"\nentry_computation_name: "e"\n').format is Format.HLO_MODULE_PROTO_TEXT
    assert detect_format(b"hlo_module {\n  name: \"m\"\n}\n").format is Format.HLO_MODULE_PROTO_TEXT


def test_unwrap_depths() -> None:
    module = _wrap(1, b"m") + _wrap(2, b"main") + _wrap(3, _wrap(1, b"main"))
    assert unwrap_hlo_module_proto(module) == (module, 0)
    assert unwrap_hlo_module_proto(_wrap(1, module) + _wrap(3, b"\x08\x01")) == (module, 1)
    assert unwrap_hlo_module_proto(_wrap(1, _wrap(1, module))) == (module, 2)
    assert unwrap_hlo_module_proto(b"\x0a\xff\xff") is None  # truncated
    assert unwrap_hlo_module_proto(_wrap(1, b"\x08\x01")) is None


def test_garbage_binary_is_one_clear_line(tmp_path: Path) -> None:
    p = tmp_path / "x.bin"
    p.write_bytes(b"\x00\x01\x02garbage\xff")
    with pytest.raises(InputError) as e:
        hloscope.load(p)
    assert "\n" not in str(e.value) and "HloModuleProto" in str(e.value)


def test_pbtxt_needs_protobuf_descriptors(tmp_path: Path) -> None:
    p = tmp_path / "m.pbtxt"
    p.write_text('name: "m"\nentry_computation_name: "main"\n')
    with pytest.raises(MissingDependencyError) as e:
        hloscope.load(p)
    msg = str(e.value)
    assert "\n" not in msg and "pbtxt" in msg and "protobuf" in msg


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "e.hlo"
    p.write_text("\n")
    with pytest.raises(InputError, match="empty"):
        hloscope.load(p)


def test_bad_mlir_is_one_clear_line(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    p = tmp_path / "bad.mlir"
    p.write_text("module @m {\n  func.func @main() -> tensor<f32> {\n    %0 = stablehlo.nonsense\n  }\n}\n")
    with pytest.raises(InputError) as e:
        hloscope.load(p)
    assert "\n" not in str(e.value) and str(p) in str(e.value)


# --- without jax --------------------------------------------------------------------------------


@pytest.fixture
def no_jax(monkeypatch):
    """Make the jaxlib probe fail as it does when jax is not installed."""
    from hloscope import xla

    def missing():
        raise MissingDependencyError("the XLA bridge needs jax and jaxlib (No module named 'jax'); "
                                     "pip install 'hloscope[jax]'")

    monkeypatch.setattr(xla, "_api", missing)


@pytest.mark.parametrize("kind", ["pb", "snapshot", "mlir", "bytecode"])
def test_without_jax_each_format_fails_with_one_line(kind, no_jax, tmp_path: Path) -> None:
    module = _wrap(1, b"m") + _wrap(2, b"main") + _wrap(3, _wrap(1, b"main"))
    data = {"pb": module, "snapshot": _wrap(1, _wrap(1, module)),
            "mlir": b"module @m {\n  func.func @main() {\n    return\n  }\n}\n",
            "bytecode": b"ML\xefR\x00\x05"}[kind]
    with pytest.raises(MissingDependencyError) as e:
        load_bytes(data, f"x.{kind}")
    assert "\n" not in str(e.value) and "pip install 'hloscope[jax]'" in str(e.value)
    # And through the CLI: one line on stderr, exit code 1, no traceback.
    from hloscope.cli import main

    p = tmp_path / f"x.{kind}"
    p.write_bytes(data)
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["summary", str(p)])
    assert code == 1
    assert err.getvalue().count("\n") == 1 and "hloscope[jax]" in err.getvalue()


def test_hlo_text_never_imports_jax(tmp_path: Path) -> None:
    p = tmp_path / "m.hlo"
    p.write_text(HLO)
    code = textwrap.dedent(f"""
        import sys
        import hloscope
        m = hloscope.load({str(p)!r})
        assert m.name == "m"
        bad = sorted(k for k in sys.modules if k.split(".")[0] in ("jax", "jaxlib"))
        assert not bad, bad
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr


def test_errors_are_hloscope_errors() -> None:
    assert issubclass(MissingDependencyError, HloscopeError)
