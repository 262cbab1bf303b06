"""Typed attribute values of HLO instructions and modules.

Each class prints itself back in XLA's text form with ``str()``. Attributes hloscope does not
know are kept as :class:`RawAttribute` and printed verbatim, so newer dumps still round-trip.
Bulky attributes (metadata, shardings, frontend attributes, backend configs, literals) keep their
source text and decode it only when asked.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hloscope.ir.sharding import Sharding, ShardingSpec

__all__ = [
    "RawAttribute",
    "WindowDimension",
    "Window",
    "window_of",
    "ConvolutionDimensionNumbers",
    "SliceRange",
    "PaddingConfig",
    "ReplicaGroups",
    "OpMetadata",
    "FrontendAttributes",
    "BackendConfig",
    "Sharding",
    "ShardingSpec",
    "AliasEntry",
    "StackFrameIndex",
    "quote",
]

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", re.S)
_SIMPLE_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "?": "?",
                     "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def quote(text: str) -> str:
    """``text`` as an HLO string literal (C escapes, double quotes)."""
    return '"' + "".join(_ESCAPES.get(c, c) for c in text) + '"'


def unquote(token: str) -> str:
    """The value of an HLO string literal token (C escapes undone)."""
    body = token[1:-1]
    if "\\" not in body:
        return body

    def sub(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8))
        return _SIMPLE_UNESCAPES.get(e, e)

    return _UNESCAPE_RE.sub(sub, body)


@dataclass(frozen=True, slots=True)
class RawAttribute:
    """An attribute value kept as its source text; printed back verbatim."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class WindowDimension:
    """One spatial dimension of a convolution or reduce-window window."""

    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1
    base_dilation: int = 1
    window_reversal: bool = False


@dataclass(frozen=True, slots=True)
class Window:
    """``window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}``."""

    dimensions: tuple[WindowDimension, ...]

    def __str__(self) -> str:
        dims = self.dimensions
        if not dims:
            return "{}"
        parts = ["size=" + "x".join(str(d.size) for d in dims)]
        if any(d.stride != 1 for d in dims):
            parts.append("stride=" + "x".join(str(d.stride) for d in dims))
        if any(d.padding_low or d.padding_high for d in dims):
            parts.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
        if any(d.base_dilation != 1 for d in dims):
            parts.append("lhs_dilate=" + "x".join(str(d.base_dilation) for d in dims))
        if any(d.window_dilation != 1 for d in dims):
            parts.append("rhs_dilate=" + "x".join(str(d.window_dilation) for d in dims))
        if any(d.window_reversal for d in dims):
            parts.append("rhs_reversal=" + "x".join(str(int(d.window_reversal)) for d in dims))
        return "{" + " ".join(parts) + "}"


# XLA's parser gives a reduce-window or select-and-scatter without ``window=`` (legal when its
# operand is a scalar) the empty window, and its printer leaves an empty window out again.
NO_WINDOW = Window(())


def window_of(attrs: Mapping[str, Any]) -> Window:
    """An instruction's ``window`` attribute: the empty window where the text has none."""
    window = attrs.get("window")
    return NO_WINDOW if window is None else window


@dataclass(frozen=True, slots=True)
class ConvolutionDimensionNumbers:
    """Convolution dimension numbers, written as ``dim_labels=b01f_01io->b01f``.

    Spatial dimension lists are ordered by spatial index (0, 1, ...).
    """

    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: tuple[int, ...]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: tuple[int, ...]
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: tuple[int, ...]

    @staticmethod
    def from_labels(text: str) -> ConvolutionDimensionNumbers:
        """Parse ``b01f_01io->b01f`` ('?' marks a dimension the convolution does not use);
        ValueError if malformed."""
        m = re.fullmatch(r"([0-9a-zA-Z?]+)_([0-9a-zA-Z?]+)->([0-9a-zA-Z?]+)", text)
        if not m:
            raise ValueError(f"expected dim_labels like b01f_01io->b01f, got {text!r}")
        lhs, rhs, out = m.groups()

        def split(labels: str, a: str, b: str) -> tuple[int, int, tuple[int, ...]]:
            spatial = sorted((int(c), i) for i, c in enumerate(labels) if c.isdigit())
            if labels.count(a) != 1 or labels.count(b) != 1 or len(spatial) + 2 != len(labels) - labels.count("?"):
                raise ValueError(f"malformed dim labels {labels!r} in {text!r}")
            if [s for s, _ in spatial] != list(range(len(spatial))):
                raise ValueError(f"spatial labels must be 0..n-1 in {text!r}")
            return labels.index(a), labels.index(b), tuple(i for _, i in spatial)

        ib, if_, isp = split(lhs, "b", "f")
        ki, ko, ksp = split(rhs, "i", "o")
        ob, of, osp = split(out, "b", "f")
        if not (len(isp) == len(ksp) == len(osp)):
            raise ValueError(f"spatial ranks differ in {text!r}")
        return ConvolutionDimensionNumbers(ib, if_, isp, ki, ko, ksp, ob, of, osp)

    def __str__(self) -> str:
        def labels(n: int, first: tuple[int, str], second: tuple[int, str], spatial: tuple[int, ...]) -> str:
            # As XLA: as many labels as the highest dimension named, '?' for the others.
            n = max(first[0], second[0], *spatial) + 1
            chars = ["?"] * n
            chars[first[0]] = first[1]
            chars[second[0]] = second[1]
            for k, d in enumerate(spatial):
                chars[d] = str(k)
            return "".join(chars)

        n = len(self.input_spatial_dimensions) + 2
        lhs = labels(n, (self.input_batch_dimension, "b"), (self.input_feature_dimension, "f"), self.input_spatial_dimensions)
        rhs = labels(n, (self.kernel_input_feature_dimension, "i"), (self.kernel_output_feature_dimension, "o"), self.kernel_spatial_dimensions)
        out = labels(n, (self.output_batch_dimension, "b"), (self.output_feature_dimension, "f"), self.output_spatial_dimensions)
        return f"{lhs}_{rhs}->{out}"


@dataclass(frozen=True, slots=True)
class SliceRange:
    """``[start:limit:stride]`` of one dimension of a slice."""

    start: int
    limit: int
    stride: int = 1

    def __str__(self) -> str:
        if self.stride != 1:
            return f"[{self.start}:{self.limit}:{self.stride}]"
        return f"[{self.start}:{self.limit}]"


@dataclass(frozen=True, slots=True)
class PaddingConfig:
    """``padding=0_0x1_1_2``: per dimension (low, high, interior)."""

    dimensions: tuple[tuple[int, int, int], ...]

    def __str__(self) -> str:
        interior = any(d[2] for d in self.dimensions)
        if interior:
            return "x".join(f"{lo}_{hi}_{it}" for lo, hi, it in self.dimensions)
        return "x".join(f"{lo}_{hi}" for lo, hi, _ in self.dimensions)


_MESH = re.compile(r"mesh\[(?P<axes>[^\]]*)\]\s*\{(?P<listed>[^}]*)\}")
_DEVICE_IDS = re.compile(r"\(\[(?P<dims>[\d,]*)\](?:T\((?P<perm>[\d,]*)\))?\)\s*(?P<listed>\{[^}]*\})")


@dataclass(frozen=True, slots=True)
class ReplicaGroups:
    """Replica groups in any of XLA's spellings.

    ``groups`` is the explicit list form (``{{0,1},{2,3}}``). The iota form
    ``[num_groups,group_size]<=[reshape_dims]T(perm)`` keeps its parameters and expands on
    demand. The mesh form (``mesh[...] {...}``) keeps its text in ``text``.
    """

    groups: tuple[tuple[int, ...], ...] | None = None
    iota_shape: tuple[int, int] | None = None
    iota_reshape: tuple[int, ...] = ()
    iota_transpose: tuple[int, ...] = ()
    text: str | None = None

    def expanded(self, device_ids: object = None) -> list[list[int]]:
        """The explicit groups; ``[]`` means one group of every participant.

        The mesh form ``mesh['x'=4,'y'=2] {'y'}`` numbers devices row-major over the mesh, one
        group per position of the unlisted axes, ranked over the listed axes in the order
        listed; with ``device_ids=([2,4]T(1,0)) {'y'}`` (an attribute of its own) the positions
        are numbered by that iota tile assignment instead. Raises ValueError for a spelling
        it cannot expand."""
        import numpy as np

        if self.groups is not None:
            return [list(g) for g in self.groups]
        if self.iota_shape is not None:
            n = int(np.prod(self.iota_reshape))
            ids = np.arange(n).reshape(self.iota_reshape)
            if self.iota_transpose:
                ids = ids.transpose(self.iota_transpose)
            return ids.reshape(self.iota_shape).tolist()
        text, order_ids = (self.text or "").strip(), None
        if device_ids is not None:
            d = _DEVICE_IDS.fullmatch(str(getattr(device_ids, "text", device_ids)).strip())
            if d is None:
                raise ValueError(f"cannot expand replica groups {self.text!r} device_ids={device_ids}")
            dims = [int(x) for x in d.group("dims").split(",")]
            order_ids = np.arange(int(np.prod(dims))).reshape(dims)
            if d.group("perm"):
                order_ids = order_ids.transpose([int(x) for x in d.group("perm").split(",")])
            text = f"{text} {d.group('listed')}"
        m = _MESH.fullmatch(text)
        if m is None:
            raise ValueError(f"cannot expand replica groups {self.text!r}")
        axes = re.findall(r"'([^']+)'\s*=\s*(\d+)", m.group("axes"))
        names = [a for a, _ in axes]
        sizes = [int(n) for _, n in axes]
        listed = re.findall(r"'([^']+)'", m.group("listed"))
        if any(a not in names for a in listed):
            raise ValueError(f"replica groups {self.text!r} name axes (or sub-axes) not in the mesh")
        order = [names.index(a) for a in names if a not in listed] + [names.index(a) for a in listed]
        ids = (np.arange(int(np.prod(sizes))) if order_ids is None else order_ids).reshape(sizes).transpose(order)
        size = int(np.prod([sizes[names.index(a)] for a in listed]))
        return ids.reshape(-1, size).tolist()

    def __str__(self) -> str:
        if self.groups is not None:
            return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in self.groups) + "}"
        if self.iota_shape is not None:
            text = f"[{self.iota_shape[0]},{self.iota_shape[1]}]<=[" + ",".join(map(str, self.iota_reshape)) + "]"
            if self.iota_transpose:
                text += "T(" + ",".join(map(str, self.iota_transpose)) + ")"
            return text
        return self.text or "{}"


_KV_RE = re.compile(r'([A-Za-z_][\w.\-]*)=("(?:[^"\\]|\\.)*"|[^\s{}]+)')


@dataclass(frozen=True, slots=True)
class OpMetadata:
    """``metadata={op_type="..." op_name="..." source_file="..." source_line=N ...}``.

    Kept as text; ``fields`` decodes it on first use (metadata is ~40% of a dump's bytes).
    """

    text: str  # the braces and what is inside them

    @property
    def fields(self) -> dict[str, str | int]:
        out: dict[str, str | int] = {}
        for key, value in _KV_RE.findall(self.text[1:-1]):
            if value.startswith('"'):
                out[key] = unquote(value)
            else:
                try:
                    out[key] = int(value)
                except ValueError:
                    out[key] = value
        return out

    @property
    def op_name(self) -> str | None:
        v = self.fields.get("op_name")
        return None if v is None else str(v)

    @property
    def op_type(self) -> str | None:
        v = self.fields.get("op_type")
        return None if v is None else str(v)

    @property
    def source_file(self) -> str | None:
        v = self.fields.get("source_file")
        return None if v is None else str(v)

    @property
    def source_line(self) -> int | None:
        v = self.fields.get("source_line")
        return v if isinstance(v, int) else None

    @property
    def stack_frame_id(self) -> int | None:
        v = self.fields.get("stack_frame_id")
        return v if isinstance(v, int) else None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class FrontendAttributes:
    """``frontend_attributes={key="value",...}``, kept as text, decoded on demand.

    Values are quoted strings, or (Shardy's ``xla.sdy.meshes={mesh = #sdy.mesh<...>}``) braced
    text, returned as written.
    """

    text: str

    @property
    def map(self) -> dict[str, str]:
        return _key_values(self.text[1:-1])

    def __str__(self) -> str:
        return self.text


def _key_values(body: str) -> dict[str, str]:
    """``k="v",k2={...}`` -> dict; a scan that respects quotes and nested brackets."""
    out: dict[str, str] = {}
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in " ,\n\t":
            i += 1
        eq = body.find("=", i)
        if eq < 0:
            break
        key = body[i:eq].strip()
        j = eq + 1
        if j < n and body[j] == '"':
            k = j + 1
            while k < n and body[k] != '"':
                k += 2 if body[k] == "\\" else 1
            out[key] = unquote(body[j:k + 1])
            i = k + 1
            continue
        depth, k = 0, j
        while k < n:
            c = body[k]
            if c == '"':
                k += 1
                while k < n and body[k] != '"':
                    k += 2 if body[k] == "\\" else 1
            elif c in "{[(<":
                depth += 1
            elif c in "}])>":
                depth -= 1
            elif c == "," and depth == 0:
                break
            k += 1
        out[key] = body[j:k].strip()
        i = k + 1
    return out


@dataclass(frozen=True, slots=True)
class BackendConfig:
    """``backend_config`` as written: a quoted string or a JSON object in braces."""

    text: str

    @property
    def raw(self) -> str:
        """The configuration itself (string unescaped, or the JSON text)."""
        return unquote(self.text) if self.text.startswith('"') else self.text

    def json(self) -> Any:
        """The configuration parsed as JSON, or None when it is not JSON (e.g. a serialized proto)."""
        raw = self.raw
        if not raw.strip().startswith("{"):
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class AliasEntry:
    """One ``{output_index}: (parameter_number, {parameter_index}, kind)`` alias."""

    output_index: tuple[int, ...]
    parameter_number: int
    parameter_index: tuple[int, ...]
    kind: str = ""  # "may-alias" / "must-alias" / "" (unspecified)

    def __str__(self) -> str:
        oi = "{" + ",".join(map(str, self.output_index)) + "}"
        pi = "{" + ",".join(map(str, self.parameter_index)) + "}"
        kind = f", {self.kind}" if self.kind else ""
        return f"{oi}: ({self.parameter_number}, {pi}{kind})"


@dataclass(frozen=True, slots=True)
class StackFrameIndex:
    """The ``FileNames / FunctionNames / FileLocations / StackFrames`` tables of a module."""

    file_names: tuple[tuple[int, str], ...] = ()
    function_names: tuple[tuple[int, str], ...] = ()
    file_locations: tuple[tuple[int, str], ...] = ()  # id -> "{file_name_id=.. ...}" text
    stack_frames: tuple[tuple[int, str], ...] = ()  # id -> "{file_location_id=.. parent_frame_id=..}"
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def _tables(self) -> tuple[dict[int, str], dict[int, str], dict[int, dict[str, int]], dict[int, dict[str, int]]]:
        # Read once: the memory report asks for every value's frame, and reading the tables per
        # ask made that quadratic (torax's 12k-frame table: 5 minutes for `memory --json`).
        tables = self._cache.get("tables")
        if tables is None:
            def fields(text: str) -> dict[str, int]:
                return {a: int(b) for a, b in re.findall(r"(\w+)=(-?\d+)", text)}
            tables = self._cache["tables"] = (
                dict(self.file_names), dict(self.function_names),
                {k: fields(v) for k, v in self.file_locations}, {k: fields(v) for k, v in self.stack_frames})
        return tables

    def frame(self, frame_id: int) -> list[tuple[str, str, int]]:
        """The call stack of ``frame_id``, innermost first, as (file, function, line)."""
        files, funcs, locs, frames = self._tables()
        out = []
        seen = set()
        while frame_id in frames and frame_id not in seen:
            seen.add(frame_id)
            f = frames[frame_id]
            loc = locs.get(f.get("file_location_id", -1), {})
            out.append((files.get(loc.get("file_name_id", -1), "?"), funcs.get(loc.get("function_name_id", -1), "?"),
                        loc.get("line", 0)))
            parent = f.get("parent_frame_id", 0)
            if parent == frame_id:
                break
            frame_id = parent
        return out

    def __str__(self) -> str:
        blocks = []
        for title, rows in (("FileNames", self.file_names), ("FunctionNames", self.function_names)):
            if rows:
                blocks.append(title + "\n" + "\n".join(f"{k} {quote(v)}" for k, v in rows))
        for title, rows in (("FileLocations", self.file_locations), ("StackFrames", self.stack_frames)):
            if rows:
                blocks.append(title + "\n" + "\n".join(f"{k} {v}" for k, v in rows))
        return "\n\n".join(blocks)


