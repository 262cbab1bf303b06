/* hloscope report page, part 4 of 6: graph data and layout.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
  // ---- graph: data ----------------------------------------------------------------------------
  // Mirrors report/graphs.py: fusions are one node; expanded ones inline their body as a cluster.
  // Instructions whose op_name shares a namespace form a cluster too, nested level by level
  // down to G.nsDepth (jit(f) / layer_3 / attention); a collapsed namespace is one node standing
  // for everything under it (Model Explorer's layers).
  function nsChain(r) {  // the instruction's namespaces, outermost first
    var o = r[C.op_name];
    if (!o || !G.nsDepth) return [];
    var parts = String(o).split("/"), out = [];
    for (var k = 1; k <= Math.min(G.nsDepth, parts.length - 1); k++) out.push(parts.slice(0, k).join("/"));
    return out;  // the leaf op itself is no namespace
  }
  function nsOf(r) { var c = nsChain(r); return c.length ? c[c.length - 1] : null; }
  function collapsedNs(r) {  // the outermost collapsed namespace holding the instruction, if any
    var c = nsChain(r);
    for (var k = 0; k < c.length; k++) if (G.collapsed[c[k]]) return c[k];
    return null;
  }
  // Edges are [from id, to id, the shape they carry]. An expanded fusion's body is drawn in a
  // cluster named after the fusion, and fusions inside it expand the same way, nested; g.parents
  // says which cluster holds which (a namespace holds the fusions of its instructions).
  function graphData(ci, keep, expanded) {
    var rows = comps[ci].instructions, nodes = [], edges = [], outId = {}, groupNode = {}, parents = {};
    function ownerOf(i) {  // the node id instruction i is drawn as (a collapsed namespace's, or its own)
      var ns = collapsedNs(rows[i]);
      return ns ? "ns:" + ns : (outId[i] || String(i));
    }
    function nest(chain, upTo) {  // each namespace inside the one before it
      for (var k = 1; k < upTo; k++) parents["n:" + chain[k]] = "n:" + chain[k - 1];
    }
    function expandBody(fc, pre, name, ns) {
      var inner = comps[fc].instructions, params = {}, out = {};
      inner.forEach(function (q, j) {
        var qc = q[C.called], qf = q[C.opcode] === "fusion" && qc.length && qc[0] >= 0, id = pre + j;
        if (qf && expanded[q[C.name]]) {
          parents["f:" + q[C.name]] = "f:" + name;
          var sub = expandBody(qc[0], id + "/", q[C.name], ns);
          q[C.operands].forEach(function (o, k) { if (o >= 0 && sub.params[k] != null) edges.push([out[o] || pre + o, sub.params[k], inner[o][C.shape]]); });
          out[j] = sub.root;
          return;
        }
        nodes.push({id: id, ci: fc, ii: j, cluster: name, ns: ns, fusion: qf ? qc[0] : null});
        q[C.operands].forEach(function (o) { if (o >= 0) edges.push([out[o] || pre + o, id, inner[o][C.shape]]); });
        if (q[C.opcode] === "parameter") { var m = /parameter\((\d+)\)/.exec(q[C.text]); if (m) params[m[1]] = id; }
      });
      var root = comps[fc].root;
      return {params: params, root: out[root] || pre + root};
    }
    rows.forEach(function (r, i) {
      if (keep && !keep[i]) return;
      var chain = nsChain(r), gns = collapsedNs(r), ns = chain.length ? chain[chain.length - 1] : null;
      if (gns) {
        var at = chain.indexOf(gns);
        nest(chain, at + 1);
        if (!groupNode[gns]) {
          groupNode[gns] = {id: "ns:" + gns, ci: ci, ii: i, group: gns, members: 0, ns: at > 0 ? chain[at - 1] : null};
          nodes.push(groupNode[gns]);
        }
        var ns0 = gns;
        groupNode[ns0].members++;
        r[C.operands].forEach(function (o) { if (o >= 0 && (!keep || keep[o])) edges.push([ownerOf(o), "ns:" + ns0, rows[o][C.shape]]); });
        return;
      }
      nest(chain, chain.length);
      var called = r[C.called], isFusion = r[C.opcode] === "fusion" && called.length && called[0] >= 0;
      if (isFusion && expanded[r[C.name]]) {
        if (ns) parents["f:" + r[C.name]] = "n:" + ns;
        var body = expandBody(called[0], i + "/", r[C.name], ns);
        r[C.operands].forEach(function (o, k) {
          if (o >= 0 && (!keep || keep[o]) && body.params[k] != null) edges.push([ownerOf(o), body.params[k], rows[o][C.shape]]);
        });
        outId[i] = body.root;
        return;
      }
      nodes.push({id: String(i), ci: ci, ii: i, fusion: isFusion ? called[0] : null, ns: ns});
      r[C.operands].forEach(function (o) { if (o >= 0 && (!keep || keep[o])) edges.push([ownerOf(o), String(i), rows[o][C.shape]]); });
    });
    var seen = {};
    edges = edges.filter(function (e) {
      var k = e[0] + ">" + e[1];
      if (e[0] === e[1] || seen[k]) return false;
      seen[k] = 1; return true;
    });
    return {nodes: nodes, edges: edges, parents: parents};
  }
  function neighbourhood(ci, center, depth, cap) {
    var rows = comps[ci].instructions, users = usersOf(ci), dist = {}, q = [center], keep = {}, n = 1, head = 0;
    dist[center] = 0; keep[center] = true;
    while (head < q.length) {
      var i = q[head++];
      if (dist[i] >= depth) continue;
      var next = rows[i][C.operands].concat(users[i]);
      for (var k = 0; k < next.length; k++) {
        var j = next[k];
        if (j < 0 || j in dist) continue;
        if (n >= cap) return keep;
        dist[j] = dist[i] + 1; keep[j] = true; n++; q.push(j);
      }
    }
    return keep;
  }

  // ---- graph: layout (longest-path layers, barycenter ordering, clusters kept together) --------
  var NW = 168, NH = 38, GX = 22, GY = 46;
  function clusterKey(n) { return n.cluster ? "f:" + n.cluster : (n.ns ? "n:" + n.ns : null); }
  function layout(g) {
    var idx = {}, preds = g.nodes.map(function () { return []; }), succs = g.nodes.map(function () { return []; });
    g.nodes.forEach(function (n, i) { idx[n.id] = i; });
    g.edges.forEach(function (e) {
      var a = idx[e[0]], b = idx[e[1]];
      if (a == null || b == null || a === b) return;
      preds[b].push(a); succs[a].push(b);
    });
    // Nodes come in instruction order, which is topological, so one pass gives longest paths.
    var layer = g.nodes.map(function () { return 0; });
    g.nodes.forEach(function (n, i) { preds[i].forEach(function (p) { if (p < i) layer[i] = Math.max(layer[i], layer[p] + 1); }); });
    var layers = [];
    layer.forEach(function (l, i) { (layers[l] = layers[l] || []).push(i); });
    for (var li = 0; li < layers.length; li++) layers[li] = layers[li] || [];
    var pos = {};
    layers.forEach(function (ls) { ls.forEach(function (v, k) { pos[v] = k; }); });
    // Members of one cluster (an expanded fusion or a namespace) sit side by side in each
    // layer, so the cluster's outline covers them and nothing else.
    function group(ls) {
      var sum = {}, cnt = {};
      ls.forEach(function (v) { var k = clusterKey(g.nodes[v]); if (k) { sum[k] = (sum[k] || 0) + pos[v]; cnt[k] = (cnt[k] || 0) + 1; } });
      ls.sort(function (a, b) {
        var ka = clusterKey(g.nodes[a]), kb = clusterKey(g.nodes[b]);
        var xa = ka ? sum[ka] / cnt[ka] : pos[a], xb = kb ? sum[kb] / cnt[kb] : pos[b];
        return xa - xb || (ka === kb ? pos[a] - pos[b] : (ka || "") < (kb || "") ? -1 : 1);
      });
      ls.forEach(function (v, k) { pos[v] = k; });
    }
    function sweep(nb) {
      return function (ls) {
        var bc = {};
        ls.forEach(function (v) {
          var ns = nb[v], s = 0, c = 0;
          ns.forEach(function (u) { if (pos[u] != null) { s += pos[u]; c++; } });
          bc[v] = c ? s / c : pos[v];
        });
        ls.sort(function (a, b) { return bc[a] - bc[b]; });
        ls.forEach(function (v, k) { pos[v] = k; });
        group(ls);
      };
    }
    var big = g.nodes.length > 600;
    for (var it = 0; it < (big ? 2 : 4); it++) {
      layers.slice(1).forEach(sweep(preds));
      layers.slice(0, -1).reverse().forEach(sweep(succs));
    }
    var width = layers.reduce(function (a, ls) { return Math.max(a, ls.length); }, 1) * (NW + GX);
    var xy = g.nodes.map(function () { return null; });
    layers.forEach(function (ls, l) {
      var off = (width - ls.length * (NW + GX)) / 2;
      ls.forEach(function (v, k) { xy[v] = [off + k * (NW + GX), l * (NH + GY)]; });
    });
    return {xy: xy, idx: idx, width: width, height: layers.length * (NH + GY), layer: layer};
  }

  // Note [Graph layout]: dagre (vendored, assets/VENDORED.md) lays out what is drawn: layers,
  // crossing reduction, edges routed around nodes, and each cluster (an expanded fusion or an
  // op_name namespace) as one compound box holding its members and nothing else. Past
  // DAGRE_MAX_NODES its run time grows too long to keep clicks instant, so the hand layout
  // above (clusters kept adjacent per layer) takes over.
  // dagre also gives every edge one dummy node per layer it crosses; a value read by hundreds
  // of layers (a parameter used along a 20,000-op chain) makes tens of thousands of them.
  var DAGRE_MAX_NODES = 450, DAGRE_MAX_SPAN = 4000;
  function edgeSpan(g) {  // the layers all edges cross, on longest-path layers
    var idx = {}, layer = g.nodes.map(function () { return 0; }), span = 0;
    g.nodes.forEach(function (n, i) { idx[n.id] = i; });
    var es = g.edges.map(function (e) { return [idx[e[0]], idx[e[1]]]; }).filter(function (e) { return e[0] != null && e[1] != null && e[0] < e[1]; });
    es.sort(function (a, b) { return a[1] - b[1]; });
    es.forEach(function (e) { layer[e[1]] = Math.max(layer[e[1]], layer[e[0]] + 1); });
    es.forEach(function (e) { span += layer[e[1]] - layer[e[0]]; });
    return span;
  }
  function layoutDagre(g, labels) {
    var gr = new dagre.graphlib.Graph({compound: true});
    gr.setGraph({rankdir: "TB", nodesep: 16, ranksep: labels ? 44 : 34, edgesep: 8, marginx: 16, marginy: 16});
    gr.setDefaultEdgeLabel(function () { return {}; });
    var idx = {}, clusters = {};
    g.nodes.forEach(function (n, i) {
      idx[n.id] = i;
      gr.setNode(n.id, {width: NW, height: NH});
      var k = clusterKey(n);
      if (k) {
        if (!clusters[k]) { clusters[k] = 1; gr.setNode("c:" + k, {paddingTop: 18}); }
        gr.setParent(n.id, "c:" + k);
      }
    });
    // Nesting: a fusion opened inside another, or inside a namespace.
    // Only clusters that hold a node, and those around them, are drawn (an empty compound node
    // gets no place from dagre).
    var parents = g.parents || {};
    Object.keys(clusters).forEach(function (k) {
      for (var up = parents[k]; up; k = up, up = parents[k]) {
        var fresh = !clusters[up];
        if (fresh) { clusters[up] = 1; gr.setNode("c:" + up, {paddingTop: 18}); }
        gr.setParent("c:" + k, "c:" + up);
        if (!fresh) break;
      }
    });
    var shown = [];
    g.edges.forEach(function (e, k) {
      if (idx[e[0]] == null || idx[e[1]] == null || e[0] === e[1]) return;
      gr.setEdge(e[0], e[1], labels && e[2] ? {width: 96, height: 12, labelpos: "c", k: k} : {k: k});
      shown.push(k);
    });
    dagre.layout(gr);
    var xy = g.nodes.map(function (n) { var q = gr.node(n.id); return [q.x - NW / 2, q.y - NH / 2]; });
    var boxes = {};
    Object.keys(clusters).forEach(function (k) { var q = gr.node("c:" + k); boxes[k] = [q.x - q.width / 2, q.y - q.height / 2, q.width, q.height]; });
    var routes = {};
    gr.edges().forEach(function (ed) { var q = gr.edge(ed); routes[q.k] = {points: q.points, lx: q.x, ly: q.y}; });
    var G0 = gr.graph();
    return {xy: xy, idx: idx, width: G0.width, height: G0.height, boxes: boxes, routes: routes};
  }
  function curve(pts) {  // a smooth path through dagre's bend points
    var d = "M" + pts[0].x.toFixed(1) + "," + pts[0].y.toFixed(1);
    if (pts.length === 2) return d + "L" + pts[1].x.toFixed(1) + "," + pts[1].y.toFixed(1);
    for (var i = 1; i < pts.length - 1; i++) {
      var mx = (pts[i].x + pts[i + 1].x) / 2, my = (pts[i].y + pts[i + 1].y) / 2;
      d += "Q" + pts[i].x.toFixed(1) + "," + pts[i].y.toFixed(1) + " " + (i === pts.length - 2 ? pts[i + 1].x.toFixed(1) + "," + pts[i + 1].y.toFixed(1) : mx.toFixed(1) + "," + my.toFixed(1));
    }
    return d;
  }
