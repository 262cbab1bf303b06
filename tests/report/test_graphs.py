"""Graph data, DOT and SVG for computations, fusions and neighbourhoods."""
from __future__ import annotations

import json
import re

import pytest

import hloscope
from hloscope.cli.main import main
from hloscope.errors import InputError
from hloscope.ir.opcode import Opcode
from hloscope.report.graphs import computation_graph, dot_available, neighbourhood_graph, render_svg
from tests.conftest import SEED_FILES


@pytest.fixture(scope="module")
def m000():
    return hloscope.load(SEED_FILES["000"])


def dot_nodes(dot: str) -> int:
    return len(re.findall(r"^\s*\"[^\"]+\" \[label=", dot, re.M))


def dot_edges(dot: str) -> int:
    return len(re.findall(r"^\s*\"[^\"]+\" -> \"[^\"]+\";", dot, re.M))


def test_dot_of_seed_000_entry_has_every_instruction(m000):
    entry = m000.entry
    dot = computation_graph(entry).to_dot()
    assert dot.startswith("digraph")
    assert dot_nodes(dot) == len(entry.instructions) == 49
    assert dot_edges(dot) == sum(len(i.operands) for i in entry.instructions)


def test_expanding_a_fusion_inlines_its_body(m000):
    entry = m000.entry
    fusion = next(i for i in entry.instructions if i.opcode is Opcode.FUSION)
    body = fusion.called_computations[0]
    g = computation_graph(entry, expand={fusion.name})
    assert len(g.nodes) == len(entry.instructions) - 1 + len(body.instructions)
    assert {n.cluster for n in g.nodes} == {None, fusion.name}
    ids = {n.id for n in g.nodes}
    assert all(e.source in ids and e.target in ids for e in g.edges)
    assert "subgraph \"cluster_" in g.to_dot()
    # The collapsed form names the body so a viewer can expand it.
    collapsed = {n.name: n for n in computation_graph(entry).nodes}
    assert collapsed[fusion.name].fused_computation == body.name


def test_neighbourhood(m000):
    entry = m000.entry
    center = next(i for i in entry.instructions if i.opcode is Opcode.FUSION)
    g = neighbourhood_graph(entry, center.name, depth=1)
    expected = {center.name, *(o.name for o in center.operands), *(u.name for u in entry.users(center))}
    assert {n.name for n in g.nodes} == expected
    assert g.center == center.name
    assert len(neighbourhood_graph(entry, center.name, depth=50).nodes) <= len(entry.instructions)
    with pytest.raises(InputError):
        neighbourhood_graph(entry, "no-such-instruction", 1)


def test_graph_json_round_trips(m000):
    g = computation_graph(m000.entry)
    assert json.loads(json.dumps(g.to_json()))["computation"] == m000.entry.name


@pytest.mark.skipif(not dot_available(), reason="Graphviz 'dot' is not installed")
def test_svg_via_graphviz(m000):
    svg = render_svg(computation_graph(m000.entry).to_dot())
    assert "<svg" in svg and svg.count("<g id=\"node") == 49


def test_cli_graph_dot_and_json(tmp_path, m000):
    dot = tmp_path / "g.dot"
    assert main(["graph", str(SEED_FILES["000"]), "-o", str(dot)]) == 0
    assert dot_nodes(dot.read_text()) == 49
    js = tmp_path / "g.json"
    assert main(["graph", str(SEED_FILES["003"]), "--around", "fusion.592", "--depth", "1", "-o", str(js)]) == 0
    assert json.loads(js.read_text())["center"] == "fusion.592"
    assert main(["graph", str(SEED_FILES["000"]), "-o", str(tmp_path / "g.png")]) == 2


@pytest.mark.skipif(not dot_available(), reason="Graphviz 'dot' is not installed")
def test_cli_graph_svg_via_graphviz(tmp_path):
    svg = tmp_path / "g.svg"
    name = next(c.name for c in hloscope.load(SEED_FILES["000"]).computations if c.name.startswith("fused"))
    assert main(["graph", str(SEED_FILES["000"]), "--computation", name, "--graphviz", "-o", str(svg)]) == 0
    assert "<svg" in svg.read_text() and 'class="node"' in svg.read_text()
