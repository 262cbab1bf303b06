"""Drawing a Graph as SVG in Python: a layered (Sugiyama-style) layout and its rendering.

``hloscope graph -o x.svg`` needs no Graphviz: this module lays the graph out top to bottom,
data flowing down, and writes a self-contained SVG (hover a box for its full text). Graphviz's
``dot`` gave better pictures of small graphs but took more than a minute on a training step's
few thousand instructions; this takes a second or two on 20,000.

Note [Layered layout]
---------------------
The four classic steps (Sugiyama, Tagawa and Toda, 1981; Graphviz's dot and the report's
vendored dagre follow them), each kept simple and linear in the graph's size:

1. Acyclic: nodes come in the Graph's order, which is a topological order of an HLO
   computation (operands before users); an edge against that order (a namespace group that
   feeds an earlier one) is laid out as if reversed and drawn as it is.
2. Layers: the longest path from the sources, then every source (parameter, constant) moved
   down to just above its first user, so that a weight does not hang at the top of the page.
3. Order within layers: an edge over several layers passes through one dummy point per layer
   (up to a budget; longer edges beyond it are drawn straight), and four sweeps of the
   barycentre heuristic, down and up, reduce crossings.
4. Coordinates: each layer is packed left to right in that order, then pulled a few times
   towards the mean position of each node's neighbours in the layers above and below, keeping
   the order and the spacing (a simplified form of Brandes and Koepf's balancing).
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from hloscope.report.graphs import FAMILY_COLOURS, Graph, GraphNode

__all__ = ["LayoutResult", "layered_layout", "graph_to_svg"]

_FONT = 10  # px
_CHAR = 6.1  # px per character at _FONT in Helvetica, on average
_MAX_CHARS = 40
_NODE_H = 32.0
_H_GAP = 18.0
_V_GAP = 34.0
_MARGIN = 20.0
# Dummy points per real node (and in all) before the longest edges are drawn straight instead
# (a training step's activations cross most of the graph to reach the backward pass); the
# layout's time grows with nodes and dummies together.
_DUMMY_BUDGET = 12
_DUMMY_MAX = 40_000


@dataclass(frozen=True, slots=True)
class LayoutResult:
    """Where each node's box is (centre x, top y, width, height) and each edge's points."""

    boxes: list[tuple[float, float, float, float]]
    edges: list[list[tuple[float, float]]]
    width: float
    height: float
    layers: int


def layered_layout(sizes: Sequence[tuple[float, float]], edges: Sequence[tuple[int, int]]) -> LayoutResult:
    """Lay out nodes ``0..n-1`` of the given ``(width, height)`` joined by ``edges`` (source,
    target indices), data flowing down (Note [Layered layout])."""
    n = len(sizes)
    # 1. Acyclic: rank the nodes so that few edges point backwards (none in a DAG), lay those
    # out reversed; duplicate edges and self-loops are dropped for the layout.
    rank = _acyclic_order(n, edges)
    flow: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for s, t in edges:
        if s == t:
            continue
        a, b = (rank[s], rank[t]) if rank[s] < rank[t] else (rank[t], rank[s])
        if (a, b) not in seen:
            seen.add((a, b))
            flow.append((a, b))
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in flow:
        preds[b].append(a)
        succs[a].append(b)
    by_rank = [0] * n
    for v, r in enumerate(rank):
        by_rank[r] = v
    sizes = [sizes[v] for v in by_rank]
    # 2. Layers: longest path from the sources (rank order is topological), sources pulled down.
    layer = [0] * n
    for v in range(n):
        if preds[v]:
            layer[v] = max(layer[u] for u in preds[v]) + 1
    for v in range(n):
        if not preds[v] and succs[v]:
            layer[v] = max(0, min(layer[w] for w in succs[v]) - 1)
    # 3. Dummy points for edges over several layers, shortest first, within the budget.
    budget = min(_DUMMY_BUDGET * max(n, 1), _DUMMY_MAX)
    points: dict[tuple[int, int], list[int]] = {}
    node_layer = list(layer)
    up: list[list[int]] = [[] for _ in range(n)]  # neighbours in the layer above (real or dummy)
    down: list[list[int]] = [[] for _ in range(n)]
    for a, b in sorted(flow, key=lambda e: layer[e[1]] - layer[e[0]]):
        span = layer[b] - layer[a]
        chain = [a]
        if 1 < span <= budget + 1:
            budget -= span - 1
            for k in range(layer[a] + 1, layer[b]):
                node_layer.append(k)
                up.append([])
                down.append([])
                chain.append(len(node_layer) - 1)
            points[(a, b)] = chain[1:]
        chain.append(b)
        for u, w in zip(chain, chain[1:]):
            down[u].append(w)
            up[w].append(u)
    total = len(node_layer)
    depth = max(node_layer, default=-1) + 1
    rows: list[list[int]] = [[] for _ in range(depth)]
    for v in range(total):  # first in index order: close to the program's order
        rows[node_layer[v]].append(v)
    pos = [0.0] * total
    for row in rows:
        for i, v in enumerate(row):
            pos[v] = float(i)
    for sweep in range(4):
        order = range(1, depth) if sweep % 2 == 0 else range(depth - 2, -1, -1)
        for k in order:
            row = rows[k]
            nbrs = up if sweep % 2 == 0 else down
            keyed = []
            for v in row:
                near = nbrs[v]
                keyed.append((sum(pos[u] for u in near) / len(near) if near else pos[v], pos[v], v))
            keyed.sort()
            rows[k] = [v for _, _, v in keyed]
            for i, v in enumerate(rows[k]):
                pos[v] = float(i)
    # 4. Coordinates: packed, then balanced towards the neighbours' mean a few times.
    width = [sizes[v][0] if v < n else 0.0 for v in range(total)]
    x = [0.0] * total
    for row in rows:
        at = 0.0
        for v in row:
            x[v] = at + width[v] / 2
            at += width[v] + (_H_GAP if v < n else _H_GAP / 2)
    for it in range(6):
        nbrs = up if it % 2 == 0 else down
        for row in (rows if it % 2 == 0 else rows[::-1]):
            want = [(sum(x[u] for u in nbrs[v]) / len(nbrs[v])) if nbrs[v] else x[v] for v in row]
            _place(row, want, width, x)
    left = min((x[v] - width[v] / 2 for v in range(total)), default=0.0)
    shift = _MARGIN - left
    heights = [max((sizes[v][1] for v in row if v < n), default=0.0) for row in rows]
    tops, y = [], _MARGIN
    for h in heights:
        tops.append(y)
        y += h + _V_GAP
    boxes = [(x[v] + shift, tops[layer[v]], sizes[v][0], sizes[v][1]) for v in range(n)]
    drawn = []
    for s, t in edges:
        if s == t:
            continue
        s, t = rank[s], rank[t]
        a, b = (s, t) if s < t else (t, s)
        via = [(x[d] + shift, tops[node_layer[d]] + heights[node_layer[d]] / 2) for d in points.get((a, b), [])]
        start = (boxes[a][0], boxes[a][1] + boxes[a][3])
        end = (boxes[b][0], boxes[b][1])
        line = [start, *via, end]
        drawn.append(line if s < t else line[::-1])
    right = max((x[v] + width[v] / 2 for v in range(total)), default=0.0) + shift
    return LayoutResult([boxes[r] for r in rank], drawn, right + _MARGIN, y - _V_GAP + _MARGIN, depth)


def _acyclic_order(n: int, edges: Sequence[tuple[int, int]]) -> list[int]:
    """Each node's rank in an order with few backward edges: Eades, Lin and Smyth's greedy
    heuristic (1993), which gives a topological order of a DAG and keeps the input order
    among nodes it does not need to move (an HLO computation's order is already topological)."""
    out: list[set[int]] = [set() for _ in range(n)]
    inc: list[set[int]] = [set() for _ in range(n)]
    for s, t in edges:
        if s != t:
            out[s].add(t)
            inc[t].add(s)
    if all(s < t for s in range(n) for t in out[s]):
        return list(range(n))  # already in order (every computation not grouped)
    alive = [True] * n
    head: list[int] = []
    tail: list[int] = []
    heap = [(-(len(out[v]) - len(inc[v])), v) for v in range(n)]
    heapq.heapify(heap)
    sinks = [v for v in range(n) if not out[v]]
    sources = [v for v in range(n) if not inc[v] and out[v]]

    def remove(v: int) -> None:
        alive[v] = False
        for w in out[v]:
            inc[w].discard(v)
            if alive[w] and not inc[w] and out[w]:
                sources.append(w)
            heapq.heappush(heap, (-(len(out[w]) - len(inc[w])), w))
        for u in inc[v]:
            out[u].discard(v)
            if alive[u] and not out[u]:
                sinks.append(u)
            heapq.heappush(heap, (-(len(out[u]) - len(inc[u])), u))

    left = n
    while left:
        if sinks:
            v = sinks.pop()
            if alive[v]:
                tail.append(v)
                remove(v)
                left -= 1
            continue
        if sources:
            v = sources.pop()
            if alive[v] and not inc[v]:
                head.append(v)
                remove(v)
                left -= 1
            continue
        delta, v = heapq.heappop(heap)
        if alive[v] and -delta == len(out[v]) - len(inc[v]):
            head.append(v)
            remove(v)
            left -= 1
    order = head + tail[::-1]
    rank = [0] * n
    for r, v in enumerate(order):
        rank[v] = r
    return rank


def _place(row: list[int], want: list[float], width: list[float], x: list[float]) -> None:
    """Move ``row``'s nodes towards ``want`` keeping their order and the minimum spacing: the
    mean of a left-to-right and a right-to-left packing."""
    k = len(row)
    if not k:
        return
    gap = [(width[row[i - 1]] + width[row[i]]) / 2 + _H_GAP for i in range(1, k)]
    fwd = list(want)
    for i in range(1, k):
        fwd[i] = max(fwd[i], fwd[i - 1] + gap[i - 1])
    bwd = list(want)
    for i in range(k - 2, -1, -1):
        bwd[i] = min(bwd[i], bwd[i + 1] - gap[i])
    for i, v in enumerate(row):
        x[v] = (fwd[i] + bwd[i]) / 2
    for i in range(1, k):  # the mean of two valid packings can still crowd where they disagree
        x[row[i]] = max(x[row[i]], x[row[i - 1]] + gap[i - 1])


def _lines(node: GraphNode) -> tuple[str, str]:
    if node.members and node.opcode == "segment":
        return node.name, node.shape
    if node.members:  # the last two parts: jvp(GPT)/block0 against transpose(jvp(GPT))/block0
        return "/".join(node.name.split("/")[-2:]), f"{node.members:,} instructions"
    second = f"{node.opcode} {node.shape}" if node.shape else node.opcode
    return node.name, second


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 1] + "…"


def graph_to_svg(graph: Graph) -> str:
    """``graph`` drawn as standalone SVG text (Note [Layered layout])."""
    index = {node.id: k for k, node in enumerate(graph.nodes)}
    sizes = []
    for node in graph.nodes:
        a, b = _lines(node)
        sizes.append((max(60.0, 14 + _CHAR * max(len(_clip(a)), len(_clip(b)))), _NODE_H))
    pairs = [(index[e.source], index[e.target]) for e in graph.edges if e.source in index and e.target in index]
    lay = layered_layout(sizes, pairs)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width:.0f}" height="{lay.height:.0f}" '
           f'viewBox="0 0 {lay.width:.0f} {lay.height:.0f}" font-family="Helvetica, Arial, sans-serif" '
           f'font-size="{_FONT}">',
           f"<title>{escape(graph.computation)}</title>",
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker></defs>',
           '<rect width="100%" height="100%" fill="#ffffff"/>']
    clusters: dict[str, list[tuple[float, float, float, float]]] = {}
    for node, box in zip(graph.nodes, lay.boxes):
        if node.cluster is not None:
            clusters.setdefault(node.cluster, []).append(box)
    for name, boxes in clusters.items():
        x0 = min(cx - w / 2 for cx, _, w, _ in boxes) - 8
        y0 = min(top for _, top, _, _ in boxes) - 16
        x1 = max(cx + w / 2 for cx, _, w, _ in boxes) + 8
        y1 = max(top + h for _, top, _, h in boxes) + 8
        out.append(f'<g class="cluster"><rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" '
                   f'height="{y1 - y0:.1f}" rx="6" fill="none" stroke="#b0b8c8" stroke-dasharray="4 3"/>'
                   f'<text x="{x0 + 6:.1f}" y="{y0 + 11:.1f}" fill="#6b7588">{escape(_clip(name))}</text></g>')
    out.append('<g class="edges" fill="none" stroke="#8a94a6" stroke-width="1">')
    for line in lay.edges:
        out.append(f'<path d="{_curve(line)}" marker-end="url(#arrow)"/>')
    out.append("</g>")
    for node, (cx, top, w, h) in zip(graph.nodes, lay.boxes):
        a, b = _lines(node)
        fill = "#ece6fb" if node.members else FAMILY_COLOURS.get(node.family, "#eef1f6")
        bold = node.id == graph.center or node.is_root
        tip = f"{node.name}\n{node.opcode} {node.shape}" if not node.members else \
            f"{node.name}\n{node.members:,} instructions" + (
                f" in program order: {node.shape}" if node.opcode == "segment" else " grouped by op_name")
        if node.fused_computation:
            tip += f"\nfused computation: {node.fused_computation}"
        out.append(f'<g class="node" id="{escape(node.id, {chr(34): "&quot;"})}">'
                   f"<title>{escape(tip)}</title>"
                   f'<rect x="{cx - w / 2:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" rx="5" '
                   f'fill="{fill}" stroke="{"#1f2937" if bold else "#9aa3b5"}" '
                   f'stroke-width="{2 if bold else 1}"/>'
                   f'<text x="{cx:.1f}" y="{top + 13:.1f}" text-anchor="middle" font-weight="600">'
                   f"{escape(_clip(a))}</text>"
                   f'<text x="{cx:.1f}" y="{top + 26:.1f}" text-anchor="middle" fill="#4b5563">'
                   f"{escape(_clip(b))}</text></g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _curve(line: list[tuple[float, float]]) -> str:
    """An SVG path through ``line``'s points, vertical cubic curves between consecutive ones."""
    (x0, y0), rest = line[0], line[1:]
    parts = [f"M{x0:.1f},{y0:.1f}"]
    px, py = x0, y0
    for x, y in rest:
        my = (py + y) / 2
        parts.append(f"C{px:.1f},{my:.1f} {x:.1f},{my:.1f} {x:.1f},{y:.1f}")
        px, py = x, y
    return "".join(parts)
