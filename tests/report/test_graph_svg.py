"""``hloscope graph -o x.svg`` without Graphviz: the layered layout, namespace and program-order
groups, and whole real modules drawn quickly (Note [Layered layout] in report/graph_svg.py)."""
from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

import hloscope
from hloscope.cli.main import main
from hloscope.report.graph_svg import graph_to_svg, layered_layout
from hloscope.report.graphs import computation_graph, group_by_namespace, group_by_order
from tests.conftest import SEED_FILES

SVG = "{http://www.w3.org/2000/svg}"


def _svg(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == SVG + "svg"
    return root


def _nodes(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(SVG + "g") if g.get("class") == "node"]


def test_a_dag_flows_down_and_boxes_do_not_overlap() -> None:
    # A diamond with a long edge past it, and a node wider than the rest.
    sizes = [(80.0, 32.0), (200.0, 32.0), (80.0, 32.0), (80.0, 32.0), (80.0, 32.0)]
    edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (0, 4)]
    lay = layered_layout(sizes, edges)
    for (s, t), line in zip(edges, lay.edges):
        assert line[0][1] < line[-1][1]  # every edge of a DAG points down the page
        assert line[0][1] == lay.boxes[s][1] + lay.boxes[s][3] and line[-1][1] == lay.boxes[t][1]
    assert len(lay.edges[-1]) == 2 + 2  # 0 -> 4 spans three layers: two bends
    by_row: dict[float, list[tuple[float, float]]] = {}
    for cx, top, w, _ in lay.boxes:
        by_row.setdefault(top, []).append((cx - w / 2, cx + w / 2))
    for spans in by_row.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    assert all(0 <= cx - w / 2 and cx + w / 2 <= lay.width for cx, _, w, _ in lay.boxes)


def test_a_cycle_is_drawn_with_one_edge_against_the_flow() -> None:
    # Namespace groups can feed each other both ways (forward and backward passes).
    sizes = [(60.0, 32.0)] * 4
    edges = [(1, 2), (2, 3), (3, 1), (0, 1)]
    lay = layered_layout(sizes, edges)
    upward = [line for line in lay.edges if line[0][1] > line[-1][1]]
    assert len(upward) == 1
    assert len({top for _, top, _, _ in lay.boxes}) == 4


def test_svg_of_seed_000_has_every_instruction_and_edge() -> None:
    m = hloscope.load(SEED_FILES["000"])
    g = computation_graph(m.entry)
    root = _svg(graph_to_svg(g))
    assert len(_nodes(root)) == len(g.nodes) == 49
    assert len([p for p in root.iter(SVG + "path") if p.get("marker-end")]) == len(g.edges)
    titles = {n.find(SVG + "title").text.split("\n")[0] for n in _nodes(root)}
    assert titles == {n.name for n in g.nodes}


def test_expanded_fusion_is_a_cluster() -> None:
    m = hloscope.load(SEED_FILES["000"])
    fusion = next(i for i in m.entry.instructions if i.opcode.text == "fusion")
    root = _svg(graph_to_svg(computation_graph(m.entry, expand={fusion.name})))
    clusters = [g for g in root.iter(SVG + "g") if g.get("class") == "cluster"]
    assert len(clusters) == 1 and clusters[0].find(SVG + "text").text == fusion.name


def test_names_are_escaped() -> None:
    text = 'HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0), metadata={op_name="a<b>/&c"}\n}\n'
    g = computation_graph(hloscope.parse(text).entry)
    _svg(graph_to_svg(group_by_namespace(g, 1)))  # parses: < > & escaped
    _svg(graph_to_svg(g))


def test_cli_svg_needs_no_graphviz(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no 'dot' anywhere
    out = tmp_path / "g.svg"
    assert main(["graph", str(SEED_FILES["000"]), "-o", str(out)]) == 0
    assert len(_nodes(_svg(out.read_text()))) == 49
    assert "49 nodes" in capsys.readouterr().out
    # Asking for Graphviz without it is one clear line.
    assert main(["graph", str(SEED_FILES["000"]), "--graphviz", "-o", str(out)]) == 1
    assert "Graphviz 'dot' is not installed" in capsys.readouterr().err


def test_group_by_order_keeps_the_flow_between_runs() -> None:
    m = hloscope.load(SEED_FILES["003"])
    g = computation_graph(m.entry)
    grouped = group_by_order(g, 10)
    assert len(grouped.nodes) == 10
    assert sum(n.members for n in grouped.nodes) == len(g.nodes)
    assert all(n.opcode == "segment" and "instr.:" in n.shape for n in grouped.nodes)
    assert sum(n.is_root for n in grouped.nodes) == 1
    assert all(e.source != e.target for e in grouped.edges)
    assert len(_nodes(_svg(graph_to_svg(grouped)))) == 10


@pytest.fixture(scope="module")
def gpt():
    pytest.importorskip("flax")
    from hloscope.testing.models import build

    return build("gpt_dp8")


@pytest.mark.parametrize("stage", ["pre", "post"])
def test_whole_real_module_drawn_quickly(gpt, stage, tmp_path, monkeypatch, capsys) -> None:
    # Graphviz took more than 60 s on these and failed; the default now draws the post module
    # (525 instructions in the entry) by op_name namespace and the pre module (1,793, no
    # op_names) instruction by instruction.
    monkeypatch.setenv("PATH", str(tmp_path))
    path = tmp_path / f"{stage}.hlo"
    path.write_text(gpt.pre_text if stage == "pre" else gpt.post_text)
    out = tmp_path / "g.svg"
    started = time.perf_counter()
    assert main(["graph", str(path), "-o", str(out)]) == 0
    seconds = time.perf_counter() - started
    said = capsys.readouterr().out
    root = _svg(out.read_text())
    entry = hloscope.load(path).entry
    if stage == "post":
        assert "grouped by the first" in said and len(_nodes(root)) <= 100
        names = {n.find(SVG + "title").text.split("\n")[0] for n in _nodes(root)}
        assert "jit(gpt_dp8)/jvp(GPT)/block0" in {"/".join(x.split("/")[:3]) for x in names}
        assert main(["graph", str(path), "--group", "0", "-o", str(out)]) == 0
        assert len(_nodes(_svg(out.read_text()))) == len(entry.instructions)
    else:
        assert len(_nodes(root)) == len(entry.instructions)
    assert seconds < 60, seconds  # 1.5-5 s on this 2-core VM; Graphviz ran past 150 s
