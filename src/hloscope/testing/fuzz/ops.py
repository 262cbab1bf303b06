"""The fuzzer's op generators: each appends one instruction (and what it needs) to a computation;
``OPS`` weighs them and ``generate(seed)`` builds the seed's module.
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from hloscope.ir.shape import Shape, TupleShape
from hloscope.testing.fuzz.generator import CompBuilder, Generator, braced, identity_text
from hloscope.testing.fuzz.model import (
    ALL_TYPES,
    ANY_TYPES,
    BINARY_TYPES,
    COMPLEX,
    COMPLEX_OF,
    F_TYPES,
    INDEX_TYPES,
    INTS,
    NUMERIC_TYPES,
    UNARY_TYPES,
    XLA_CPU_UNIMPLEMENTED,
    A,
    Case,
    Inst,
    bit_width,
    default_comparison_type,
    type_kind,
    unary_result,
)

# --------------------------------------------------------------------------------------------
# Op generators: each appends one instruction (and what it needs) to a computation


def _op_unary(g: Generator, c: CompBuilder) -> None:
    op = g.rng.choice(sorted(set(UNARY_TYPES) - (XLA_CPU_UNIMPLEMENTED if g.cpu_safe else set())))
    allowed = UNARY_TYPES[op]
    if allowed != ANY_TYPES and g.bad("type", op):
        allowed = ANY_TYPES - allowed
    x = g.need(c, types=allowed)
    s = c.array(x)
    c.add(op, A(unary_result(op, s.element_type), s.dimensions), [x])


def _op_binary(g: Generator, c: CompBuilder) -> None:
    op = g.rng.choice(sorted(BINARY_TYPES))
    allowed = BINARY_TYPES[op]
    kind = "type" if allowed != ANY_TYPES and g.bad("type", op) else None
    if kind:
        allowed = ANY_TYPES - allowed
    a = g.need(c, types=allowed)
    s = c.array(a)
    if kind is None and g.bad("operand", op):
        # A second operand of another shape or element type.
        other = [t for t in allowed if t != s.element_type] or [s.element_type]
        b = g.need(c, g.rng.choice(other), s.dimensions) if g.rng.random() < 0.5 or not s.rank \
            else g.need(c, s.element_type, (*s.dimensions[:-1], s.dimensions[-1] + 1))
    else:
        b = g.need(c, s.element_type, s.dimensions)
    t = COMPLEX_OF.get(s.element_type, s.element_type) if op == "complex" else s.element_type
    c.add(op, A(t, s.dimensions), [a, b])


def _op_compare(g: Generator, c: CompBuilder) -> None:
    a = g.need(c)
    s = c.array(a)
    b = g.need(c, s.element_type, s.dimensions)
    kind = type_kind(s.element_type)
    directions = ("EQ", "NE") if kind == "complex" else ("EQ", "NE", "LT", "LE", "GT", "GE")
    d = g.rng.choice(directions)
    if kind == "float":
        ctype = g.rng.choice(("FLOAT", "TOTALORDER", None))
    else:
        ctype = g.rng.choice((default_comparison_type(s.element_type), None))
    if g.bad("comparison-type", "compare"):
        fits = {"float": ("FLOAT", "TOTALORDER"), "complex": ("FLOAT",)}.get(
            kind, (default_comparison_type(s.element_type),))
        ctype = g.rng.choice([t for t in ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED") if t not in fits])
    attrs = f", direction={d}" + (f", type={ctype}" if ctype else "")
    c.add("compare", A("pred", s.dimensions), [a, b], attrs)


def _op_select_clamp(g: Generator, c: CompBuilder) -> None:
    x = g.need(c)
    s = c.array(x)
    if g.rng.random() < 0.5:
        p = g.need(c, "pred", s.dimensions if g.rng.random() < 0.8 else ())
        y = g.need(c, s.element_type, s.dimensions)
        if g.bad("operand", "select"):
            p = g.need(c, g.pick_type(ANY_TYPES - {"pred"}), s.dimensions)
        c.add("select", s, [p, x, y])
    else:
        if s.element_type in ("pred",) + COMPLEX:
            x = g.need(c, g.pick_type(NUMERIC_TYPES - frozenset(COMPLEX)), s.dimensions)
            s = c.array(x)
        lo = g.need(c, s.element_type, s.dimensions if g.rng.random() < 0.5 else ())
        if g.bad("operand", "clamp"):
            lo = g.need(c, g.pick_type(NUMERIC_TYPES - {s.element_type}), ())
        hi = g.need(c, s.element_type, s.dimensions if g.rng.random() < 0.5 else ())
        c.add("clamp", s, [lo, x, hi])


def _op_convert(g: Generator, c: CompBuilder) -> None:
    x = g.need(c)
    s = c.array(x)
    t = g.pick_type()
    c.add("convert", A(t, s.dimensions), [x])


def _op_bitcast_convert(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, types=ANY_TYPES - {"pred"})
    s = c.array(x)
    complex_in = type_kind(s.element_type) == "complex"
    outs = [t for t in ALL_TYPES if t != "pred" and (type_kind(t) == "complex") == complex_in]
    if complex_in:
        # XLA:CPU cannot change a complex width (c64[..,2] <-> c128[..]): it refuses with a
        # garbled error one way and aborts the other. Left out, reported, not fuzzed further.
        outs = [s.element_type]
    same = [t for t in outs if bit_width(t) == bit_width(s.element_type)]
    t = g.rng.choice(same if same and g.rng.random() < 0.6 else outs)
    ib, ob = bit_width(s.element_type), bit_width(t)
    if max(ib, ob) % min(ib, ob):
        t, ob = s.element_type, ib
    if ib > ob:
        shape = A(t, (*s.dimensions, ib // ob))
    elif ib < ob:
        x = g.need(c, s.element_type, (*s.dimensions, ob // ib))
        shape = A(t, s.dimensions)
    else:
        shape = A(t, s.dimensions)
    c.add("bitcast-convert", shape, [x])


def _op_broadcast(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((0, 1, 1, 2)))
    s = c.array(x)
    out_rank = min(4, s.rank + g.rng.randint(0, 2))
    dims_map = sorted(g.rng.sample(range(out_rank), s.rank))
    if s.rank > 1 and g.bad("attribute", "broadcast"):
        dims_map.reverse()  # XLA wants them ascending
    out = list(g.pick_dims(out_rank))
    for i, d in enumerate(dims_map):
        out[d] = s.dimensions[i]
    c.add("broadcast", A(s.element_type, out), [x], f", dimensions={braced(dims_map)}")


def _factorizations(n: int, rank: int, rng: random.Random) -> tuple[int, ...]:
    if rank == 0:
        return ()
    if n == 0:
        dims = [rng.choice((0, 1, 2, 3)) for _ in range(rank)]
        dims[rng.randrange(rank)] = 0
        return tuple(dims)
    dims = []
    left = n
    for _ in range(rank - 1):
        divs = [d for d in range(1, left + 1) if left % d == 0]
        d = rng.choice(divs)
        dims.append(d)
        left //= d
    dims.append(left)
    rng.shuffle(dims)
    return tuple(dims)


def _op_reshape(g: Generator, c: CompBuilder) -> None:
    x = g.need(c)
    s = c.array(x)
    n = s.element_count
    rank = g.rng.choice((0, 1, 2, 3)) if n == 1 else g.rng.choice((1, 2, 3))
    dims = _factorizations(n, rank, g.rng)
    if dims and g.bad("attribute", "reshape"):
        dims = (*dims[:-1], dims[-1] + 1)
    c.add("reshape", A(s.element_type, dims), [x])


def _op_transpose(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3, 3)))
    s = c.array(x)
    perm = list(range(s.rank))
    g.rng.shuffle(perm)
    if g.bad("attribute", "transpose") and perm:
        perm[g.rng.randrange(len(perm))] = g.rng.choice((s.rank, perm[0]))
        shape = s
    else:
        shape = A(s.element_type, [s.dimensions[p] for p in perm])
    c.add("transpose", shape, [x], f", dimensions={braced(perm)}")


def _op_slice(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    ranges, out = [], []
    for n in s.dimensions:
        start = g.rng.randint(0, n)
        limit = g.rng.randint(start, n)
        stride = g.rng.choice((1, 1, 2, 3))
        ranges.append(f"[{start}:{limit}" + (f":{stride}]" if stride != 1 or g.rng.random() < 0.3 else "]"))
        out.append(-(-(limit - start) // stride))
    if g.bad("attribute", "slice"):
        n = s.dimensions[0]
        ranges[0], out[0] = f"[0:{n + 1}]", n + 1
    c.add("slice", A(s.element_type, out), [x], ", slice={" + ", ".join(ranges) + "}")


def _op_concatenate(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    d = g.rng.randrange(s.rank)
    parts, total = [x], s.dimensions[d]
    for _ in range(g.rng.randint(0, 2)):
        dims = list(s.dimensions)
        dims[d] = g.rng.randint(0, 3)
        parts.append(g.need(c, s.element_type, tuple(dims)))
        total += dims[d]
    if g.bad("operand", "concatenate") and s.rank > 1:
        dims = list(s.dimensions)
        k = (d + 1) % s.rank
        dims[k] += 1
        parts.append(g.need(c, s.element_type, tuple(dims)))
    out = list(s.dimensions)
    out[d] = total
    c.add("concatenate", A(s.element_type, out), parts, f", dimensions={{{d}}}")


def _op_pad(g: Generator, c: CompBuilder) -> None:
    # Rank 0 is left out: XLA's text has no spelling for an empty padding config.
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    v = g.need(c, s.element_type, ())
    if g.bad("operand", "pad"):
        v = g.need(c, g.pick_type(ANY_TYPES - {s.element_type}), ())
    cfg, out = [], []
    for n in s.dimensions:
        interior = g.rng.choice((0, 0, 1, 2))
        base = n + max(n - 1, 0) * interior
        lo = g.rng.randint(-min(base, 2), 3)
        hi = g.rng.randint(-min(base + lo, 2) if base + lo > 0 else 0, 3)
        cfg.append(f"{lo}_{hi}" + (f"_{interior}" if interior else ""))
        out.append(base + lo + hi)
    c.add("pad", A(s.element_type, out), [x, v], ", padding=" + "x".join(cfg))


def _op_reverse(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    dims = sorted(g.rng.sample(range(s.rank), g.rng.randint(0, s.rank)))
    if g.bad("attribute", "reverse"):
        dims = dims + [s.rank]
    c.add("reverse", s, [x], f", dimensions={braced(dims)}")


def _op_iota(g: Generator, c: CompBuilder) -> None:
    t = g.pick_type(NUMERIC_TYPES)
    dims = g.pick_dims(g.rng.choice((1, 2, 3)))
    d = len(dims) if g.bad("attribute", "iota") else g.rng.randrange(len(dims))
    c.add("iota", A(t, dims), [], f", iota_dimension={d}")


def _op_dynamic_slice(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    sizes = [g.rng.randint(0, n) for n in s.dimensions]
    t = g.rng.choice(INDEX_TYPES)
    starts = [g.index_scalar(c, n, t) for n in s.dimensions]
    if g.bad("operand", "dynamic-slice"):  # start indices must share one integer type
        starts[-1] = g.index_scalar(c, 0, g.rng.choice([u for u in INDEX_TYPES if u != t]))
    c.add("dynamic-slice", A(s.element_type, sizes), [x, *starts],
          f", dynamic_slice_sizes={braced(sizes)}")


def _op_dynamic_update_slice(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)))
    s = c.array(x)
    u = g.need(c, s.element_type, tuple(g.rng.randint(0, n) for n in s.dimensions))
    t = g.rng.choice(INDEX_TYPES)
    starts = [g.index_scalar(c, n, t) for n in s.dimensions]
    c.add("dynamic-update-slice", s, [x, u, *starts])


def _op_reduce(g: Generator, c: CompBuilder) -> None:
    n_in = 2 if g.rng.random() < 0.3 else 1
    x = g.need(c, rank=g.rng.choice((1, 2, 3)), types=ANY_TYPES)
    s = c.array(x)
    xs = [x]
    if n_in == 2:
        xs.append(g.need(c, g.rng.choice(INTS), s.dimensions))
    types = [c.array(v).element_type for v in xs]
    reducer, inits = g.scalar_reducer(types)
    init_names = [c.add("constant", A(t), [], literal=v) for t, v in zip(types, inits)]
    if g.bad("operand", "reduce"):  # an init value of another element type than the reducer's
        t2 = g.rng.choice([u for u in ALL_TYPES if u != types[0]])
        init_names[0] = c.add("constant", A(t2), [], literal=identity_text("add", t2))
    dims = sorted(g.rng.sample(range(s.rank), g.rng.randint(0, s.rank)))
    if g.bad("attribute", "reduce"):
        dims = dims + [s.rank]
    keep = [s.dimensions[k] for k in range(s.rank) if k not in dims]
    shape: Shape = A(types[0], keep) if n_in == 1 else TupleShape(tuple(A(t, keep) for t in types))
    c.add("reduce", shape, xs + init_names, f", dimensions={braced(dims)}, to_apply={reducer}")


def _window_text(dims: list[dict[str, int]]) -> str:
    keys = (("size", "size"), ("stride", "stride"), ("pad", None), ("lhs_dilate", "lhs_dilate"),
            ("rhs_dilate", "rhs_dilate"))
    parts = []
    for key, field in keys:
        if key == "pad":
            vals = [f"{d['lo']}_{d['hi']}" for d in dims]
            if all(v == "0_0" for v in vals):
                continue
        else:
            vals = [str(d[field]) for d in dims]  # type: ignore[index]
            if key != "size" and all(v == "1" for v in vals):
                continue
        parts.append(f"{key}=" + "x".join(vals))
    return "{" + " ".join(parts) + "}"


def _random_window(g: Generator, base: tuple[int, ...], sizes: list[int] | None = None) -> tuple[list[dict[str, int]], list[int]]:
    """Window dimensions over ``base`` with padded bases >= 0 (XLA CHECK-fails otherwise) and
    their output sizes."""
    rng = g.rng
    dims, out = [], []
    for k, n in enumerate(base):
        size = sizes[k] if sizes is not None else rng.randint(1, 3)
        d = {"size": size, "stride": rng.choice((1, 1, 2, 3)), "lhs_dilate": rng.choice((1, 1, 1, 2)),
             "rhs_dilate": rng.choice((1, 1, 1, 2)), "lo": rng.choice((0, 0, 0, 1, 2, -1)),
             "hi": rng.choice((0, 0, 0, 1, 2, -1))}
        dilated = (n - 1) * d["lhs_dilate"] + 1 if n else 0
        if dilated + d["lo"] + d["hi"] < 0:
            d["lo"] = d["hi"] = 0
        padded = dilated + d["lo"] + d["hi"]
        span = (size - 1) * d["rhs_dilate"] + 1
        out.append(0 if padded == 0 or span > padded else (padded - span) // d["stride"] + 1)
        dims.append(d)
    return dims, out


def _op_reduce_window(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, rank=g.rng.choice((1, 2, 3)), types=ANY_TYPES - frozenset(COMPLEX))
    s = c.array(x)
    reducer, inits = g.scalar_reducer([s.element_type])
    init = c.add("constant", A(s.element_type), [], literal=inits[0])
    window, out = _random_window(g, s.dimensions)
    if s.rank > 1 and g.bad("attribute", "reduce-window"):
        window = window[:-1]
    c.add("reduce-window", A(s.element_type, out), [x, init],
          f", window={_window_text(window)}, to_apply={reducer}")


_DOT_TYPES = ("f32", "f64", "f16", "bf16", "s32", "s8", "u8", "s64", "c64", "pred")
_PREFERRED = {"bf16": ("f32",), "f16": ("f32",), "s8": ("s32",), "u8": ("u32", "s32"), "f32": ("f64",)}


def _op_dot(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    t = rng.choice(_DOT_TYPES)
    nb, nc = rng.choice((0, 0, 1, 2)), rng.choice((0, 1, 1, 1, 2))
    nfl, nfr = rng.choice((0, 1, 1, 2)), rng.choice((0, 1, 1, 2))
    batch = [rng.randint(1, 3) for _ in range(nb)]
    contract = [rng.randint(0, 4) for _ in range(nc)]
    fl = [rng.randint(1, 4) for _ in range(nfl)]
    fr = [rng.randint(1, 4) for _ in range(nfr)]

    def place(free: list[int]) -> tuple[list[int], list[int], list[int]]:
        roles = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(len(free))]
        rng.shuffle(roles)
        dims = [batch[i] if r == "b" else contract[i] if r == "c" else free[i] for r, i in roles]
        bpos = [roles.index(("b", i)) for i in range(nb)]
        cpos = [roles.index(("c", i)) for i in range(nc)]
        return dims, bpos, cpos

    ld, lb, lc = place(fl)
    rd, rb, rc = place(fr)
    if g.bad("attribute", "dot") and nc:
        rd[rc[0]] += 1
    a = g.need(c, t, tuple(ld))
    b = g.need(c, t, tuple(rd))
    out_t = rng.choice(_PREFERRED[t]) if t in _PREFERRED and rng.random() < 0.3 else t
    attrs = ""
    for key, v in (("lhs_batch_dims", lb), ("lhs_contracting_dims", lc), ("rhs_batch_dims", rb),
                   ("rhs_contracting_dims", rc)):
        if v or rng.random() < 0.2:
            attrs += f", {key}={braced(v)}"
    free_l = [n for k, n in enumerate(ld) if k not in lb and k not in lc]
    free_r = [n for k, n in enumerate(rd) if k not in rb and k not in rc]
    c.add("dot", A(out_t, batch + free_l + free_r), [a, b], attrs)


def _op_convolution(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    t = rng.choice(("f32", "f32", "f64", "f16", "bf16", "s32", "s8"))
    nsp = rng.choice((1, 1, 2))
    digits = [str(i) for i in range(nsp)]
    lhs_l, ker_l, out_l = ["b", "f", *digits], ["i", "o", *digits], ["b", "f", *digits]
    for labels in (lhs_l, ker_l, out_l):
        rng.shuffle(labels)
    fgc, bgc = rng.choice(((1, 1), (1, 1), (2, 1), (1, 2), (3, 1)))
    kin = rng.randint(1, 2)
    fin = kin * fgc
    kout = rng.randint(1, 2) * fgc * bgc
    batch = rng.randint(1, 2) * bgc
    spatial = [rng.randint(1, 5) for _ in range(nsp)]
    ksp = [rng.randint(1, 3) for _ in range(nsp)]
    window, osp = _random_window(g, tuple(spatial), ksp)

    def arrange(labels: list[str], sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(sizes[label] for label in labels)

    lhs = arrange(lhs_l, {"b": batch, "f": fin, **dict(zip(digits, spatial))})
    ker = arrange(ker_l, {"i": kin, "o": kout, **dict(zip(digits, ksp))})
    out = arrange(out_l, {"b": batch // bgc, "f": kout, **dict(zip(digits, osp))})
    if g.bad("attribute", "convolution"):
        ker = tuple(n + 1 if lab == "i" else n for n, lab in zip(ker, ker_l))
    a = g.need(c, t, lhs)
    k = g.need(c, t, ker)
    out_t = rng.choice(_PREFERRED[t]) if t in _PREFERRED and rng.random() < 0.3 else t
    attrs = f", window={_window_text(window)}, dim_labels={''.join(lhs_l)}_{''.join(ker_l)}->{''.join(out_l)}"
    if fgc > 1:
        attrs += f", feature_group_count={fgc}"
    if bgc > 1:
        attrs += f", batch_group_count={bgc}"
    c.add("convolution", A(out_t, out), [a, k], attrs)


@dataclasses.dataclass
class _IndexScheme:
    """Dimension numbers shared by gather and scatter (gather's names)."""

    batching: list[int]  # operand_batching_dims / input_batching_dims
    collapsed: list[int]  # collapsed_slice_dims / inserted_window_dims
    start_index_map: list[int]  # start_index_map / scatter_dims_to_operand_dims
    index_dims: tuple[int, ...]  # the indices' shape
    index_vector_dim: int
    index_batching: list[int]  # start_indices_batching_dims / scatter_indices_batching_dims
    batch_sizes: list[int]  # the indices' dimensions other than index_vector_dim, in order


def _index_scheme(g: Generator, opdims: tuple[int, ...]) -> _IndexScheme:
    rng = g.rng
    r = len(opdims)
    order = list(range(r))
    rng.shuffle(order)
    nonempty = [d for d in order if opdims[d] >= 1]
    nb = 1 if len(nonempty) >= 2 and rng.random() < 0.25 else 0
    batching = sorted(nonempty[:nb])
    rest = [d for d in order if d not in batching]
    sim = rng.sample(rest, rng.randint(0, len(rest)))
    collapsed = sorted(d for d in rest if opdims[d] >= 1 and rng.random() < 0.4)
    n_batch = rng.randint(0, 2) + nb
    batch_sizes = [rng.randint(0, 3) for _ in range(n_batch)]
    pos = rng.sample(range(n_batch), nb)
    for p, d in zip(pos, batching):
        batch_sizes[p] = opdims[d]
    implicit = len(sim) == 1 and rng.random() < 0.3
    if implicit:
        dims, ivd = tuple(batch_sizes), n_batch
        index_batching = pos
    else:
        ivd = rng.randint(0, n_batch)
        dims = tuple(batch_sizes[:ivd] + [len(sim)] + batch_sizes[ivd:])
        index_batching = [p + (1 if p >= ivd else 0) for p in pos]
    return _IndexScheme(batching, collapsed, sim, dims, ivd, index_batching, batch_sizes)


def _op_gather(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    x = g.need(c, rank=rng.choice((1, 2, 3)))
    s = c.array(x)
    sch = _index_scheme(g, s.dimensions)
    dropped = set(sch.batching) | set(sch.collapsed)
    sizes = [1 if d in dropped else rng.randint(0, n) for d, n in enumerate(s.dimensions)]
    offsets = [sizes[d] for d in range(s.rank) if d not in dropped]
    out_rank = len(sch.batch_sizes) + len(offsets)
    offset_dims = sorted(rng.sample(range(out_rank), len(offsets)))
    oo, ob = iter(offsets), iter(sch.batch_sizes)
    out = [next(oo) if d in offset_dims else next(ob) for d in range(out_rank)]
    if g.bad("attribute", "gather") and sizes:
        sizes[0] = s.dimensions[0] + 1
    idx = g.indices(c, sch.index_dims, max(s.dimensions))
    attrs = (f", offset_dims={braced(offset_dims)}, collapsed_slice_dims={braced(sch.collapsed)}"
             f", start_index_map={braced(sch.start_index_map)}")
    if sch.batching:
        attrs += (f", operand_batching_dims={braced(sch.batching)}"
                  f", start_indices_batching_dims={braced(sch.index_batching)}")
    attrs += f", index_vector_dim={sch.index_vector_dim}, slice_sizes={braced(sizes)}"
    if rng.random() < 0.2:
        attrs += ", indices_are_sorted=false"
    c.add("gather", A(s.element_type, out), [x, idx], attrs)


def _op_scatter(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    x = g.need(c, rank=rng.choice((1, 2, 3)), types=ANY_TYPES - {"pred"})
    s = c.array(x)
    sch = _index_scheme(g, s.dimensions)
    dropped = set(sch.batching) | set(sch.collapsed)
    window = [rng.randint(0, n) for d, n in enumerate(s.dimensions) if d not in dropped]
    up_rank = len(sch.batch_sizes) + len(window)
    window_dims = sorted(rng.sample(range(up_rank), len(window)))
    ww, wb = iter(window), iter(sch.batch_sizes)
    up = tuple(next(ww) if d in window_dims else next(wb) for d in range(up_rank))
    if g.bad("operand", "scatter") and up:
        up = (*up[:-1], up[-1] + 5)
    idx = g.indices(c, sch.index_dims, max(s.dimensions))
    u = g.need(c, s.element_type, up)
    if rng.random() < 0.25:  # overwrite: the last update to an element wins
        comb = g.sub("overwrite", [A(s.element_type)] * 2, lambda cc, p: p[1])
    else:
        comb, _ = g.scalar_reducer([s.element_type])
    attrs = (f", update_window_dims={braced(window_dims)}, inserted_window_dims={braced(sch.collapsed)}"
             f", scatter_dims_to_operand_dims={braced(sch.start_index_map)}")
    if sch.batching:
        attrs += (f", input_batching_dims={braced(sch.batching)}"
                  f", scatter_indices_batching_dims={braced(sch.index_batching)}")
    attrs += f", index_vector_dim={sch.index_vector_dim}, to_apply={comb}"
    c.add("scatter", s, [x, idx, u], attrs)


def _op_sort(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    x = g.need(c, rank=rng.choice((1, 2, 3)), types=ANY_TYPES - frozenset(COMPLEX))
    s = c.array(x)
    xs = [x] + [g.need(c, dims=s.dimensions) for _ in range(rng.choice((0, 0, 1, 2)))]
    if g.bad("operand", "sort"):  # all operands must share dimensions
        xs.append(g.need(c, dims=(*s.dimensions[:-1], s.dimensions[-1] + 1)))
    types = [c.array(v).element_type for v in xs]
    kt = types[0]
    d = rng.choice(("LT", "GT"))
    ct = "TOTALORDER" if type_kind(kt) == "float" else default_comparison_type(kt)

    def body(cc: CompBuilder, p: list[str]) -> str:
        return cc.add("compare", A("pred"), [p[0], p[1]], f", direction={d}, type={ct}")

    params = [A(t) for t in types for _ in (0, 1)]
    cmp = g.sub("compare", params, body)
    # Equal keys under a total order are identical bits, so only several operands need stability.
    stable = len(xs) > 1 or rng.random() < 0.3
    shape: Shape = s if len(xs) == 1 else TupleShape(tuple(c.array(v) for v in xs))
    dim = rng.randrange(s.rank)
    c.add("sort", shape, xs, f", dimensions={{{dim}}}" + (", is_stable=true" if stable else "")
          + f", to_apply={cmp}", pool=len(xs) == 1)
    if len(xs) > 1:
        _unpack(c, c.insts[-1])


def _unpack(c: CompBuilder, inst: Inst) -> None:
    """get-tuple-element of a random element of a tuple-shaped instruction."""
    assert isinstance(inst.shape, TupleShape)
    k = c.gen.rng.randrange(len(inst.shape.elements))
    c.add("get-tuple-element", inst.shape.elements[k], [inst.name], f", index={k}")


def _elementwise_body(g: Generator, c: CompBuilder, x: str) -> str:
    """A short chain of type-preserving elementwise ops on ``x`` (while bodies, branches)."""
    s = c.array(x)
    t = s.element_type
    for _ in range(g.rng.randint(1, 2)):
        un = [op for op, ts in UNARY_TYPES.items() if t in ts and unary_result(op, t) == t
              and not (g.cpu_safe and op in XLA_CPU_UNIMPLEMENTED)]
        bi = [op for op, ts in BINARY_TYPES.items() if t in ts and op != "complex"]
        if g.rng.random() < 0.5 and un:
            x = c.add(g.rng.choice(sorted(un)), s, [x])
        else:
            y = g.need(c, t, s.dimensions)
            x = c.add(g.rng.choice(sorted(bi)), s, [x, y])
    return x


def _op_map(g: Generator, c: CompBuilder) -> None:
    x = g.need(c)
    s = c.array(x)
    t = s.element_type
    bi = sorted(op for op, ts in BINARY_TYPES.items() if t in ts and op != "complex")
    op = g.rng.choice(bi)
    fn = g.sub("mapped", [A(t), A(t)], lambda cc, p: cc.add(op, A(t), [p[0], p[1]]))
    y = g.need(c, t, s.dimensions)
    c.add("map", s, [x, y], f", dimensions={braced(range(s.rank))}, to_apply={fn}")


def _op_while(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    x = g.need(c, types=NUMERIC_TYPES | {"pred"})
    s = c.array(x)
    trips = rng.randint(0, 3)
    state = TupleShape((A("s32"), s))
    zero = c.add("constant", A("s32"), [], literal=str(rng.choice((0, 0, -1))))
    init = c.add("tuple", state, [zero, x], pool=False)

    def cond(cc: CompBuilder, p: list[str]) -> str:
        i = cc.add("get-tuple-element", A("s32"), [p[0]], ", index=0")
        n = cc.add("constant", A("s32"), [], literal=str(trips))
        return cc.add("compare", A("pred"), [i, n], ", direction=LT")

    def body(cc: CompBuilder, p: list[str]) -> str:
        i = cc.add("get-tuple-element", A("s32"), [p[0]], ", index=0")
        v = cc.add("get-tuple-element", s, [p[0]], ", index=1")
        one = cc.add("constant", A("s32"), [], literal="1")
        i2 = cc.add("add", A("s32"), [i, one])
        v2 = _elementwise_body(g, cc, v)
        return cc.add("tuple", state, [i2, v2])

    cn = g.sub("cond", [state], cond)
    bn = g.sub("body", [state], body)
    w = c.add("while", state, [init], f", condition={cn}, body={bn}", pool=False)
    c.add("get-tuple-element", s, [w], ", index=1")


def _op_conditional(g: Generator, c: CompBuilder) -> None:
    rng = g.rng
    x = g.need(c, types=NUMERIC_TYPES)
    s = c.array(x)
    n = rng.choice((2, 2, 3))
    boolean = n == 2 and rng.random() < 0.5
    branches = [g.sub("branch", [s], lambda cc, p: _elementwise_body(g, cc, p[0])) for _ in range(n)]
    if g.bad("computation", "conditional"):  # a branch returning another element type
        t2 = g.pick_type(NUMERIC_TYPES - {s.element_type})
        branches[-1] = g.sub("branch", [s], lambda cc, p: cc.add("convert", A(t2, s.dimensions), [p[0]]))
    if boolean:
        sel = g.need(c, "pred", ())
        attrs = f", true_computation={branches[0]}, false_computation={branches[1]}"
    else:
        sel = g.index_scalar(c, n, "s32")  # out-of-range selectors run the last branch
        attrs = ", branch_computations={" + ", ".join(branches) + "}"
    c.add("conditional", s, [sel] + [x] * n, attrs)


def _op_call(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, types=NUMERIC_TYPES)
    s = c.array(x)
    fn = g.sub("callee", [s], lambda cc, p: _elementwise_body(g, cc, p[0]))
    c.add("call", s, [x], f", to_apply={fn}")


def _op_tuple(g: Generator, c: CompBuilder) -> None:
    xs = [g.need(c) for _ in range(g.rng.randint(1, 3))]
    shape = TupleShape(tuple(c.shape(v) for v in xs))
    t = c.add("tuple", shape, xs, pool=False)
    if g.bad("attribute", "get-tuple-element"):
        c.add("get-tuple-element", shape.elements[0], [t], f", index={len(xs)}")
        return
    _unpack(c, c.insts[-1])


def _op_reduce_precision(g: Generator, c: CompBuilder) -> None:
    x = g.need(c, types=F_TYPES)
    s = c.array(x)
    e, m = g.rng.choice(((5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (2, 1)))
    c.add("reduce-precision", s, [x], f", exponent_bits={e}, mantissa_bits={m}")


OPS: list[tuple[Callable[[Generator, CompBuilder], None], int]] = [
    (_op_unary, 10), (_op_binary, 10), (_op_compare, 4), (_op_select_clamp, 3), (_op_convert, 5),
    (_op_bitcast_convert, 2), (_op_broadcast, 2), (_op_reshape, 2), (_op_transpose, 2),
    (_op_slice, 2), (_op_concatenate, 2), (_op_pad, 2), (_op_reverse, 1), (_op_iota, 1),
    (_op_dynamic_slice, 2), (_op_dynamic_update_slice, 2), (_op_reduce, 4), (_op_reduce_window, 3),
    (_op_dot, 3), (_op_convolution, 3), (_op_gather, 3), (_op_scatter, 3), (_op_sort, 2),
    (_op_map, 1), (_op_while, 1), (_op_conditional, 1), (_op_call, 1), (_op_tuple, 1),
    (_op_reduce_precision, 1),
]


def generate(seed: int, **kw: Any) -> Case:
    """The module and inputs of ``seed`` (the same on every machine and run)."""
    return Generator(seed, **kw).case(OPS)
