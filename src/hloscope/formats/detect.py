"""What a module file is, judged by its content (``hloscope.xla.convert`` turns it into HLO text).

hloscope's own stages read only HLO text. Users also hold StableHLO/MHLO (MLIR text or bytecode,
what ``jax.jit(f).lower(...).as_text()`` and ``jax.export`` give), ``HloModuleProto`` binaries
(``lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()``), and the wrappers XLA's dumps
write (``--xla_dump_hlo_as_proto`` writes an ``HloProto``; ``--xla_dump_hlo_snapshots`` an
``HloSnapshot``). ``detect_format`` names the format from the bytes (magic number, leading
text, protobuf structure), never only from the suffix.

Note [Proto wrappers]
    XLA's protos nest: ``HloSnapshot.hlo`` (field 1) is an ``HloProto``, whose ``hlo_module``
    (field 1) is the ``HloModuleProto`` (``HloUnoptimizedSnapshot.hlo_module`` is field 1 too).
    An ``HloModuleProto``'s own field 1 is its ``name``, a short printable string, and it holds
    computations (field 3). So we read the wire format ourselves (no protobuf dependency) and
    peel field 1 until we reach a message whose field 1 is a name and which has computations.
    The depth names the wrapper: 0 module, 1 HloProto, 2 HloSnapshot.

"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from hloscope.errors import InputError

__all__ = [
    "Format",
    "DetectedFormat",
    "detect_format",
    "PBTXT_TYPES",
    "leading_text",
    "unwrap_hlo_module_proto",
]

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
PBTXT_TYPES = ("HloModuleProto", "HloProto", "HloSnapshot", "HloUnoptimizedSnapshot")


def leading_text(text: str, comment: str = "//") -> str:
    """``text`` from its first line that is neither blank nor a ``comment`` line."""
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
    lead = leading_text(text)
    if lead.startswith("HloModule"):
        return DetectedFormat(Format.HLO_TEXT, "starts with 'HloModule'")
    if _MLIR_START.match(lead) or _MLIR_OP.search(_code_lines(text)):
        return DetectedFormat(Format.MLIR_TEXT, "MLIR text (module/func.func, stablehlo./mhlo. ops)")
    if _is_pbtxt(text):
        return DetectedFormat(Format.HLO_MODULE_PROTO_TEXT, "protobuf text format fields")
    # Anything else goes to the HLO parser, whose error points at the first bad token.
    return DetectedFormat(Format.HLO_TEXT, "text that is not MLIR or protobuf text")


# An MLIR operation statement: ``%0 = stablehlo.add %a, %b``, ``%1:2 = "mhlo.while"(...)`` or
# ``stablehlo.return %x``. Dialect names elsewhere are not ops: HLO text names them in attributes
# (``frontend_attributes={mhlo.sharding=...}``, ``custom_call_target="mhlo.x"``) and in comments
# (FileCheck lines of XLA's tests), so a mere substring says nothing about the format.
_MLIR_OP = re.compile(r'(?m)^[ \t]*(?:%[^=\n]*?[ \t]=[ \t]*)?"?(?:stablehlo|mhlo|chlo)\.[a-z_.]+"?[ \t(]')


def _code_lines(text: str) -> str:
    """``text`` without its ``//`` comment lines (both HLO text and MLIR comment that way)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def _is_pbtxt(text: str) -> bool:
    """True when ``text`` opens (after ``#`` comments) with ``field:`` or ``field {`` for a field
    of HloModuleProto or a wrapper; HLO text opens with ``HloModule`` or an instruction such as
    ``p = f32[] parameter(0)``, neither of which matches."""
    from hloscope.formats.proto_schema import top_level_field_names

    m = _PBTXT_FIELD.match(leading_text(text, comment="#"))
    return m is not None and any(m.group(1) in top_level_field_names(t) for t in PBTXT_TYPES)
