"""What a module file is, judged by its content, and how a non-HLO-text file becomes HLO text.

hloscope's own stages read only HLO text. Users also hold StableHLO/MHLO (MLIR text or bytecode,
what ``jax.jit(f).lower(...).as_text()`` and ``jax.export`` give), ``HloModuleProto`` binaries
(``lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()``), and the wrappers XLA's dumps
write (``--xla_dump_hlo_as_proto`` writes an ``HloProto``; ``--xla_dump_hlo_snapshots`` an
``HloSnapshot``). ``detect_format`` names the format from the bytes (magic number, leading
text, protobuf structure), never only from the suffix; ``convert_to_hlo_text`` turns any of them
into HLO text through jaxlib, which is imported only here and only for non-text formats.

Note [Proto wrappers]
    XLA's protos nest: ``HloSnapshot.hlo`` (field 1) is an ``HloProto``, whose ``hlo_module``
    (field 1) is the ``HloModuleProto`` (``HloUnoptimizedSnapshot.hlo_module`` is field 1 too).
    An ``HloModuleProto``'s own field 1 is its ``name``, a short printable string, and it holds
    computations (field 3). So we read the wire format ourselves (no protobuf dependency) and
    peel field 1 until we reach a message whose field 1 is a name and which has computations.
    The depth names the wrapper: 0 module, 1 HloProto, 2 HloSnapshot.

Note [Module config lost in protos]
    ``num_partitions``, ``replica_count`` and ``allow_spmd_sharding_propagation_*`` live in
    XLA's ``HloModuleConfig``, not in ``HloModuleProto``, so a module read from any proto has
    the defaults (1 partition, 1 replica). MLIR keeps the first two as ``mhlo.num_partitions``
    and ``mhlo.num_replicas`` module attributes; we read them and restore them in the header.

Note [Full text from protos]
    ``HloModule.to_string()`` with default options elides constants of more than a few elements
    as ``{...}``, which no parser can read back. ``print_large_constants`` keeps them whole.

Note [Text protos]
    ``.pbtxt`` files are what ``DebugString()``/``text_format`` print for an HloModuleProto or a
    wrapper (``hlo_module { name: ... }`` for HloProto, ``hlo { hlo_module { ... } }`` for
    HloSnapshot). Text format names fields, so we need descriptors; jaxlib ships none, so
    ``hloscope.hlo_proto_schema`` builds them from a table and ``protobuf`` (in the ``jax``
    extra) parses. The first field name (after ``#`` comments) tells which message it is; a
    name two messages share (``hlo_module``) tries them innermost first. The parsed module is
    serialized and takes the binary path. ``text_format`` is pure Python, so a 100 MB pbtxt
    takes minutes; prefer ``--xla_dump_hlo_as_proto`` or HLO text for big modules.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from hloscope.errors import InputError, MissingDependencyError

__all__ = [
    "Format",
    "DetectedFormat",
    "detect_format",
    "convert_to_hlo_text",
    "unwrap_hlo_module_proto",
]

_INSTALL_HINT = "pip install 'hloscope[jax]'"
MLIR_BYTECODE_MAGIC = b"ML\xefR"


class Format(enum.Enum):
    """The module formats ``hloscope.load`` reads; ``.value`` is a short name for messages."""

    HLO_TEXT = "HLO text"
    MLIR_TEXT = "StableHLO/MHLO MLIR text"
    MLIR_BYTECODE = "MLIR bytecode"
    HLO_MODULE_PROTO = "HloModuleProto (binary)"
    HLO_PROTO = "HloProto (binary)"
    HLO_SNAPSHOT = "HloSnapshot (binary)"
    HLO_MODULE_PROTO_TEXT = "HloModuleProto text format (pbtxt)"

    @property
    def needs_jax(self) -> bool:
        """True for every format except HLO text: reading it goes through jaxlib."""
        return self is not Format.HLO_TEXT


@dataclass(frozen=True)
class DetectedFormat:
    """The format of some bytes and why we think so (``reason`` is for messages)."""

    format: Format
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"format": self.format.value, "reason": self.reason}


# --------------------------------------------------------------------------------------------
# A tiny protobuf wire-format reader (Note [Proto wrappers])

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]] | None:
    """Top-level ``(field number, wire type, value)`` of a message; None if not valid wire format.

    Length-delimited values are returned as ``memoryview`` slices so peeling a 100 MB snapshot
    copies nothing.
    """
    out: list[tuple[int, int, Any]] = []
    view = memoryview(buf)
    pos, n = 0, len(buf)
    try:
        while pos < n:
            key, pos = _varint(buf, pos)
            field, wire = key >> 3, key & 7
            if field == 0:
                return None
            if wire == _VARINT:
                value, pos = _varint(buf, pos)
            elif wire == _I64:
                value, pos = view[pos:pos + 8], pos + 8
            elif wire == _I32:
                value, pos = view[pos:pos + 4], pos + 4
            elif wire == _LEN:
                length, pos = _varint(buf, pos)
                value, pos = view[pos:pos + length], pos + length
            else:  # groups (3, 4) are not used by XLA's protos
                return None
            if pos > n:
                return None
            out.append((field, wire, value))
    except ValueError:
        return None
    return out


_NAME = re.compile(rb"[\x20-\x7e]{1,1024}")


def _is_module(fields: list[tuple[int, int, Any]]) -> bool:
    """True when ``fields`` look like an HloModuleProto: a printable name and computations."""
    names = [v for f, w, v in fields if f == 1 and w == _LEN]
    has_computations = any(f == 3 and w == _LEN for f, w, _ in fields)
    return len(names) == 1 and _NAME.fullmatch(bytes(names[0])) is not None and has_computations


def unwrap_hlo_module_proto(data: bytes) -> tuple[bytes, int] | None:
    """The serialized HloModuleProto inside ``data`` and its wrapping depth, or None.

    Depth 0: ``data`` is the module; 1: an HloProto (or HloUnoptimizedSnapshot); 2: an
    HloSnapshot. See Note [Proto wrappers].
    """
    buf = bytes(data)
    for depth in range(3):
        fields = _fields(buf)
        if not fields:
            return None
        if _is_module(fields):
            return buf, depth
        inner = [v for f, w, v in fields if f == 1 and w == _LEN]
        if len(inner) != 1:
            return None
        buf = bytes(inner[0])
    return None


# --------------------------------------------------------------------------------------------
# Detection

# Bytes that never occur in any text format we read (tab, LF, CR are fine); protobuf tags of
# fields 2-3 (0x12, 0x1a) are among them, so every binary HloModuleProto trips this.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_MLIR_START = re.compile(r"(module\b|func\.func\b|builtin\.module\b|#loc|\"builtin\.module\")")
_PBTXT_FIELD = re.compile(r"([a-z_][a-z0-9_]*)\s*(?::|\{|<)")
# The messages a text proto may hold, innermost first (Note [Text protos]).
_PBTXT_TYPES = ("HloModuleProto", "HloProto", "HloSnapshot", "HloUnoptimizedSnapshot")


def _leading_text(text: str, comment: str = "//") -> str:
    """``text`` from its first line that is not blank, a ``#!`` line or a ``comment`` line."""
    for m in re.finditer(r"[^\n]*\n?", text):
        stripped = m.group(0).strip()
        if stripped and not stripped.startswith(comment) and not stripped.startswith("#!"):
            return text[m.start():].lstrip()
    return ""


def detect_format(data: bytes, name: str = "<bytes>") -> DetectedFormat:
    """Name the format of a module file's bytes from its content (the name is only for messages).

    Raises ``InputError`` for binary data that is none of the formats in ``Format``.
    """
    head = bytes(data[:4096])
    if head.startswith(MLIR_BYTECODE_MAGIC):
        return DetectedFormat(Format.MLIR_BYTECODE, "starts with the MLIR bytecode magic ML\\xefR")
    if _CONTROL.search(head) is None:
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError as e:
            # A multi-byte character cut at 4096 bytes is still text.
            text = head[: e.start].decode("utf-8") if e.start > len(head) - 4 else None
        if text is not None:
            return _detect_text(text.lstrip("\ufeff"))
    found = unwrap_hlo_module_proto(data)
    if found is None:
        raise InputError(
            f"{name}: binary data that is neither MLIR bytecode nor an HloModuleProto, HloProto "
            "or HloSnapshot; hloscope reads HLO text, StableHLO (MLIR text or bytecode) and "
            "those protos"
        )
    depth = found[1]
    kind = (Format.HLO_MODULE_PROTO, Format.HLO_PROTO, Format.HLO_SNAPSHOT)[depth]
    return DetectedFormat(kind, "protobuf wire format" + ("" if depth == 0 else
                                                          f" wrapping an HloModuleProto {depth} deep"))


def _detect_text(text: str) -> DetectedFormat:
    lead = _leading_text(text)
    if lead.startswith("HloModule"):
        return DetectedFormat(Format.HLO_TEXT, "starts with 'HloModule'")
    if _MLIR_START.match(lead) or "stablehlo." in text or "mhlo." in text:
        return DetectedFormat(Format.MLIR_TEXT, "MLIR text (module/func.func, stablehlo./mhlo. ops)")
    if _is_pbtxt(text):
        return DetectedFormat(Format.HLO_MODULE_PROTO_TEXT, "protobuf text format fields")
    # Anything else goes to the HLO parser, whose error points at the first bad token.
    return DetectedFormat(Format.HLO_TEXT, "text that is not MLIR or protobuf text")


def _is_pbtxt(text: str) -> bool:
    """True when ``text`` opens (after ``#`` comments) with ``field:`` or ``field {`` for a field
    of HloModuleProto or a wrapper; HLO text opens with ``HloModule`` or an instruction such as
    ``p = f32[] parameter(0)``, neither of which matches."""
    from hloscope.hlo_proto_schema import top_level_field_names

    m = _PBTXT_FIELD.match(_leading_text(text, comment="#"))
    return m is not None and any(m.group(1) in top_level_field_names(t) for t in _PBTXT_TYPES)


# --------------------------------------------------------------------------------------------
# Conversion through jaxlib


def _jaxlib() -> Any:
    """jaxlib's MLIR converter and HloModule class; one clear line when jax is missing."""
    from hloscope import xla

    api = xla._api()  # raises MissingDependencyError naming the extra
    try:
        from jax._src.lib import _jax, xla_client

        return _jax.mlir.mlir_module_to_xla_computation, xla_client.hlo.HloModule, api.HloPrintOptions
    except (ImportError, AttributeError) as e:
        raise MissingDependencyError(
            f"this jaxlib has no MLIR-to-HLO converter ({e}); {_INSTALL_HINT} installs the tested version"
        ) from None


def _module_text(hlo_module: Any, print_options_cls: Any) -> str:
    opts = print_options_cls()
    opts.print_large_constants = True  # Note [Full text from protos]
    return hlo_module.to_string(opts)


def _first_line(e: Exception) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def convert_to_hlo_text(data: bytes, fmt: Format, name: str = "<bytes>") -> str:
    """HLO text of a module held in ``data`` of format ``fmt`` (any ``Format`` but HLO text).

    MLIR goes MLIR -> XlaComputation -> HloModuleProto -> HloModule; protos are unwrapped to the
    HloModuleProto (Note [Proto wrappers]); text is printed with constants in full (Note [Full
    text from protos]). Raises ``MissingDependencyError`` without jax, ``InputError`` when jaxlib
    rejects the content.
    """
    if fmt is Format.HLO_TEXT:
        return bytes(data).decode("utf-8")
    if fmt is Format.HLO_MODULE_PROTO_TEXT:
        return _pbtxt_to_hlo_text(bytes(data), name)
    to_computation, hlo_module_cls, print_options_cls = _jaxlib()
    if fmt in (Format.MLIR_TEXT, Format.MLIR_BYTECODE):
        payload: bytes | str = bytes(data) if fmt is Format.MLIR_BYTECODE else bytes(data).decode("utf-8")
        try:
            # One HLO result per function result, as jax itself converts (a tuple root only
            # when the function returns several values).
            computation = to_computation(payload, use_tuple_args=False, return_tuple=False)
        except Exception as e:  # jaxlib raises its own runtime errors
            raise InputError(f"{name}: jaxlib could not convert this {fmt.value}: {_first_line(e)}") from None
        proto = computation.as_serialized_hlo_module_proto()
        config = _mlir_module_config(payload)
    else:
        config = {}
        found = unwrap_hlo_module_proto(data)
        if found is None:
            raise InputError(f"{name}: not a valid {fmt.value}")
        proto = found[0]
    try:
        module = hlo_module_cls.from_serialized_hlo_module_proto(proto)
    except Exception as e:
        raise InputError(f"{name}: jaxlib could not read the HloModuleProto: {_first_line(e)}") from None
    return _with_config(_module_text(module, print_options_cls), config)


_MLIR_CONFIG = re.compile(r"mhlo\.(num_partitions|num_replicas)\s*=\s*(\d+)")


def _mlir_module_config(payload: bytes | str) -> dict[str, int]:
    """``{"replica_count": r, "num_partitions": p}`` from an MLIR module's attributes (Note
    [Module config lost in protos]); entries equal to 1 are left out."""
    if isinstance(payload, bytes):
        try:
            from jax._src.interpreters import mlir as jax_mlir
            from jax._src.lib.mlir import ir

            with jax_mlir.make_ir_context():
                attrs = ir.Module.parse(payload).operation.attributes
                found = {k: str(attrs[f"mhlo.{k}"]) for k in ("num_partitions", "num_replicas")
                         if f"mhlo.{k}" in attrs}
            text = " ".join(f"mhlo.{k} = {v.split(':')[0].strip()}" for k, v in found.items())
        except Exception:  # the attributes are a nicety; the module itself converted fine
            return {}
    else:
        head, _, _ = payload.partition("func.func")
        text = head
    config = {}
    for key, value in _MLIR_CONFIG.findall(text):
        n = int(value)
        if n > 1:
            config["replica_count" if key == "num_replicas" else "num_partitions"] = n
    return config


def _with_config(text: str, config: dict[str, int]) -> str:
    """``text`` with ``replica_count``/``num_partitions`` added to its header where XLA puts
    them (before ``frontend_attributes``)."""
    if not config:
        return text
    header, nl, rest = text.partition("\n")
    extra = "".join(f", {k}={config[k]}" for k in ("replica_count", "num_partitions") if k in config)
    at = header.find(", frontend_attributes=")
    header = header + extra if at < 0 else header[:at] + extra + header[at:]
    return header + nl + rest


def _pbtxt_message_types(text: str) -> tuple[str, ...]:
    """The messages a text-format proto may be, judged from its first field name (Note [Text
    protos])."""
    from hloscope.hlo_proto_schema import top_level_field_names

    m = _PBTXT_FIELD.match(_leading_text(text, comment="#"))
    first = m.group(1) if m else ""
    return tuple(t for t in _PBTXT_TYPES if first in top_level_field_names(t)) or ("HloModuleProto",)


def _pbtxt_to_hlo_text(data: bytes, name: str) -> str:
    """Text-format HloModuleProto/HloProto/HloSnapshot -> binary HloModuleProto -> HLO text.

    protobuf's ``text_format`` parses into classes built from ``hloscope.hlo_proto_schema``
    (Note [Text protos]); the binary then takes the same jaxlib path as a ``.pb``.
    """
    from hloscope import hlo_proto_schema

    try:
        from google.protobuf import text_format
    except ImportError:
        raise MissingDependencyError(
            f"{name}: reading HloModuleProto text format (pbtxt) needs the 'protobuf' package; "
            f"{_INSTALL_HINT} installs it"
        ) from None
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 text (byte {e.start})") from None
    first_error = None
    for type_name in _pbtxt_message_types(text):
        message = hlo_proto_schema.message_class(type_name)()
        try:
            text_format.Parse(text, message)
        except text_format.ParseError as e:
            first_error = first_error or (type_name, e)
            continue
        module = message
        while module.DESCRIPTOR.name != "HloModuleProto":  # Note [Proto wrappers]
            module = getattr(module, "hlo" if module.DESCRIPTOR.name == "HloSnapshot" else "hlo_module")
        return convert_to_hlo_text(module.SerializeToString(), Format.HLO_MODULE_PROTO, name)
    assert first_error is not None
    type_name, e = first_error
    line, column = e.GetLine(), e.GetColumn()
    where = f"{name}:{line}:{column}" if line else name
    reason = re.sub(r"^\d+:\d+ : ", "", _first_line(e)).rstrip(".")
    hint = (" (a field from a newer XLA? hloscope's schema follows jaxlib 0.10.2)"
            if "has no field named" in reason else "")
    raise InputError(f"{where}: not a valid {type_name} text: {reason}{hint}") from None
