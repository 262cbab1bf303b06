"""Shardings: the text as written (``Sharding``) and its decoded form (``ShardingSpec``), and
decoding HloSharding text (``{devices=[2,1,2]<=[4] last_tile_dim_replicate}``)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["Sharding", "ShardingSpec", "parse_sharding", "tile_assignment"]

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|<=|[\w.\-]+|[{}\[\](),=]')


@dataclass(frozen=True, slots=True)
class Sharding:
    """An HloSharding as written (``{devices=[4,1]0,1,2,3}``, ``{replicated}``, tuples, ...).

    ``text`` is kept verbatim; :meth:`parsed` decodes it into a :class:`ShardingSpec`.
    """

    text: str

    def parsed(self) -> ShardingSpec:
        return parse_sharding(self.text)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class ShardingSpec:
    """A decoded sharding. ``kind`` is replicated, manual, maximal, tiled, tuple or unknown."""

    kind: str
    device: int | None = None
    tile_assignment_dims: tuple[int, ...] = ()
    tile_assignment_devices: tuple[int, ...] = ()
    replicate_on_last_tile_dim: bool = False
    last_tile_dims: tuple[str, ...] = ()
    tuple_elements: tuple[ShardingSpec, ...] = ()
    extra: str = ""  # metadata, shard_as/shard_like, anything else after the main form



def parse_sharding(text: str) -> ShardingSpec:
    """Decode a sharding's text; ValueError with the text when it is not a form XLA writes."""
    # Tuple shardings of more than five elements carry /*index=N*/ markers.
    toks = _TOKEN.findall(_COMMENT.sub("", text))
    spec, pos = _parse(toks, 0, text)
    if pos != len(toks):
        raise ValueError(f"unexpected text in sharding {text!r}")
    return spec


def _ints_until(toks: list[str], pos: int, end: str, text: str) -> tuple[list[int], int]:
    out = []
    while toks[pos] != end:
        if toks[pos] != ",":
            out.append(int(toks[pos]))
        pos += 1
    return out, pos + 1


def _parse(toks: list[str], pos: int, text: str) -> tuple[ShardingSpec, int]:
    if toks[pos] != "{":
        raise ValueError(f"expected '{{' in sharding {text!r}")
    pos += 1
    if toks[pos] == "{":  # tuple sharding
        elems = []
        while toks[pos] == "{":
            e, pos = _parse(toks, pos, text)
            elems.append(e)
            if toks[pos] == ",":
                pos += 1
        if toks[pos] != "}":
            raise ValueError(f"expected '}}' closing tuple sharding {text!r}")
        return ShardingSpec("tuple", tuple_elements=tuple(elems)), pos + 1
    kind = "unknown"
    device = None
    dims: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    last_rep = False
    last_dims: tuple[str, ...] = ()
    extra: list[str] = []
    depth = 0
    while True:
        t = toks[pos]
        if t == "}" and depth == 0:
            pos += 1
            break
        if t in ("replicated", "manual", "unknown"):
            kind = t
            pos += 1
        elif t == "maximal":
            kind = "maximal"
            pos += 1
            if toks[pos] == "device" and toks[pos + 1] == "=":
                device = int(toks[pos + 2])
                pos += 3
        elif t == "devices" and toks[pos + 1] == "=":
            kind = "tiled"
            pos += 2
            if toks[pos] != "[":
                raise ValueError(f"expected '[' after devices= in {text!r}")
            d, pos = _ints_until(toks, pos + 1, "]", text)
            dims = tuple(d)
            if toks[pos] == "<=":
                reshape, pos = _ints_until(toks, pos + 2, "]", text)
                perm: list[int] = []
                if toks[pos] == "T":
                    perm, pos = _ints_until(toks, pos + 2, ")", text)
                devices = tuple(tile_assignment(dims, tuple(reshape), tuple(perm)).ravel().tolist())
            else:
                ids = []
                while pos < len(toks) and re.fullmatch(r"\d+", toks[pos]):
                    ids.append(int(toks[pos]))
                    pos += 1
                    if toks[pos] == "," and re.fullmatch(r"\d+", toks[pos + 1]):
                        pos += 1
                devices = tuple(ids)
        elif t == "last_tile_dim_replicate":
            last_rep = True
            pos += 1
        elif t == "last_tile_dims" and toks[pos + 1] == "=":
            pos += 3
            names = []
            while toks[pos] != "}":
                if toks[pos] != ",":
                    names.append(toks[pos])
                pos += 1
            last_dims = tuple(names)
            pos += 1
        else:
            # metadata={...}, shard_as/shard_like N, and newer fields: kept as text.
            start = pos
            while True:
                tt = toks[pos]
                if tt == "{":
                    depth += 1
                elif tt == "}":
                    if depth == 0:
                        break
                    depth -= 1
                pos += 1
                if depth == 0 and toks[pos] in ("last_tile_dim_replicate", "last_tile_dims", "}"):
                    break
            extra.append(" ".join(toks[start:pos]))
        if pos >= len(toks):
            raise ValueError(f"unterminated sharding {text!r}")
    return ShardingSpec(kind, device, dims, devices, last_rep, last_dims, extra=" ".join(extra)), pos


def tile_assignment(dims: tuple[int, ...], reshape: tuple[int, ...], perm: tuple[int, ...]) -> np.ndarray:
    """Expand an iota tile assignment ``[dims]<=[reshape]T(perm)`` to its device array."""
    ids = np.arange(int(np.prod(reshape))).reshape(reshape)
    if perm:
        ids = ids.transpose(perm)
    return ids.reshape(dims)
