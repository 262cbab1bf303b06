"""Module files that are not HLO text (StableHLO/MHLO, HloModuleProto and its wrappers, text
protos) turned into HLO text through jaxlib (imported only here, and only for those formats).

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
    ``hloscope.formats.proto_schema`` builds them from a table and ``protobuf`` (in the ``jax``
    extra) parses. The first field name (after ``#`` comments) tells which message it is; a
    name two messages share (``hlo_module``) tries them innermost first. The parsed module is
    serialized and takes the binary path. ``text_format`` is pure Python, so a 100 MB pbtxt
    takes minutes; prefer ``--xla_dump_hlo_as_proto`` or HLO text for big modules.
"""
from __future__ import annotations

import re
from typing import Any

from hloscope.errors import InputError, MissingDependencyError
from hloscope.formats import proto_schema as hlo_proto_schema
from hloscope.formats.detect import PBTXT_TYPES, Format, leading_text, unwrap_hlo_module_proto
from hloscope.formats.proto_schema import top_level_field_names
from hloscope.xla import client as xla

__all__ = ["convert_to_hlo_text"]

_INSTALL_HINT = "pip install 'hloscope[jax]'"
_PBTXT_FIELD = re.compile(r"([a-z_][a-z0-9_]*)\s*(?::|\{|<)")


def _jaxlib() -> Any:
    """jaxlib's MLIR converter and HloModule class; one clear line when jax is missing."""
    api = xla.jaxlib_api()  # raises MissingDependencyError naming the extra; probes each name
    return api.mlir_module_to_xla_computation, api.HloModule, api.HloPrintOptions


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
    m = _PBTXT_FIELD.match(leading_text(text, comment="#"))
    first = m.group(1) if m else ""
    return tuple(t for t in PBTXT_TYPES if first in top_level_field_names(t)) or ("HloModuleProto",)


def _pbtxt_to_hlo_text(data: bytes, name: str) -> str:
    """Text-format HloModuleProto/HloProto/HloSnapshot -> binary HloModuleProto -> HLO text.

    protobuf's ``text_format`` parses into classes built from ``hloscope.formats.proto_schema``
    (Note [Text protos]); the binary then takes the same jaxlib path as a ``.pb``.
    """
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
