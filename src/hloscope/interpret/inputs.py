"""Inputs for a run: deterministic random arrays for a module's parameters, and the npz
key convention (``arg0``, ``arg0.1``, per-device ``d<k>.arg0``) read back into run() inputs."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hloscope.errors import InputError
from hloscope.interpret.npz_io import flatten_named, unflatten_named
from hloscope.ir.dtypes import PRIMITIVE_TYPES, PrimitiveType, type_name_of
from hloscope.ir.module import Module
from hloscope.ir.shape import ArrayShape, Shape, TupleShape

__all__ = ["random_inputs", "RandomInputs", "inputs_from_mapping", "outputs_to_mapping", "DISTRIBUTIONS",
           "UNBOUNDED_SIZE"]

DISTRIBUTIONS = ("normal", "uniform", "positive")


# The size --random draws for an unbounded dimension (f32[?,784]): small, the same for every
# parameter so that dimensions meant to agree (a batch) do. A bounded one (<=N) gets its bound.
UNBOUNDED_SIZE = 4


def _random_array(shape: ArrayShape, rng: np.random.Generator, distribution: str) -> np.ndarray:
    pt = shape.primitive_type
    dims = tuple(d if d >= 0 else UNBOUNDED_SIZE for d in shape.dimensions)
    if pt.kind in ("token", "opaque"):
        return np.zeros((), np.uint8)
    if pt.kind == "pred":
        return rng.random(dims) < 0.5
    if pt.is_integer:
        # Small non-negative ints: valid as indices, loop bounds and shift counts alike.
        hi = 2 if pt.bits <= 2 else 8 if pt.bits <= 4 else 16
        return rng.integers(0, hi, size=dims).astype(pt.dtype)
    if distribution == "uniform":
        vals = rng.uniform(-1.0, 1.0, size=dims)
    elif distribution == "positive":
        vals = rng.uniform(0.1, 1.0, size=dims)
    else:
        vals = rng.standard_normal(size=dims)
    if pt.kind == "complex":
        vals = vals + 1j * rng.standard_normal(size=dims)
    return np.asarray(vals).astype(pt.dtype)


def _random_value(shape: Shape, rng: np.random.Generator, distribution: str) -> Any:
    if isinstance(shape, TupleShape):
        return tuple(_random_value(e, rng, distribution) for e in shape.elements)
    return _random_array(shape, rng, distribution)


def random_inputs(module: Module, seed: int = 0, distribution: str = "normal",
                  num_devices: int = 1, per_device: bool = False) -> list[Any]:
    """Deterministic random arguments for the entry computation.

    Floats are standard normal (``uniform``: in [-1, 1); ``positive``: in [0.1, 1)), integers in
    a small non-negative range, preds fair coins. With ``per_device`` each of ``num_devices``
    devices gets its own draw (a list per device); otherwise one list serves every device.
    """
    if distribution not in DISTRIBUTIONS:
        raise InputError(f"unknown distribution {distribution!r}; choose one of {', '.join(DISTRIBUTIONS)}")
    params = module.entry.parameters
    if not per_device:
        rng = np.random.default_rng(seed)
        return [_random_value(p.shape, rng, distribution) for p in params]
    return [[_random_value(p.shape, np.random.default_rng([seed, d, i]), distribution)
             for i, p in enumerate(params)] for d in range(num_devices)]


@dataclass(frozen=True)
class RandomInputs:
    """``random_inputs(module, seed, distribution, n, per_device)`` as a recipe: an executor
    whose devices live elsewhere (ray_executor.py) has each worker draw its own devices'
    inputs, the same arrays bit for bit, instead of sending them."""

    seed: int = 0
    distribution: str = "normal"
    per_device: bool = False

    def materialize(self, module: Module, num_devices: int) -> list[Any]:
        """What ``random_inputs`` returns for this recipe."""
        return random_inputs(module, self.seed, self.distribution, num_devices, self.per_device)

    def for_device(self, module: Module, device: int, shared: list[Any] | None = None) -> list[Any]:
        """Device ``device``'s inputs; without ``per_device`` every device's are ``shared``
        (drawn once by the caller with ``materialize(module, 1)``)."""
        if not self.per_device:
            return list(shared) if shared is not None else self.materialize(module, 1)
        return [_random_value(p.shape, np.random.default_rng([self.seed, device, i]), self.distribution)
                for i, p in enumerate(module.entry.parameters)]


def inputs_from_mapping(module: Module, mapping: Mapping[str, np.ndarray], num_devices: int, *,
                        cast: bool = False) -> list[Any]:
    """run() inputs from npz keys: ``argI`` for every device, ``d<k>.argI`` for device k only.

    Each array must have its parameter's element type (Note [Input types]); with ``cast`` an
    array of another type is converted when every value fits the parameter's type. Either way a
    mismatch is an ``InputError`` naming the key and both types.
    """
    params = module.entry.parameters
    known = {f"arg{p.parameter_number}" for p in params}
    for key in mapping:
        base = key.split(".", 1)[1] if key.startswith("d") and key[1:].split(".", 1)[0].isdigit() else key
        if base.split(".", 1)[0] not in known:
            raise InputError(f"input {key!r} names no parameter; the entry takes "
                             + ", ".join(f"arg{p.parameter_number} ({p.name}: {p.shape.to_text(layout=False)})"
                                         for p in params))

    def device_args(k: int) -> list[Any]:
        out = []
        for p in params:
            stem = f"arg{p.parameter_number}"
            for prefix in ((f"d{k}.",) if num_devices > 1 else ()) + ("",):
                sub = {key[len(prefix):]: v for key, v in mapping.items() if key.startswith(prefix)}
                try:
                    value = unflatten_named(sub, stem)
                except KeyError:
                    continue
                out.append(_typed(value, p.shape, prefix + stem, p, cast))
                break
            else:
                where = f" for device {k}" if num_devices > 1 else ""
                raise InputError(f"no input for parameter {p.parameter_number} ({p.name}: "
                                 f"{p.shape.to_text(layout=False)}){where}: expected key {stem!r}")
        return out

    if num_devices == 1:
        return device_args(0)
    per = [device_args(k) for k in range(num_devices)]
    return per


# Note [Input types]
# ------------------
# An input file's arrays must have the element types of the parameters they feed. numpy makes
# float64 and int64 by default, and converting them silently would run a different program
# from the one the user meant (and turn 1e300 into inf with a RuntimeWarning from deep inside
# hloscope). So a mismatch is refused, naming both types; ``cast=True`` (``run --cast-inputs``)
# converts, as XLA's ``convert`` would for values in range, and still refuses values the
# parameter's type cannot hold (a float out of f16's range would become inf, an integer out of
# s8's would wrap, a NaN has no integer), counting them. Complex values never become real.


def _typed(value: Any, shape: Shape, key: str, param: Any, cast: bool) -> Any:
    """``value`` (an array or nested tuple of them, read for ``key``) in ``shape``'s element types."""
    if isinstance(shape, TupleShape):
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            return value  # run() names the parameter and the shapes it expects
        return tuple(_typed(v, s, f"{key}.{i}", param, cast) for i, (v, s) in enumerate(zip(value, shape.elements)))
    pt = shape.primitive_type
    arr = np.asarray(value)
    if pt.dtype is None or arr.dtype == pt.dtype:
        return arr
    got = _type_text(arr.dtype)
    where = (f"input {key!r} is {got}[{','.join(map(str, arr.shape))}] but parameter {param.parameter_number} "
             f"({param.name}) is {shape.to_text(layout=False)}")
    if not cast:
        raise InputError(f"{where}; store it as {pt.name} (np.asarray(x, np.{pt.dtype.name}) for numpy types) "
                         "or pass --cast-inputs to convert it")
    src_kind = _kind(arr.dtype)
    if src_kind is None:
        raise InputError(f"{where}; {got} values are not numbers")
    if src_kind == "complex" and pt.kind != "complex":
        raise InputError(f"{where}; complex values are not converted to {pt.name}")
    with np.errstate(all="ignore"):
        converted = arr.astype(pt.dtype)
        bad = _unrepresentable(arr, src_kind, converted, pt)
    if bad:
        raise InputError(f"{where}; {bad:,} of {arr.size:,} values out of the range of {pt.name}, "
                         "not converted")
    return converted


def _xla_name(dtype: np.dtype) -> str | None:
    try:
        return type_name_of(dtype)
    except KeyError:
        return None


def _type_text(dtype: np.dtype) -> str:
    """An array's element type in XLA's spelling when it has one (``f64``), else numpy's."""
    return _xla_name(dtype) or str(dtype)


def _kind(dtype: np.dtype) -> str | None:
    """The PrimitiveType kind of a numpy dtype (``float``, ``signed``...), None when not a number."""
    name = _xla_name(dtype)
    return None if name is None else PRIMITIVE_TYPES[name].kind


def _unrepresentable(src: np.ndarray, src_kind: str, converted: np.ndarray, pt: PrimitiveType) -> int:
    """How many values of ``src`` the type ``pt`` cannot hold (``converted`` is ``src`` cast)."""
    if pt.kind in ("pred", "complex") or src_kind == "pred":
        return 0
    if pt.kind == "float":
        if src_kind != "float":  # integers: only the narrow float types overflow (70000 -> f16 inf)
            return int(np.count_nonzero(~np.isfinite(converted.astype(np.float64))))
        f = src.astype(np.float64)
        return int(np.count_nonzero(np.isfinite(f) & ~np.isfinite(converted.astype(np.float64))))
    # An integer parameter, signed or unsigned, of any width.
    lo = -(1 << (pt.bits - 1)) if pt.kind == "signed" else 0
    hi = (1 << (pt.bits - 1)) - 1 if pt.kind == "signed" else (1 << pt.bits) - 1
    if src_kind == "float":
        f = src.astype(np.float64)
        # NaN fails both comparisons; truncation toward zero keeps (lo - 1, hi + 1) in range.
        return int(np.count_nonzero(~((f > lo - 1) & (f < hi + 1))))
    wide = src.astype(np.int64) if src_kind == "signed" else src.astype(np.uint64)
    return int(np.count_nonzero((wide < lo) | (wide > hi)))


def outputs_to_mapping(results: Any, num_devices: int) -> dict[str, np.ndarray]:
    """npz keys for run() results: ``out`` / ``out.0``..., prefixed ``d<k>.`` per device."""
    if num_devices == 1:
        return flatten_named("out", results)
    out: dict[str, np.ndarray] = {}
    for k, value in enumerate(results):
        out.update({f"d{k}.{key}": v for key, v in flatten_named("out", value).items()})
    return out
