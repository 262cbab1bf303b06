"""Computation graphs as data: nodes and edges, fusions collapsed or expanded, neighbourhoods, DOT and SVG.

A :class:`Graph` is plain data (``to_json()``) so the HTML page can lay it out in the browser,
and it prints as Graphviz DOT (``to_dot()``). ``graph_svg.graph_to_svg`` draws it as SVG in
Python (what ``hloscope graph -o x.svg`` writes); ``render_svg`` asks Graphviz's ``dot`` instead.
``group_by_namespace`` makes a big computation drawable: one node per op_name namespace
(Note [Namespace groups]).

Note [Fusion nodes]
-------------------
A fusion instruction is one node whose ``fused_computation`` names its body. Expanding it (the
``expand`` argument) inlines the body as a cluster: its nodes get ids ``"<fusion>/<inner>"``,
the fusion's operands feed the body's parameters, and the body's root feeds the fusion's users.
The collapsed node is then dropped. Only one level is expanded: a fusion inside a fusion body
stays collapsed.
"""
from __future__ import annotations

import shutil
import subprocess
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from hloscope.errors import InputError
from hloscope.ir.computation import Computation
from hloscope.ir.instruction import Instruction
from hloscope.ir.opcode import Opcode

__all__ = [
    "GraphNode",
    "GraphEdge",
    "Graph",
    "computation_graph",
    "neighbourhood_graph",
    "group_by_namespace",
    "group_by_order",
    "namespace_depth_for",
    "FAMILY_COLOURS",
    "dot_available",
    "render_svg",
]


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One drawn instruction. ``cluster`` names the expanded fusion it belongs to, if any."""

    id: str
    name: str
    opcode: str
    family: str
    shape: str
    fused_computation: str | None = None
    called: tuple[str, ...] = ()
    is_root: bool = False
    cluster: str | None = None
    op_name: str | None = None
    members: int = 0  # a namespace group: how many instructions it stands for (0: one instruction)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "opcode": self.opcode, "family": self.family,
                "shape": self.shape, "fused_computation": self.fused_computation,
                "called": list(self.called), "is_root": self.is_root, "cluster": self.cluster,
                "op_name": self.op_name, "members": self.members}


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """Data flows from ``source`` to ``target`` as the target's operand number ``operand``."""

    source: str
    target: str
    operand: int

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "operand": self.operand}


@dataclass(slots=True)
class Graph:
    """Nodes and edges of (part of) one computation, in instruction order."""

    computation: str
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    center: str | None = None  # the instruction a neighbourhood graph is drawn around

    def to_json(self) -> dict[str, Any]:
        return {"computation": self.computation, "center": self.center,
                "nodes": [n.to_json() for n in self.nodes], "edges": [e.to_json() for e in self.edges]}

    def to_dot(self) -> str:
        """Graphviz DOT text: top-to-bottom, one box per node, expanded fusions as clusters."""
        out = [f"digraph {_dot_id(self.computation)} {{",
               "  rankdir=TB;",
               '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
               '  edge [color="#8a94a6", arrowsize=0.6];']
        clusters: dict[str | None, list[GraphNode]] = {}
        for n in self.nodes:
            clusters.setdefault(n.cluster, []).append(n)
        for cluster, nodes in clusters.items():
            indent = "  "
            if cluster is not None:
                out.append(f"  subgraph {_dot_id('cluster_' + cluster)} {{")
                out.append(f"    label={_dot_id(cluster)}; style=dashed; color=\"#b0b8c8\";")
                indent = "    "
            for n in nodes:
                label = f"{n.name}\\n{n.opcode} {n.shape}" if len(n.shape) <= 60 else f"{n.name}\\n{n.opcode}"
                if n.members:
                    label = f"{n.name}\\n{n.members} instructions"
                fill = FAMILY_COLOURS.get(n.family, "#eef1f6")
                extra = ", penwidth=2" if n.id == self.center or n.is_root else ""
                out.append(f"{indent}{_dot_id(n.id)} [label={_dot_label(label)}, fillcolor=\"{fill}\"{extra}];")
            if cluster is not None:
                out.append("  }")
        for e in self.edges:
            out.append(f"  {_dot_id(e.source)} -> {_dot_id(e.target)};")
        out.append("}")
        return "\n".join(out) + "\n"


# Light fills by opcode family, shared in spirit with the page's palette.
FAMILY_COLOURS = {
    "linear algebra": "#ffd8b1",
    "collective": "#f4c2d7",
    "control flow": "#d7c8f4",
    "reduction": "#c8e6c9",
    "source": "#e3eaf4",
    "custom": "#ffe9a8",
    "shape": "#eef1f6",
    "indexing": "#d0ecf0",
}


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _dot_id(text: str) -> str:
    return '"' + _dot_escape(text) + '"'


def _dot_label(label: str) -> str:
    # The label already holds DOT's "\n" line breaks; escape only quotes and lone backslashes.
    parts = label.split("\\n")
    return '"' + "\\n".join(_dot_escape(p) for p in parts) + '"'


def _node(inst: Instruction, node_id: str | None = None, cluster: str | None = None) -> GraphNode:
    called = tuple(c.name for c in inst.called_computations)
    fused = called[0] if inst.opcode is Opcode.FUSION and called else None
    return GraphNode(
        id=node_id or inst.name,
        name=inst.name,
        opcode=inst.opcode.text,
        family=inst.opcode.family.value,
        shape=inst.shape.to_text(layout=False),
        fused_computation=fused,
        called=called,
        is_root=inst.is_root,
        cluster=cluster,
        op_name=inst.metadata.op_name if inst.metadata is not None else None,
    )


def computation_graph(comp: Computation, *, expand: set[str] | frozenset[str] = frozenset(),
                      max_nodes: int | None = None) -> Graph:
    """The graph of ``comp``, with the fusions named in ``expand`` inlined (see Note [Fusion nodes]).

    ``max_nodes`` keeps the first that many instructions (in order) when set; edges to dropped
    instructions are left out.
    """
    insts = comp.instructions if max_nodes is None else comp.instructions[:max_nodes]
    g = Graph(comp.name)
    kept = {id(i) for i in insts}
    # Where an instruction's value comes from / goes to when its fusion is expanded.
    out_id: dict[int, str] = {}
    for inst in insts:
        fused = inst.called_computations[0] if inst.opcode is Opcode.FUSION and inst.called_computations else None
        if fused is not None and inst.name in expand:
            for inner in fused.instructions:
                g.nodes.append(_node(inner, f"{inst.name}/{inner.name}", cluster=inst.name))
                for k, op in enumerate(inner.operands):
                    g.edges.append(GraphEdge(f"{inst.name}/{op.name}", f"{inst.name}/{inner.name}", k))
            for k, op in enumerate(inst.operands):
                if id(op) in kept and k < len(fused.parameters):
                    g.edges.append(GraphEdge(out_id.get(id(op), op.name),
                                             f"{inst.name}/{fused.parameters[k].name}", k))
            out_id[id(inst)] = f"{inst.name}/{fused.root.name}"
            continue
        g.nodes.append(_node(inst))
        for k, op in enumerate(inst.operands):
            if id(op) in kept:
                g.edges.append(GraphEdge(out_id.get(id(op), op.name), inst.name, k))
    return g


def neighbourhood_graph(comp: Computation, center: str, depth: int = 2) -> Graph:
    """Instructions of ``comp`` within ``depth`` operand or user steps of ``center``.

    Raises InputError when ``center`` is not an instruction of ``comp``.
    """
    try:
        start = comp.instruction(center)
    except KeyError:
        raise InputError(f"no instruction {center!r} in computation {comp.name}") from None
    dist = {id(start): 0}
    queue = deque([start])
    while queue:
        inst = queue.popleft()
        d = dist[id(inst)]
        if d >= depth:
            continue
        for nxt in (*inst.operands, *comp.users(inst)):
            if id(nxt) not in dist:
                dist[id(nxt)] = d + 1
                queue.append(nxt)
    g = Graph(comp.name, center=center)
    for inst in comp.instructions:
        if id(inst) in dist:
            g.nodes.append(_node(inst))
            for k, op in enumerate(inst.operands):
                if id(op) in dist:
                    g.edges.append(GraphEdge(op.name, inst.name, k))
    return g


# Note [Namespace groups]
# -----------------------
# jax names every instruction by where it was traced: ``jit(step)/jvp(GPT)/block0/attn/dot``.
# Grouping a computation by the first ``depth`` parts of those op_names (the leaf op itself is
# never a namespace) turns a training step's thousands of instructions into its layers and
# passes: forward blocks, the loss, the backward blocks, the optimizer. Instructions without an
# op_name stay single nodes, except parameters and constants, one group each. The report's graph offers
# the same grouping, interactively (report/assets/graph_layout.js).


def _namespace(op_name: str | None, depth: int) -> str | None:
    if not op_name or depth <= 0:
        return None
    parts = op_name.split("/")
    if len(parts) < 2:
        return None
    return "/".join(parts[: min(depth, len(parts) - 1)])


# Without an op_name, a step's many parameters and constants would each stay a node beside a
# handful of groups; they are grouped by kind instead (the inputs, the literals).
_GROUPED_WITHOUT_OP_NAME = {"parameter": "parameters", "constant": "constants"}


def group_by_namespace(graph: Graph, depth: int) -> Graph:
    """``graph`` with the nodes that share an op_name namespace of ``depth`` parts merged into one
    (Note [Namespace groups]); edges between groups are kept once, edges inside one dropped."""
    out = Graph(graph.computation, center=graph.center)
    owner: dict[str, str] = {}
    groups: dict[str, int] = {}
    members: dict[str, int] = {}
    for node in graph.nodes:
        ns = _namespace(node.op_name, depth)
        if ns is None and node.opcode in _GROUPED_WITHOUT_OP_NAME:
            ns = _GROUPED_WITHOUT_OP_NAME[node.opcode]
        if ns is None:
            owner[node.id] = node.id
            out.nodes.append(node)
            continue
        gid = "ns:" + ns
        owner[node.id] = gid
        if gid not in groups:
            groups[gid] = len(out.nodes)
            out.nodes.append(node)  # a placeholder, replaced below once the count is known
        members[gid] = members.get(gid, 0) + 1
    for gid, k in groups.items():
        out.nodes[k] = GraphNode(id=gid, name=gid[3:], opcode="namespace", family="group", shape="",
                                 op_name=gid[3:], members=members[gid])
    seen: set[tuple[str, str]] = set()
    for e in graph.edges:
        s, t = owner.get(e.source, e.source), owner.get(e.target, e.target)
        if s != t and (s, t) not in seen:
            seen.add((s, t))
            out.edges.append(GraphEdge(s, t, e.operand))
    return out


_NOTABLE_FAMILIES = frozenset({"linear algebra", "collective", "custom", "control flow"})


def group_by_order(graph: Graph, segments: int) -> Graph:
    """``graph`` cut into ``segments`` runs of consecutive nodes in program order, each drawn as
    one node naming its first and last instruction and its most frequent opcodes; edges between
    runs are kept once. For a big computation without op_names to group by (a stripped dump):
    it shows how the program's phases feed each other, and where its collectives and dots sit."""
    from collections import Counter

    nodes = graph.nodes
    size = max(1, -(-len(nodes) // max(segments, 1)))
    out = Graph(graph.computation, center=graph.center)
    owner: dict[str, str] = {}
    for start in range(0, len(nodes), size):
        run = nodes[start:start + size]
        gid = f"seg:{start // size}"
        for node in run:
            owner[node.id] = gid
        # What a reader looks for first: the matmuls, collectives, custom calls and loops.
        notable = Counter(n.opcode for n in run if n.family in _NOTABLE_FAMILIES).most_common(3)
        common = notable or Counter(n.opcode for n in run).most_common(2)
        summary = f"{len(run)} instr.: " + ", ".join(f"{c} {op}" for op, c in common)
        name = run[0].name if len(run) == 1 else f"{run[0].name} … {run[-1].name}"
        out.nodes.append(GraphNode(id=gid, name=name, opcode="segment", family="group", shape=summary,
                                   members=len(run), is_root=any(n.is_root for n in run)))
    seen: set[tuple[str, str]] = set()
    for e in graph.edges:
        s, t = owner.get(e.source, e.source), owner.get(e.target, e.target)
        if s != t and (s, t) not in seen:
            seen.add((s, t))
            out.edges.append(GraphEdge(s, t, e.operand))
    return out


def namespace_depth_for(graph: Graph, max_groups: int, max_nodes: int) -> int | None:
    """The deepest op_name grouping of ``graph`` into at most ``max_groups`` namespaces and
    ``max_nodes`` nodes in all (instructions without an op_name stay nodes); None when even one
    level does not fit or no instruction has an op_name."""
    best = None
    for depth in range(1, 9):
        spaces = {_namespace(n.op_name, depth) for n in graph.nodes} - {None}
        if not spaces:
            return None
        single = sum(1 for n in graph.nodes if _namespace(n.op_name, depth) is None
                     and n.opcode not in _GROUPED_WITHOUT_OP_NAME)
        if len(spaces) > max_groups or len(spaces) + single + 2 > max_nodes:
            break
        best = depth
        if all(_namespace(n.op_name, depth + 1) == _namespace(n.op_name, depth) for n in graph.nodes):
            break  # deeper levels change nothing
    return best


def dot_available() -> bool:
    """True when Graphviz's ``dot`` program is on PATH."""
    return shutil.which("dot") is not None


def render_svg(dot_text: str, *, timeout: float = 60.0) -> str:
    """SVG text for ``dot_text``, drawn by Graphviz ``dot``; InputError when dot is missing or fails."""
    exe = shutil.which("dot")
    if exe is None:
        raise InputError("Graphviz 'dot' is not installed; write .dot instead, or install graphviz")
    try:
        proc = subprocess.run([exe, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise InputError(f"Graphviz 'dot' took longer than {timeout:.0f} s; try --around NAME --depth N") from None
    if proc.returncode != 0:
        raise InputError("Graphviz 'dot' failed: " + proc.stderr.decode("utf-8", "replace").strip())
    return proc.stdout.decode("utf-8")
