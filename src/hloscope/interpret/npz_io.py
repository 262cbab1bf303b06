"""The input/output file format: named arrays in an ``.npz``, any XLA element type.

numpy's format cannot describe bf16, the fp8 family or 4-bit integers, so such an array is stored
as its raw bits in the unsigned integer of the same width (``uint8`` for widths below 8, one
element per byte) and the entry ``__dtypes__`` (a JSON object in a 0-d string array) maps its key
to the XLA type name (``"bf16"``, ``"f8e4m3fn"``, ``"s4"``...). Files are never pickled.

Key names (Note [npz keys]): entry parameters ``arg0``, ``arg1``...; a tuple parameter flattens
as ``arg0.0``, ``arg0.1.0``...; outputs ``out`` or, for a tuple root, ``out.0``, ``out.1``...;
values of a multi-device run carry the device prefix ``d<k>.`` (``d3.arg0``, ``d3.out.1``).
"""
from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np

from hloscope.errors import InputError
from hloscope.fileio import atomic_write_with, open_input

__all__ = [
    "save_npz",
    "load_npz",
    "flatten_named",
    "unflatten_named",
    "device_values",
    "DTYPES_KEY",
]

DTYPES_KEY = "__dtypes__"

# XLA type name -> (ml_dtypes type, storage dtype for its raw bits). Only types numpy's npz
# cannot hold natively are listed; every other dtype is saved as itself.
_SPECIAL: dict[str, tuple[Any, Any]] = {}
for _name, _attr, _storage in (
    ("bf16", "bfloat16", np.uint16),
    ("f8e4m3fn", "float8_e4m3fn", np.uint8),
    ("f8e5m2", "float8_e5m2", np.uint8),
    ("f8e4m3", "float8_e4m3", np.uint8),
    ("f8e3m4", "float8_e3m4", np.uint8),
    ("f8e4m3fnuz", "float8_e4m3fnuz", np.uint8),
    ("f8e5m2fnuz", "float8_e5m2fnuz", np.uint8),
    ("f8e4m3b11fnuz", "float8_e4m3b11fnuz", np.uint8),
    ("f8e8m0fnu", "float8_e8m0fnu", np.uint8),
    ("f4e2m1fn", "float4_e2m1fn", np.uint8),
    ("f6e2m3fn", "float6_e2m3fn", np.uint8),
    ("f6e3m2fn", "float6_e3m2fn", np.uint8),
    ("s4", "int4", np.uint8),
    ("u4", "uint4", np.uint8),
    ("s2", "int2", np.uint8),
    ("u2", "uint2", np.uint8),
):
    if hasattr(ml_dtypes, _attr):
        _SPECIAL[_name] = (np.dtype(getattr(ml_dtypes, _attr)), np.dtype(_storage))
_BY_DTYPE = {dtype: name for name, (dtype, _) in _SPECIAL.items()}


def _encode(array: np.ndarray) -> tuple[np.ndarray, str | None]:
    name = _BY_DTYPE.get(array.dtype)
    if name is None:
        if array.dtype.kind in "OV" or array.dtype.hasobject:
            raise TypeError(f"cannot store dtype {array.dtype} in an hloscope npz file")
        return array, None
    storage = _SPECIAL[name][1]
    # Sub-byte types already occupy one byte per element in ml_dtypes, so a view suffices.
    # ascontiguousarray makes a 0-d array 1-d: the reshape gives a scalar its shape () back.
    return np.ascontiguousarray(array).view(storage).reshape(array.shape), name


def _decode(array: np.ndarray, name: str) -> np.ndarray:
    dtype, _ = _SPECIAL[name]
    return array.view(dtype)


def save_npz(path: str | os.PathLike[str], mapping: Mapping[str, Any]) -> None:
    """Write ``mapping`` (key -> array) to ``path`` atomically (temp file + ``os.replace``)."""
    arrays: dict[str, np.ndarray] = {}
    dtypes: dict[str, str] = {}
    for key, value in mapping.items():
        if key == DTYPES_KEY:
            raise ValueError(f"{DTYPES_KEY!r} is reserved")
        stored, name = _encode(np.asarray(value))
        arrays[key] = stored
        if name is not None:
            dtypes[key] = name
    arrays[DTYPES_KEY] = np.array(json.dumps(dtypes, sort_keys=True))
    # no object arrays: bits and a JSON string only
    atomic_write_with(path, lambda f: np.savez(f, allow_pickle=False, **arrays))


# The first bytes of a zip archive (an .npz; an empty archive starts with the end record).
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_NPY_MAGIC = b"\x93NUMPY"


def load_npz(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a file written by ``save_npz`` (or ``np.savez``); arrays come back in their XLA
    element types. Anything else (missing, a directory, empty, a single ``.npy``, a pickle,
    a damaged archive, object arrays) is an ``InputError`` naming the path."""
    name = os.fspath(path)
    with open_input(path) as f:
        head = f.read(8)
        f.seek(0)
        if not head:
            raise InputError(f"{name}: the file is empty; expected an .npz of named arrays (np.savez)")
        if head.startswith(_NPY_MAGIC):
            raise InputError(f"{name}: a single .npy array, not an .npz; save the inputs by name: "
                             "np.savez(path, arg0=..., arg1=...)")
        if not head.startswith(_ZIP_MAGIC):
            raise InputError(f"{name}: not an .npz file (numpy's zip of named arrays, written by "
                             "np.savez or hloscope run --out)")
        try:
            with np.load(f, allow_pickle=False) as data:
                arrays = {key: data[key] for key in data.files}
        except ValueError as e:  # an object array: numpy would need pickle
            raise InputError(f"{name}: holds a pickled (object) array, which hloscope never loads: "
                             f"{str(e).split('.')[0]}") from None
        except (zipfile.BadZipFile, EOFError, OSError, KeyError) as e:
            raise InputError(f"{name}: a damaged .npz file ({type(e).__name__}: {e})") from None
    try:
        dtypes = json.loads(str(arrays.pop(DTYPES_KEY, np.array("{}"))))
        for key, type_name in dtypes.items():
            arrays[key] = _decode(arrays[key], type_name)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{name}: its {DTYPES_KEY!r} entry does not name the arrays' XLA types "
                         f"({type(e).__name__}: {e})") from None
    return arrays


def flatten_named(prefix: str, value: Any) -> dict[str, np.ndarray]:
    """``{prefix: array}`` for an array, ``{prefix.i...: array}`` for nested tuples/lists."""
    if isinstance(value, tuple | list):
        out: dict[str, np.ndarray] = {}
        for i, item in enumerate(value):
            out.update(flatten_named(f"{prefix}.{i}", item))
        return out
    return {prefix: np.asarray(value)}


def unflatten_named(mapping: Mapping[str, np.ndarray], prefix: str) -> Any:
    """Inverse of ``flatten_named``: the array or nested tuple stored under ``prefix``."""
    if prefix in mapping:
        return mapping[prefix]
    items = []
    i = 0
    while any(k == f"{prefix}.{i}" or k.startswith(f"{prefix}.{i}.") for k in mapping):
        items.append(unflatten_named(mapping, f"{prefix}.{i}"))
        i += 1
    if not items:
        raise KeyError(prefix)
    return tuple(items)


def device_values(mapping: Mapping[str, np.ndarray], stem: str, num_devices: int = 1) -> Any:
    """The values named ``stem0, stem1, ...`` (``stem="arg"``) or ``stem`` (``"out"``).

    With ``num_devices > 1`` the result is a list indexed by device of what one device has.
    For ``"arg"`` one device's value is the list of parameters; for ``"out"`` it is the output.
    """

    def one(prefix: str) -> Any:
        m = {k[len(prefix):]: v for k, v in mapping.items() if k.startswith(prefix)}
        if stem != "arg":
            return unflatten_named(m, stem)
        args = []
        while any(k == f"arg{len(args)}" or k.startswith(f"arg{len(args)}.") for k in m):
            args.append(unflatten_named(m, f"arg{len(args)}"))
        return args

    if num_devices == 1:
        return one("")
    return [one(f"d{k}.") for k in range(num_devices)]
