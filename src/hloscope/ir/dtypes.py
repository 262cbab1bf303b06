"""The primitive-type table: XLA element type names <-> numpy / ml_dtypes dtypes and bit widths."""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import numpy.typing as npt

__all__ = ["PrimitiveType", "PRIMITIVE_TYPES", "primitive_type", "dtype_of", "type_name_of"]


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """One XLA element type.

    ``kind`` is one of ``pred``, ``signed``, ``unsigned``, ``float``, ``complex``, ``token``,
    ``opaque``. ``bits`` is the logical width; ``dtype`` is None for token and opaque.
    """

    name: str
    bits: int
    kind: str
    dtype: np.dtype | None

    @property
    def is_integer(self) -> bool:
        return self.kind in ("signed", "unsigned")

    @property
    def is_floating(self) -> bool:
        return self.kind == "float"

    @property
    def is_array_type(self) -> bool:
        return self.kind not in ("token", "opaque")

    @property
    def byte_size(self) -> int:
        """Bytes XLA allocates per element when unpacked (sub-byte types take a whole byte)."""
        return max(1, (self.bits + 7) // 8) if self.is_array_type else 0


def _t(name: str, bits: int, kind: str, dtype: npt.DTypeLike | None) -> PrimitiveType:
    return PrimitiveType(name, bits, kind, None if dtype is None else np.dtype(dtype))


# Sorted by kind, then width; the names are XLA's LowercasePrimitiveTypeName spellings.
PRIMITIVE_TYPES: dict[str, PrimitiveType] = {
    t.name: t
    for t in (
        _t("pred", 8, "pred", np.bool_),
        _t("s2", 2, "signed", ml_dtypes.int2),
        _t("s4", 4, "signed", ml_dtypes.int4),
        _t("s8", 8, "signed", np.int8),
        _t("s16", 16, "signed", np.int16),
        _t("s32", 32, "signed", np.int32),
        _t("s64", 64, "signed", np.int64),
        _t("u2", 2, "unsigned", ml_dtypes.uint2),
        _t("u4", 4, "unsigned", ml_dtypes.uint4),
        _t("u8", 8, "unsigned", np.uint8),
        _t("u16", 16, "unsigned", np.uint16),
        _t("u32", 32, "unsigned", np.uint32),
        _t("u64", 64, "unsigned", np.uint64),
        _t("f4e2m1fn", 4, "float", ml_dtypes.float4_e2m1fn),
        _t("f8e3m4", 8, "float", ml_dtypes.float8_e3m4),
        _t("f8e4m3", 8, "float", ml_dtypes.float8_e4m3),
        _t("f8e4m3fn", 8, "float", ml_dtypes.float8_e4m3fn),
        _t("f8e4m3fnuz", 8, "float", ml_dtypes.float8_e4m3fnuz),
        _t("f8e4m3b11fnuz", 8, "float", ml_dtypes.float8_e4m3b11fnuz),
        _t("f8e5m2", 8, "float", ml_dtypes.float8_e5m2),
        _t("f8e5m2fnuz", 8, "float", ml_dtypes.float8_e5m2fnuz),
        _t("f8e8m0fnu", 8, "float", ml_dtypes.float8_e8m0fnu),
        _t("bf16", 16, "float", ml_dtypes.bfloat16),
        _t("f16", 16, "float", np.float16),
        _t("f32", 32, "float", np.float32),
        _t("f64", 64, "float", np.float64),
        _t("c64", 64, "complex", np.complex64),
        _t("c128", 128, "complex", np.complex128),
        _t("token", 0, "token", None),
        _t("opaque", 0, "opaque", None),
    )
}

_BY_DTYPE: dict[np.dtype, str] = {
    t.dtype: t.name for t in PRIMITIVE_TYPES.values() if t.dtype is not None
}


def primitive_type(name: str) -> PrimitiveType:
    """The PrimitiveType called ``name`` (``"bf16"``); KeyError if XLA has no such type."""
    return PRIMITIVE_TYPES[name]


def dtype_of(name: str) -> np.dtype:
    """The numpy dtype that holds XLA type ``name``; ValueError for token and opaque."""
    dt = PRIMITIVE_TYPES[name].dtype
    if dt is None:
        raise ValueError(f"{name} has no array representation")
    return dt


def type_name_of(dtype: np.dtype | type) -> str:
    """The XLA type name for a numpy/ml_dtypes dtype (``np.float32`` -> ``"f32"``)."""
    return _BY_DTYPE[np.dtype(dtype)]
