/* hloscope report page: the whole-program graph's layout (where each box goes).
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 *
 * Note [Graph layout]
 * -------------------
 * Each open node lays out its own children (Note [Program tree]): an open child is one big
 * box whose size is its own layout's, so a layout never holds more than MAX_CHILDREN boxes and
 * opening a node lays out that node and its ancestors again, nothing else. dagre (vendored,
 * assets/VENDORED.md) does it when a node has at most DAGRE_MAX children and their edges
 * cross few layers: layers, crossing reduction, edges routed around boxes. Past that, a fast
 * layered layout (longest-path layers, barycenter order, boxes packed per layer) keeps a
 * click under a few milliseconds. Layouts are cached per node until something below it opens
 * or closes (`dirty`).
 */
  var NW = 176, NH = 40, GNH = 50, PAD = 12, HEAD = 26, GX = 22, GY = 38;
  var DAGRE_MAX = 120, DAGRE_MAX_SPAN = 1500, WRAP_AT = 7, ASPECT = 1.7;

  function boxSize(n) {
    if (isOpen(n)) { layoutNode(n); return [n.lw, n.lh]; }
    return [NW, n.kind === "op" || n.kind === "call" ? NH : GNH];
  }
  function setOpen(n, open) {
    if (n.kind === "op" || !!n.expanded === !!open) return;
    n.expanded = !!open;
    for (var p = n; p; p = p.parent) p.dirty = true;
  }
  function layoutNode(g) {
    if (!g.dirty && g.lw != null) return;
    var kids = ensureKids(g), sizes = kids.map(boxSize), edges = edgesOf(g), shape = layering(kids, edges);
    // dagre draws the best pictures but puts every box of a layer in one row: where a layer is
    // wide (thirty segments that only read parameters) the wrapping layout reads better.
    var L = typeof dagre !== "undefined" && !GM.bulk && kids.length <= DAGRE_MAX && shape.span <= DAGRE_MAX_SPAN && shape.widest <= WRAP_AT && !tall(shape, sizes)
      ? dagreLayout(kids, sizes, edges) : fastLayout(kids, sizes, edges);
    // dagre's own ranks can still put a dozen boxes side by side: a picture far wider than the
    // screen's shape is laid out again with rows that wrap.
    if (L.how === "dagre" && kids.length > 8 && L.w > 2 * ASPECT * Math.max(L.h, GNH)) L = fastLayout(kids, sizes, edges);
    g.pos = L.pos; g.routes = L.routes; g.laidWith = L.how;
    var top = g === GM.root ? PAD : HEAD;
    g.lw = Math.max(L.w + 2 * PAD, NW + 2 * PAD); g.lh = L.h + top + PAD;
    g.dirty = false;
  }
  // Longest-path layers of the children (in order; a backward edge is ignored), the layers
  // edges cross (dagre makes a dummy node per layer crossed) and the widest layer's count.
  function layering(kids, edges) {
    var layer = kids.map(function () { return 0; }), total = 0, count = {}, widest = 0;
    var es = edges.filter(function (e) { return e.from < e.to; }).sort(function (a, b) { return a.to - b.to; });
    es.forEach(function (e) { layer[e.to] = Math.max(layer[e.to], layer[e.from] + 1); });
    es.forEach(function (e) { total += layer[e.to] - layer[e.from]; });
    var layers = 0;
    layer.forEach(function (l) { count[l] = (count[l] || 0) + 1; widest = Math.max(widest, count[l]); layers = Math.max(layers, l + 1); });
    return {layer: layer, span: total, widest: widest, layers: layers};
  }
  // Whether the layers stacked would be much taller than the screen's shape allows.
  function tall(shape, sizes) {
    var h = {}, w = {}, H = 0, W = NW;
    shape.layer.forEach(function (l, j) { h[l] = Math.max(h[l] || 0, sizes[j][1]); w[l] = (w[l] || 0) + sizes[j][0] + GX; });
    Object.keys(h).forEach(function (l) { H += h[l] + GY; W = Math.max(W, w[l]); });
    return shape.layers > 3 && H > 1.5 * W / ASPECT;
  }
  function dagreLayout(kids, sizes, edges) {
    var gr = new dagre.graphlib.Graph({multigraph: false});
    var labels = kids.length <= 40;
    gr.setGraph({rankdir: "TB", nodesep: 18, ranksep: labels ? 40 : 30, edgesep: 8, marginx: 0, marginy: 0});
    gr.setDefaultEdgeLabel(function () { return {}; });
    kids.forEach(function (k, j) { gr.setNode(String(j), {width: sizes[j][0], height: sizes[j][1]}); });
    edges.forEach(function (e, k) { gr.setEdge(String(e.from), String(e.to), labels ? {width: 90, height: 12, labelpos: "c", k: k} : {k: k}); });
    dagre.layout(gr);
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    var pos = kids.map(function (k, j) {
      var q = gr.node(String(j)), x = q.x - sizes[j][0] / 2, y = q.y - sizes[j][1] / 2;
      minX = Math.min(minX, x); minY = Math.min(minY, y); maxX = Math.max(maxX, x + sizes[j][0]); maxY = Math.max(maxY, y + sizes[j][1]);
      return [x, y];
    });
    var routes = [];
    gr.edges().forEach(function (ed) {
      var q = gr.edge(ed);
      routes[q.k] = {pts: q.points.map(function (p) { return [p.x, p.y]; }), lx: q.x, ly: q.y};
    });
    if (!kids.length) { minX = minY = 0; maxX = NW; maxY = NH; }
    pos.forEach(function (p) { p[0] -= minX; p[1] -= minY; });
    routes.forEach(function (r) { if (!r) return; r.pts.forEach(function (p) { p[0] -= minX; p[1] -= minY; }); if (r.lx != null) { r.lx -= minX; r.ly -= minY; } });
    return {pos: pos, routes: routes, w: maxX - minX, h: maxY - minY, how: "dagre"};
  }
  function fastLayout(kids, sizes, edges) {
    var n = kids.length, preds = kids.map(function () { return []; }), succs = kids.map(function () { return []; });
    edges.forEach(function (e) { if (e.from < e.to) { preds[e.to].push(e.from); succs[e.from].push(e.to); } });
    var layer = kids.map(function () { return 0; }), layers = [];
    for (var j = 0; j < n; j++) preds[j].forEach(function (p) { layer[j] = Math.max(layer[j], layer[p] + 1); });
    // Long chains make a tall, narrow picture: wrap layers that hold one box into columns.
    layer.forEach(function (l, i) { (layers[l] = layers[l] || []).push(i); });
    for (var li = 0; li < layers.length; li++) layers[li] = layers[li] || [];
    var pos = {};
    layers.forEach(function (ls) { ls.forEach(function (v, k) { pos[v] = k; }); });
    function sweep(nb) {
      return function (ls) {
        var bc = {};
        ls.forEach(function (v) {
          var s = 0, c = 0;
          nb[v].forEach(function (u) { if (pos[u] != null) { s += pos[u]; c++; } });
          bc[v] = c ? s / c : pos[v];
        });
        ls.sort(function (a, b) { return bc[a] - bc[b] || a - b; });
        ls.forEach(function (v, k) { pos[v] = k; });
      };
    }
    for (var it = 0; it < 3; it++) { layers.slice(1).forEach(sweep(preds)); layers.slice(0, -1).reverse().forEach(sweep(succs)); }
    // A layer wider than a few boxes wraps into rows (in its barycenter order), so a group of
    // independent segments reads as a block, not a line across the screen.
    var per = Math.max(4, Math.ceil(Math.sqrt(0.71 * n))), rowsOut = [];  // about the screen's shape
    layers.forEach(function (ls) { for (var k = 0; k < ls.length; k += per) rowsOut.push(ls.slice(k, k + per)); });
    layers = rowsOut;
    var widths = layers.map(function (ls) { return ls.reduce(function (a, v) { return a + sizes[v][0] + GX; }, -GX); });
    var W = Math.max.apply(null, widths.concat([NW])), heights = layers.map(function (ls) {
      return ls.reduce(function (a, v) { return Math.max(a, sizes[v][1]); }, 0);
    });
    var total = heights.reduce(function (a, h) { return a + h + GY; }, -GY);
    // A long program is a tall chain of layers: past about the screen's shape the layers
    // continue in the next column, as a newspaper's do.
    var cols = Math.max(1, Math.min(layers.length, Math.round(Math.sqrt(total * ASPECT / (W + 3 * GX)))));
    var perCol = total / cols, out = [], col = 0, y = 0, colH = 0, maxH = 0;
    layers.forEach(function (ls, l) {
      if (y > 0 && y + heights[l] / 2 > perCol * 1.02 && col < cols - 1) { col++; maxH = Math.max(maxH, y - GY); y = 0; }
      var x = col * (W + 3 * GX) + (W - widths[l]) / 2;
      ls.forEach(function (v) { out[v] = [x, y + (heights[l] - sizes[v][1]) / 2]; x += sizes[v][0] + GX; });
      y += heights[l] + GY;
      colH = y - GY;
    });
    maxH = Math.max(maxH, colH);
    var y = maxH + GY;
    W = (col + 1) * (W + 3 * GX) - 3 * GX;
    var routes = edges.map(function (e) {
      var a = out[e.from], b = out[e.to], sa = sizes[e.from], sb = sizes[e.to];
      var down = a[1] + sa[1] <= b[1];
      return {pts: [[a[0] + sa[0] / 2, down ? a[1] + sa[1] : a[1] + sa[1] / 2], [b[0] + sb[0] / 2, down ? b[1] : b[1] + sb[1] / 2]]};
    });
    return {pos: out, routes: routes, w: W, h: Math.max(0, y - GY), how: "layers"};
  }

  // ---- the scene: every visible box at its place on the page (world coordinates) ----------
  function buildScene() {
    layoutNode(GM.root);
    var root = {n: GM.root, x: 0, y: 0, w: GM.root.lw, h: GM.root.lh, open: true, depth: 0, kids: [], edges: []};
    var count = {boxes: 0, groups: 0};
    function place(it) {
      var g = it.n, ox = it.x + PAD, oy = it.y + (g === GM.root ? PAD : HEAD);
      g.kids.forEach(function (k, j) {
        var p = g.pos[j], sz = boxSize(k);
        var c = {n: k, x: ox + p[0], y: oy + p[1], w: sz[0], h: sz[1], open: isOpen(k), depth: it.depth + 1, parent: it};
        k.item = c;
        it.kids.push(c);
        count.boxes++;
        if (c.open) { c.kids = []; c.edges = []; count.groups++; place(c); }
      });
      var es = edgesOf(g);
      es.forEach(function (e, k) {
        var r = g.routes[k];
        if (!r) return;
        it.edges.push({from: it.kids[e.from], to: it.kids[e.to], pts: r.pts.map(function (q) { return [q[0] + ox, q[1] + oy]; }),
          lx: r.lx != null ? r.lx + ox : null, ly: r.ly != null ? r.ly + oy : null, shape: e.n === 1 ? e.shape : e.n + " values"});
      });
    }
    GM.root.item = root;
    place(root);
    return {root: root, w: root.w, h: root.h, boxes: count.boxes, groups: count.groups};
  }

  // Open what fits, level by level (a balanced picture, not one deep branch): at each level the
  // busiest closed groups open while at most `budget` boxes are shown; a level that does not
  // fit whole is the last. Loops and fusions stay closed (double-click opens them).
  function openToFit(budget, canvasW, canvasH, minScale) {
    var shown = ensureKids(GM.root).length, frontier = ensureKids(GM.root).slice(), opened = [];
    function weight(n) { var f = nodeFigures(n); return (f.seconds || 0) * 1e6 + f.count; }
    while (frontier.length) {
      var groups = frontier.filter(function (n) { return n.kind !== "op" && n.kind !== "call"; }), next = [], all = true;
      groups.sort(function (a, b) { return weight(b) - weight(a); });
      groups.forEach(function (g) {
        var k = ensureKids(g).length;
        if (shown - 1 + k > budget) { all = false; return; }
        setOpen(g, true); shown += k - 1; opened.push(g);
        next = next.concat(g.kids);
      });
      if (!all) break;
      frontier = next;
    }
    // Then close the last opened (the least busy of the deepest level) while "fit" would draw
    // the picture too small to read.
    function fitScale() { layoutNode(GM.root); return Math.min((canvasW - 40) / GM.root.lw, (canvasH - 40) / GM.root.lh); }
    while (canvasW && opened.length && fitScale() < minScale) setOpen(opened.pop(), false);
  }
  // Open every node on the way to instruction ii of computation ci; returns its node.
  function openTo(ci, ii) {
    var chain = [[ci, ii]], seen = {};
    // up the callers to the entry: [(computation, instruction)] from the entry down
    for (var c = ci; !comps[c].is_entry;) {
      var up = callersOf(c).filter(function (x) { return OPENABLE[comps[x[0]].instructions[x[1]][C.opcode]]; })[0];
      if (!up || seen[c]) return null;
      seen[c] = 1; chain.unshift(up); c = up[0];
    }
    var inst = GM.root, node = null;
    for (var k = 0; k < chain.length; k++) {
      node = descend(inst, chain[k][1]);
      if (!node) return null;
      if (k + 1 < chain.length) {  // open the call and find the instance running the next computation
        setOpen(node, true);
        var kids = ensureKids(node);
        inst = node.inst ? node : kids.filter(function (x) { return x.ci === chain[k + 1][0]; })[0];
        if (!inst) return null;
        if (inst !== node) setOpen(inst, true);
      }
    }
    return node;
  }
  function descend(inst, ii) {  // open the groups of an instance down to the leaf of ii
    var g = inst;
    for (var guard = 0; guard < 64; guard++) {
      var kids = ensureKids(g), next = null;
      for (var k = 0; k < kids.length; k++) if (holds(kids[k], ii)) { next = kids[k]; break; }
      if (!next) return null;
      if (next.kind === "op" || next.kind === "call") return next;
      setOpen(next, true);
      g = next;
    }
    return null;
  }
