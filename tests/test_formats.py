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
from hloscope.formats.detect import Format, detect_format, unwrap_hlo_module_proto
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

def _lapack(a, b):
    """eigh and solve: LAPACK custom calls (syevd, getrf) on CPU."""
    import jax.numpy as jnp

    return jnp.linalg.eigh(a @ a.T)[0], jnp.linalg.solve(a, b)


def _lapack_args():
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)


# Programs only this file uses, next to tests.test_from_jax.PROGRAMS.
_LOCAL_PROGRAMS = {"lapack": (_lapack, _lapack_args, dict)}

PROGRAM_NAMES = ["mlp_step", "transformer_block", "scan", "conv", "sort", "while",
                 "gather_scatter", "cond", "sharded_matmul", "shard_map_psum"]


@functools.cache
def _formats(name: str, tmp: str) -> dict[str, Path]:
    jax = pytest.importorskip("jax")
    from jax._src.interpreters import mlir as jax_mlir

    from tests.test_from_jax import PROGRAMS

    f, make_args, make_kwargs = {**PROGRAMS, **_LOCAL_PROGRAMS}[name]
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
    jax = pytest.importorskip("jax")
    if tuple(int(x) for x in jax.__version__.split(".")[:2]) < (0, 10):
        pytest.skip("jax before 0.10 gives HLO text the same generic names as MLIR without locations")
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


def test_pbtxt_without_protobuf_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "google.protobuf", None)  # import fails as if absent
    p = tmp_path / "m.pbtxt"
    p.write_text('name: "m"\nentry_computation_name: "main"\n')
    with pytest.raises(MissingDependencyError) as e:
        hloscope.load(p)
    msg = str(e.value)
    assert "\n" not in msg and "pbtxt" in msg and "protobuf" in msg
    assert "pip install 'hloscope[jax]'" in msg


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
    from hloscope.xla import client as xla

    def missing():
        raise MissingDependencyError("the XLA bridge needs jax and jaxlib (No module named 'jax'); "
                                     "pip install 'hloscope[jax]'")

    monkeypatch.setattr(xla, "jaxlib_api", missing)


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
    from hloscope.cli.main import main

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


# --- text-format protos (pbtxt) and the schema behind them --------------------------------------
#
# hloscope.formats.proto_schema describes XLA's protos as a table (Note [Schema version]). Three checks
# hold it to XLA: every field in XLA's own serialized modules is known (no unknown fields anywhere
# in the tree), re-serializing gives XLA's bytes back (so no field has a wrong type; map entries,
# whose order neither side fixes, are sorted first), and the table equals the descriptor compiled
# into jaxlib, which also covers fields these programs never set.

PBTXT_PROGRAMS = ["mlp_step", "conv", "scan", "while", "sort", "gather_scatter", "sharded_matmul",
                  "shard_map_psum", "lapack"]
# File kind in _formats -> the message XLA wrote there.
_XLA_PROTOS = {"pb": "HloModuleProto", "dump_before_optimizations.pb": "HloProto",
               "dump_cpu_after_optimizations.pb": "HloProto"}


def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _children(field, value) -> list:
    """The sub-messages a ``ListFields()`` entry holds."""
    if field.message_type is None:
        return []
    if field.message_type.GetOptions().map_entry:
        return list(value.values()) if field.message_type.fields_by_name["value"].message_type else []
    # protobuf 7 dropped FieldDescriptor.label for is_repeated.
    repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
    return list(value) if repeated else [value]


def _unknown_fields(msg, path: str) -> list[str]:
    """``path.field[i]: field N`` for every field number the schema does not know, at any depth."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    found = [f"{path}: field {f.field_number}" for f in UnknownFieldSet(msg)]
    for field, value in msg.ListFields():
        for i, child in enumerate(_children(field, value)):
            found += _unknown_fields(child, f"{path}.{field.name}[{i}]")
    return found


def _sorted_maps(data: bytes, descriptor) -> bytes:
    """``data``, a serialized ``descriptor`` message, with each map's entries sorted and moved
    after the other fields; everything else byte for byte as written."""
    from hloscope.formats.detect import _fields

    fields = _fields(bytes(data))
    assert fields is not None or not data, descriptor.full_name
    rest, maps = [], {}
    for number, wire, value in fields or []:
        field = descriptor.fields_by_number.get(number)
        message = field.message_type if field is not None else None
        if wire == 0:
            payload = _varint_bytes(value)
        elif wire == 2 and message is not None:
            inner = _sorted_maps(bytes(value), message)
            payload = _varint_bytes(len(inner)) + inner
        elif wire == 2:
            payload = _varint_bytes(len(value)) + bytes(value)
        else:
            payload = bytes(value)
        chunk = _varint_bytes(number << 3 | wire) + payload
        if message is not None and message.GetOptions().map_entry:
            maps.setdefault(number, []).append(chunk)
        else:
            rest.append(chunk)
    return b"".join(rest) + b"".join(b"".join(sorted(c)) for _, c in sorted(maps.items()))


@pytest.mark.parametrize("name", PBTXT_PROGRAMS)
def test_schema_reads_xla_protos_and_pbtxt_loads(name: str, fmt_dir: str) -> None:
    pytest.importorskip("google.protobuf")
    from google.protobuf import text_format

    from hloscope.formats.proto_schema import message_class

    paths = _formats(name, fmt_dir)
    for kind, type_name in _XLA_PROTOS.items():
        data = paths[kind].read_bytes()
        msg = message_class(type_name).FromString(data)
        assert _unknown_fields(msg, type_name) == [], kind
        ours = msg.SerializeToString(deterministic=True)
        assert _sorted_maps(ours, msg.DESCRIPTOR) == _sorted_maps(data, msg.DESCRIPTOR), kind
        pbtxt = paths[kind].with_suffix(".pbtxt")
        pbtxt.write_text(text_format.MessageToString(msg))
        assert detect_format(pbtxt.read_bytes()).format is Format.HLO_MODULE_PROTO_TEXT
        from_pb, from_pbtxt = hloscope.load(paths[kind]), hloscope.load(pbtxt)
        assert first_difference(from_pb, from_pbtxt) is None, kind
        assert _first_key_difference(from_pb, from_pbtxt, names=True) is None, kind
    if name == "lapack":
        targets = {i.attrs.get("custom_call_target") for c in from_pb.computations for i in c.instructions}
        assert any("lapack" in str(t) for t in targets), targets
    if name == "sharded_matmul":
        entry = message_class("HloModuleProto").FromString(paths["pb"].read_bytes())
        assert any(i.HasField("sharding") for c in entry.computations for i in c.instructions)


def test_pbtxt_wrappers_and_comments(tmp_path: Path, fmt_dir: str) -> None:
    pytest.importorskip("google.protobuf")
    from google.protobuf import text_format

    from hloscope.formats.proto_schema import message_class

    paths = _formats("while", fmt_dir)
    module = message_class("HloModuleProto").FromString(paths["pb"].read_bytes())
    snapshot = message_class("HloSnapshot")(execution_platform="Host")
    snapshot.hlo.hlo_module.CopyFrom(module)
    unoptimized = message_class("HloUnoptimizedSnapshot")(version=1)
    unoptimized.hlo_module.CopyFrom(module)
    ref = hloscope.load(paths["pb"])
    for kind, msg in (("snapshot", snapshot), ("hlo_proto", snapshot.hlo), ("unoptimized", unoptimized)):
        p = tmp_path / f"{kind}.pbtxt"
        p.write_text(f"# {kind} written by text_format\n\n" + text_format.MessageToString(msg))
        assert detect_format(p.read_bytes()).format is Format.HLO_MODULE_PROTO_TEXT, kind
        assert first_difference(ref, hloscope.load(p)) is None, kind


def test_bad_pbtxt_is_one_line_with_position(tmp_path: Path) -> None:
    pytest.importorskip("google.protobuf")
    p = tmp_path / "bad.pbtxt"
    p.write_text('name: "m"\ncomputations {\n  instructions { opcodez: "add" }\n}\n')
    with pytest.raises(InputError) as e:
        hloscope.load(p)
    msg = str(e.value)
    assert "\n" not in msg and f"{p}:3:" in msg and "opcodez" in msg and "HloModuleProto" in msg


def test_pbtxt_detection_does_not_take_hlo_text() -> None:
    for text in (HLO, "// c\nHloModule m\n", "ENTRY main {\n  ROOT p = f32[] parameter(0)\n}\n",
                 "p = f32[] parameter(0)\n", "foo: 1\n"):
        assert detect_format(text.encode()).format is Format.HLO_TEXT, text
    for text in ('# c\nname: "m"\n', "hlo {\n  hlo_module {\n", "computations {\n", 'name:"m"'):
        assert detect_format(text.encode()).format is Format.HLO_MODULE_PROTO_TEXT, text


def test_schema_builds_every_message() -> None:
    pytest.importorskip("google.protobuf")
    from hloscope.formats.proto_schema import ENUMS, MESSAGES, message_class

    for name, rows in MESSAGES.items():
        descriptor = message_class(name).DESCRIPTOR
        assert [f.number for f in descriptor.fields] == [row[1] for row in rows], name
        assert len({row[1] for row in rows}) == len(rows), name
    for name, values in ENUMS.items():
        assert 0 in values.values(), name  # proto3 enums start at zero


def _jaxlib_file_descriptors() -> dict[str, object]:
    """XLA's ``hlo.proto`` and ``xla_data.proto`` descriptors as compiled into jaxlib (C++ protobuf
    embeds each file's serialized FileDescriptorProto); empty when they cannot be found."""
    import mmap

    import jaxlib
    from google.protobuf import descriptor_pb2

    from hloscope.formats.detect import _varint

    found = {}
    for lib in sorted(Path(jaxlib.__file__).parent.glob("*.so")):
        with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for file_name in (b"xla/service/hlo.proto", b"xla/xla_data.proto"):
                start = data.find(b"\n" + bytes([len(file_name)]) + file_name + b"\x12\x03xla")
                if start < 0 or file_name.decode() in found:
                    continue
                pos = start  # the blob's length is not stored: walk fields until one is not valid
                while True:
                    key, after = _varint(data, pos)
                    if not 1 <= key >> 3 <= 14 or key & 7 not in (0, 2):
                        break
                    value, after = _varint(data, after)
                    pos = after + (value if key & 7 == 2 else 0)
                found[file_name.decode()] = descriptor_pb2.FileDescriptorProto.FromString(data[start:pos])
    return found


def test_schema_equals_jaxlib_descriptor() -> None:
    pytest.importorskip("google.protobuf")
    pytest.importorskip("jaxlib")
    from hloscope.formats.proto_schema import file_descriptor

    theirs = _jaxlib_file_descriptors()
    if len(theirs) != 2:
        pytest.skip("jaxlib's embedded hlo.proto/xla_data.proto descriptors not found")

    def index(files) -> dict[str, object]:
        out = {}

        def add(prefix, m):
            out[prefix + m.name] = m
            for e in m.enum_type:
                out[prefix + m.name + "." + e.name] = e
            for n in m.nested_type:
                add(prefix + m.name + ".", n)
        for fd in files:
            for m in fd.message_type:
                add(".xla.", m)
            for e in fd.enum_type:
                out[".xla." + e.name] = e
        return out

    def reachable(types, roots) -> dict[str, tuple]:
        seen: dict[str, tuple] = {}
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            t = types[name]
            if hasattr(t, "value"):  # an enum
                seen[name] = tuple((v.name, v.number) for v in t.value)
                continue
            seen[name] = (t.options.map_entry, tuple(
                (f.name, f.number, f.type, f.type_name, f.label, f.proto3_optional,
                 t.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None)
                for f in t.field))
            todo += [f.type_name for f in t.field if f.type_name]
        return seen

    roots = (".xla.HloSnapshot", ".xla.HloUnoptimizedSnapshot")
    ours = reachable(index([file_descriptor()]), roots)
    xla = reachable(index(theirs.values()), roots)
    import jaxlib

    version = tuple(int(x) for x in jaxlib.__version__.split(".")[:3])
    if version == (0, 10, 2):  # the jaxlib the schema was taken from
        assert sorted(set(ours) ^ set(xla)) == []
        assert [n for n in ours if ours[n] != xla[n]] == []
        return
    # Another jaxlib's protos gained and lost messages and fields since; what both have must
    # read the same: a field of one name has one number and type, an enum value one number.
    clashes = []
    for name in set(xla) & set(ours):
        theirs_type, mine = xla[name], ours[name]
        if theirs_type and isinstance(theirs_type[0], bool):  # a message: (map_entry, fields)
            fields = {f[0]: f[1:3] for f in mine[1]}  # number and wire type (enums move)
            clashes += [(name, f[0]) for f in theirs_type[1] if f[0] in fields and fields[f[0]] != f[1:3]]
        else:  # an enum: (name, number) values
            numbers = dict(mine)
            clashes += [(name, v) for v, n in theirs_type if v in numbers and numbers[v] != n]
    assert clashes == [], (version, clashes)


def test_dialect_names_in_hlo_text_do_not_make_it_mlir() -> None:
    # FileCheck comments and attributes name mhlo./stablehlo.; only an MLIR op statement counts.
    hlo = ("// RUN: hlo-opt %s | FileCheck %s\n// CHECK: mhlo.sharding\n// CHECK: stablehlo.add\n"
           "ENTRY e {\n  p = f32[2] parameter(0), frontend_attributes={mhlo.sharding=\"{replicated}\"}\n"
           "  ROOT c = f32[2] custom-call(p), custom_call_target=\"mhlo.foo\"\n}\n")
    assert detect_format(hlo.encode()).format is Format.HLO_TEXT
    assert detect_format(b"%0 = stablehlo.add %a, %b : tensor<2xf32>\n").format is Format.MLIR_TEXT
    assert detect_format(b'// c\n%0:2 = "mhlo.while"(%a) ({\n').format is Format.MLIR_TEXT
    assert detect_format(b"  stablehlo.return %x : tensor<f32>\n").format is Format.MLIR_TEXT
