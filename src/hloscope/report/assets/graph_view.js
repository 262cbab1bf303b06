/* hloscope report page, part 5 of 6: the Graph tab.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
  // ---- graph: view -----------------------------------------------------------------------------
  var G = {ci: 0, center: null, depth: 3, expanded: {}, selected: null, view: null, nsDepth: 0, collapsed: {}, overlay: "family"};
  var FAMILY_FILL = {"linear algebra": "#ffe1c4", "collective": "#f9d2e2", "control flow": "#e2d8f8", "reduction": "#d5ecd6",
    "source": "#e8eef7", "custom": "#fff0bf", "indexing": "#d7eef2", "elementwise binary": "#f3f5f9", "elementwise unary": "#f3f5f9"};

  function buildGraph(s) {
    var card = el("div", {cls: "card"}), bar = el("div", {cls: "toolbar"});
    var sel = el("select", {id: "graph-computation"});
    var order = comps.map(function (c, i) { return i; }).sort(function (a, b) {
      return (comps[b].is_entry - comps[a].is_entry) || (comps[a].is_fusion - comps[b].is_fusion) || (a - b);
    });
    order.forEach(function (i) {
      var c = comps[i];
      sel.appendChild(el("option", {value: i, text: (c.is_entry ? "ENTRY " : c.is_fusion ? "fused: " : "") + c.name + " (" + c.instructions.length + ")"}));
    });
    sel.addEventListener("change", function () { showComputation(Number(sel.value), null); });
    var search = el("input", {type: "text", id: "graph-search", placeholder: "search name, opcode, op_name, shape, target…", size: 34});
    var results = el("div", {cls: "search-results", id: "search-results"});
    var timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { runSearch(search.value, results); }, 120); });
    search.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { clearTimeout(timer); runSearch(search.value, results); var first = results.querySelector(".hit"); if (first) first.click(); }
    });
    var depth = el("input", {type: "number", min: 1, max: 12, value: G.depth, id: "graph-depth"});
    depth.addEventListener("change", function () { G.depth = Math.max(1, Number(depth.value) || 3); if (G.center != null) draw(); });
    var ns = el("select", {id: "graph-namespace", title: "group instructions by the first parts of their op_name"});
    [["no grouping", 0], ["op_name: 1 level", 1], ["op_name: 2 levels", 2], ["op_name: 3 levels", 3], ["op_name: 4 levels", 4]].forEach(function (o) { ns.appendChild(el("option", {value: o[1], text: o[0]})); });
    ns.addEventListener("change", function () { G.nsDepth = Number(ns.value); G.collapsed = {}; draw(); });
    var collapseAll = el("button", {cls: "btn", id: "graph-collapse-all", text: "collapse all", on: {click: function () {
      if (!G.nsDepth) { G.nsDepth = 1; ns.value = "1"; }
      G.collapsed = {}; G.lastNs.forEach(function (k) { if (k.indexOf("/") < 0) G.collapsed[k] = true; }); draw(); }}});
    var overlay = el("select", {id: "graph-overlay"});
    [["colour: kind of op", "family"], ["colour: est. time", "time"], ["colour: bytes accessed", "bytes"], ["colour: live at the peak", "peak"]].forEach(function (o) { overlay.appendChild(el("option", {value: o[1], text: o[0]})); });
    overlay.addEventListener("change", function () { G.overlay = overlay.value; draw(true); });
    var whole = el("button", {cls: "btn", text: "whole computation", on: {click: function () { G.center = null; draw(); }}});
    var fit = el("button", {cls: "btn", id: "graph-fit", text: "fit", on: {click: function () { fitView(); }}});
    bar.appendChild(el("label", {text: "computation"})); bar.appendChild(sel); bar.appendChild(search);
    bar.appendChild(el("label", {text: "depth"})); bar.appendChild(depth); bar.appendChild(ns); bar.appendChild(collapseAll);
    bar.appendChild(overlay); bar.appendChild(whole); bar.appendChild(fit);
    card.appendChild(bar);
    var notice = el("p", {cls: "muted", id: "graph-notice"});
    card.appendChild(notice);
    var svg = sv("svg", {id: "graph-svg"});
    var side = el("div", {cls: "card details", id: "graph-details"}, el("p", {cls: "muted", text: "Click a node to see it here; double-click a fusion to expand it, a namespace box's title to collapse it."}));
    var wrap = el("div", {cls: "graph-wrap"}, svg, el("div", null, results, side));
    card.appendChild(wrap);
    s.appendChild(card);
    G.svg = svg; G.select = sel; G.notice = notice; G.side = side; G.lastNs = [];
    panZoom(svg);
    if (G.pending) { var p = G.pending; G.pending = null; focusInstruction(p[0], p[1]); }
    else showComputation(comps.findIndex(function (c) { return c.is_entry; }), null);
  }
  function showComputation(ci, center, switchTab) {
    if (switchTab && !G.svg) { G.pending = null; showTab("graph"); }
    else if (switchTab) showTab("graph");
    G.ci = ci; G.center = center; G.expanded = {}; G.selected = center; G.collapsed = {};
    if (G.select) { G.select.value = ci; draw(); }
  }
  function overlayFill(n, r) {
    if (n.group) return "#ece6fb";
    var ov = G.overlay;
    if (ov === "family") return FAMILY_FILL[r[C.family]] || "#f3f5f9";
    var v = null;
    if (ov === "time") v = n.ci === G.ci && comps[n.ci].seconds ? comps[n.ci].seconds[n.ii] : null;
    else if (ov === "bytes") v = comps[n.ci].bytes ? comps[n.ci].bytes[n.ii] : bytesByName()[r[C.name]];
    else if (ov === "peak") return peakSet()[r[C.name]] ? "#f7b3c8" : "#f3f5f9";
    if (v == null || !G.ovMax) return "#f3f5f9";
    var f = Math.sqrt(Math.max(0, v) / G.ovMax);  // square root: small values stay visible
    return "hsl(" + (210 - 200 * f).toFixed(0) + ",80%," + (95 - 35 * f).toFixed(0) + "%)";
  }
  var bytesCache = null, peakCache = null;
  function bytesByName() {
    if (!bytesCache) { bytesCache = {}; var c = section("cost").data; ((c && c.per_instruction) || []).forEach(function (r) { bytesCache[r.name] = r.bytes_accessed; }); }
    return bytesCache;
  }
  function peakSet() {
    if (!peakCache) { peakCache = {}; var m = section("memory").data; ((m && m.peak_buffers) || []).forEach(function (b) { peakCache[bufInst(b)] = 1; }); }
    return peakCache;
  }
  function draw(keepView) {
    var ci = G.ci, rows = comps[ci].instructions, keep = null, msg = "";
    if (G.center != null) {
      keep = neighbourhood(ci, G.center, G.depth, MAX_GRAPH_NODES);
      msg = "Neighbourhood of " + rows[G.center][C.name] + " (depth " + G.depth + "): " + Object.keys(keep).length + " of " + rows.length + " instructions.";
    } else if (rows.length > MAX_GRAPH_NODES) {
      // Too big to draw whole: start from the neighbourhood of its slowest instruction (where
      // the time goes), or of its root without a time estimate; capped.
      var secs = comps[ci].seconds, best = -1;
      if (secs) secs.forEach(function (v, i) { if (v != null && (best < 0 || v > secs[best])) best = i; });
      G.center = best >= 0 ? best : comps[ci].root >= 0 ? comps[ci].root : rows.length - 1;
      keep = neighbourhood(ci, G.center, G.depth, MAX_GRAPH_NODES);
      msg = "This computation has " + rows.length + " instructions; showing the neighbourhood of its " + (best >= 0 ? "slowest instruction " : "root ") + rows[G.center][C.name] +
        " (" + Object.keys(keep).length + " nodes). Search or click a node and change the depth to explore.";
    } else msg = rows.length + " instructions. Double-click a fusion (dashed) to expand it.";
    G.notice.textContent = msg;
    var g = graphData(ci, keep, G.expanded);
    G.ovMax = 0;
    g.nodes.forEach(function (n) {
      var r = comps[n.ci].instructions[n.ii], v = G.overlay === "time" ? (n.ci === ci && comps[ci].seconds ? comps[ci].seconds[n.ii] : 0) : G.overlay === "bytes" ? (comps[n.ci].bytes ? comps[n.ci].bytes[n.ii] : bytesByName()[r[C.name]]) : 0;
      if (v > G.ovMax) G.ovMax = v;
    });
    var labels = g.nodes.length <= 120;
    var useDagre = typeof dagre !== "undefined" && g.nodes.length <= DAGRE_MAX_NODES && edgeSpan(g) <= DAGRE_MAX_SPAN;
    var L = useDagre ? layoutDagre(g, labels) : layout(g), svg = G.svg;
    svg.textContent = "";
    var root = sv("g", {id: "graph-root"});
    var nsSeen = {};
    g.nodes.forEach(function (n) {
      if (!n.ns) return;
      var parts = n.ns.split("/");
      for (var k = 1; k <= parts.length; k++) nsSeen[parts.slice(0, k).join("/")] = 1;
    });
    G.lastNs = Object.keys(nsSeen);
    function clusterLabel(k, x, y, box) {
      var isNs = k.charAt(0) === "n";
      var label = sv("text", {x: x, y: y, "class": isNs ? "gnslabel" : "gfuslabel", text: (isNs ? "▾ " : "") + clip(k.slice(2), 40)});
      if (isNs) label.addEventListener("click", function (ev) { ev.stopPropagation(); G.collapsed[k.slice(2)] = true; draw(true); });
      box.appendChild(label);
    }
    if (L.boxes) Object.keys(L.boxes).sort(function (a, b) { return L.boxes[b][2] * L.boxes[b][3] - L.boxes[a][2] * L.boxes[a][3]; }).forEach(function (k) {
      var b = L.boxes[k], isNs = k.charAt(0) === "n", box = sv("g", {"class": isNs ? "gns" : "gfus", "data-cluster": k.slice(2)});
      box.appendChild(sv("rect", {"class": isNs ? "gnscluster" : "gcluster", x: b[0], y: b[1], width: b[2], height: b[3]}));
      clusterLabel(k, b[0] + 6, b[1] + 13, box);
      root.appendChild(box);
    });
    // Hand layout: one box per layer the cluster occupies (its members are adjacent there),
    // stretched over the gaps between layers so the boxes join.
    var spans = {};
    if (!L.boxes) g.nodes.forEach(function (n, i) {
      var keys = [];
      if (n.cluster) keys.push("f:" + n.cluster);
      if (n.ns) keys.push("n:" + n.ns);
      keys.forEach(function (k) {
        var p = L.xy[i], l = L.layer[i], sp = spans[k] || (spans[k] = {});
        var b = sp[l] || (sp[l] = [1e9, -1e9]);
        b[0] = Math.min(b[0], p[0]); b[1] = Math.max(b[1], p[0] + NW);
      });
    });
    Object.keys(spans).forEach(function (k) {
      var isNs = k.charAt(0) === "n", pad = isNs ? 6 : 10, top = null, box = sv("g", {"class": isNs ? "gns" : "gfus", "data-cluster": k.slice(2)});
      Object.keys(spans[k]).map(Number).sort(function (a, b) { return a - b; }).forEach(function (l) {
        var b = spans[k][l], y = l * (NH + GY);
        if (top == null) top = [b[0], y];
        box.appendChild(sv("rect", {"class": isNs ? "gnscluster" : "gcluster", x: b[0] - pad, y: y - GY / 2 + 2, width: b[1] - b[0] + 2 * pad, height: NH + GY - 4, rx: 0}));
      });
      clusterLabel(k, top[0] - pad + 4, top[1] - GY / 2 + 15, box);
      root.appendChild(box);
    });
    var edgeEls = [];
    g.edges.forEach(function (e, k) {
      var a = L.idx[e[0]], b = L.idx[e[1]];
      if (a == null || b == null) return;
      var route = L.routes && L.routes[k], d, lx, ly;
      if (route) { d = curve(route.points); lx = route.lx; ly = route.ly; }
      else {
        var p = L.xy[a], q = L.xy[b], x1 = p[0] + NW / 2, y1 = p[1] + NH, x2 = q[0] + NW / 2, y2 = q[1], my = (y1 + y2) / 2;
        d = "M" + x1 + "," + y1 + "C" + x1 + "," + my + " " + x2 + "," + my + " " + x2 + "," + y2;
        lx = (x1 + x2) / 2; ly = my;
      }
      var path = sv("path", {"class": "gedge", d: d, "marker-end": "url(#arrow)"});
      path.__ends = [a, b];
      edgeEls.push(path); root.appendChild(path);
      if (labels && e[2] && lx != null) root.appendChild(sv("text", {"class": "elabel", x: lx, y: ly + 3, "text-anchor": "middle", text: clip(e[2], 22)}));
    });
    var nodeEls = {};
    g.nodes.forEach(function (n, i) {
      var r = comps[n.ci].instructions[n.ii], p = L.xy[i];
      var cls = "gnode" + (n.fusion != null ? " fusion" : "") + (n.group ? " group" : "") + (n.ci === ci && n.ii === G.center && !n.group ? " center" : "") + (n.ci === ci && n.ii === G.selected && !n.group ? " selected" : "");
      var gn = sv("g", {"class": cls, transform: "translate(" + p[0] + "," + p[1] + ")", "data-name": n.group ? "ns:" + n.group : r[C.name]});
      if (n.cluster) gn.setAttribute("data-cluster", n.cluster);
      if (n.ns) gn.setAttribute("data-ns", n.ns);
      if (n.group) {
        gn.appendChild(sv("title", {text: n.group + "\n" + n.members + " instructions (double-click to expand)"}));
        gn.appendChild(sv("rect", {width: NW, height: NH, rx: 7, fill: overlayFill(n, r)}));
        gn.appendChild(sv("text", {x: 8, y: 15, text: "▸ " + clip(n.group.split("/").pop(), 23)}));
        gn.appendChild(sv("text", {x: 8, y: 29, "class": "op", text: n.members + " instructions"}));
      } else {
        gn.appendChild(sv("title", {text: r[C.name] + " = " + r[C.shape] + " " + r[C.opcode] + (r[C.op_name] ? "\n" + r[C.op_name] : "")}));
        gn.appendChild(sv("rect", {width: NW, height: NH, rx: 7, fill: overlayFill(n, r)}));
        gn.appendChild(sv("text", {x: 8, y: 15, text: clip(r[C.name], 25)}));
        gn.appendChild(sv("text", {x: 8, y: 29, "class": "op", text: clip(r[C.opcode] + " " + r[C.shape], 30)}));
      }
      gn.addEventListener("click", function (ev) {
        ev.stopPropagation();
        edgeEls.forEach(function (pth) { pth.classList.toggle("hot", pth.__ends[0] === i || pth.__ends[1] === i); });
        Array.prototype.forEach.call(root.querySelectorAll(".gnode.selected"), function (x) { x.classList.remove("selected"); });
        gn.classList.add("selected");
        if (n.group) return;
        if (n.ci === ci) G.selected = n.ii;
        details(n.ci, n.ii);
        selectInstruction(r[C.name]);
      });
      gn.addEventListener("dblclick", function (ev) {
        ev.stopPropagation();
        if (n.group) {  // open one level: its inner namespaces stay closed, as layers do
          delete G.collapsed[n.group];
          var depth = n.group.split("/").length + 1;
          comps[ci].instructions.forEach(function (q) {
            var c = nsChain(q);
            if (c.length >= depth && c[depth - 2] === n.group) G.collapsed[c[depth - 1]] = true;
          });
          draw(true);
        }
        else if (n.fusion != null) { G.expanded[r[C.name]] = true; draw(true); }
        else if (n.cluster) { delete G.expanded[n.cluster]; draw(true); }
      });
      if (n.ci === ci && !n.group) nodeEls[n.ii] = p;
      root.appendChild(gn);
    });
    var defs = sv("defs"), mk = sv("marker", {id: "arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto"});
    mk.appendChild(sv("path", {d: "M0,0L8,4L0,8z", fill: "#a3acbf"}));
    defs.appendChild(mk); svg.appendChild(defs);
    svg.appendChild(root);
    G.view = {w: Math.max(L.width, 200), h: Math.max(L.height, 100)};
    G.nodeXY = nodeEls;
    if (keepView && G.vb) return;
    if (G.selected != null && nodeEls[G.selected]) centerOn(G.selected);
    else if (G.center != null && nodeEls[G.center]) centerOn(G.center);
    else fitView(0.6);
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function svgSize() { var r = G.svg.getBoundingClientRect(); return [r.width || 900, r.height || 600]; }
  // The "fit" button fits the whole graph however big; a first view keeps text readable
  // (at least minScale) and shows the top, where the parameters are.
  function fitView(minScale) {
    if (!G.view) return;
    var pad = 30, w = G.view.w + 2 * pad, h = G.view.h + 2 * pad, sz = svgSize();
    var scale = Math.min(1.2, sz[0] / w, sz[1] / h);
    if (minScale && scale < minScale) {
      scale = Math.min(1.2, Math.max(minScale, sz[0] / w));
      var vw0 = sz[0] / scale;
      return setViewBox([-pad + (w - vw0) / 2, -pad, vw0, sz[1] / scale]);
    }
    var vw = sz[0] / scale, vh = sz[1] / scale;
    setViewBox([-pad + (w - vw) / 2, -pad + (h - vh) / 2, vw, vh]);
  }
  // Bring node ii (of the drawn computation) to the middle at a readable zoom.
  function centerOn(ii) {
    var p = G.nodeXY && G.nodeXY[ii];
    if (!p) return fitView();
    var sz = svgSize(), scale = 0.85, vw = sz[0] / scale, vh = sz[1] / scale;
    setViewBox([p[0] + NW / 2 - vw / 2, p[1] + NH / 2 - vh / 2, vw, vh]);
  }
  function setViewBox(vb) { G.vb = vb; G.svg.setAttribute("viewBox", vb.map(function (v) { return v.toFixed(1); }).join(" ")); }
  function panZoom(svg) {
    var drag = null;
    svg.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = svg.getBoundingClientRect(), vb = G.vb, f = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      var mx = vb[0] + (ev.clientX - r.left) / r.width * vb[2], my = vb[1] + (ev.clientY - r.top) / r.height * vb[3];
      setViewBox([mx - (mx - vb[0]) * f, my - (my - vb[1]) * f, vb[2] * f, vb[3] * f]);
    }, {passive: false});
    svg.addEventListener("mousedown", function (ev) { drag = [ev.clientX, ev.clientY, G.vb.slice()]; svg.classList.add("panning"); });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var r = svg.getBoundingClientRect(), vb = drag[2];
      setViewBox([vb[0] - (ev.clientX - drag[0]) * vb[2] / r.width, vb[1] - (ev.clientY - drag[1]) * vb[3] / r.height, vb[2], vb[3]]);
    });
    window.addEventListener("mouseup", function () { drag = null; svg.classList.remove("panning"); });
  }
  function details(ci, ii) {
    var r = comps[ci].instructions[ii], box = G.side;
    box.textContent = "";
    box.appendChild(el("h2", {cls: "mono", text: r[C.name]}));
    var dl = el("dl");
    function row(k, v) { if (v == null || v === "") return; dl.appendChild(el("dt", {text: k})); dl.appendChild(v instanceof Node ? el("dd", null, v) : el("dd", {cls: "mono", text: String(v)})); }
    row("opcode", r[C.opcode]); row("shape", r[C.shape]); row("computation", comps[ci].name);
    var sec = comps[ci].seconds ? comps[ci].seconds[ii] : null;
    if (sec != null) row("est. time (per step)", fmtTime(sec) + " (" + fmtPct(shareOf(sec)) + " of the step)");
    row("op_name", r[C.op_name]); row("source", r[C.source]);
    var ops = el("div"); r[C.operands].forEach(function (o) { if (o >= 0) { ops.appendChild(link(ci, o)); ops.appendChild(document.createTextNode(" ")); } });
    row("operands", ops.childNodes.length ? ops : null);
    var us = el("div"); usersOf(ci)[ii].forEach(function (u) { us.appendChild(link(ci, u)); us.appendChild(document.createTextNode(" ")); });
    row("users", us.childNodes.length ? us : null);
    var cl = el("div"); r[C.called].forEach(function (t) { if (t >= 0) cl.appendChild(el("div", null, compLink(t))); });
    row("calls", cl.childNodes.length ? cl : null);
    box.appendChild(dl);
    var acts = el("div", {cls: "toolbar"});
    acts.appendChild(el("button", {cls: "btn", text: "neighbourhood", on: {click: function () { showComputation(ci, ii); }}}));
    acts.appendChild(el("button", {cls: "btn", text: "show text", on: {click: function () { showText(ci, ii); }}}));
    box.appendChild(acts);
  }
  function link(ci, ii) {
    return el("span", {cls: "link mono", text: comps[ci].instructions[ii][C.name], on: {click: function () { focusInstruction(ci, ii); }}});
  }
  function focusInstruction(ci, ii) {
    if (!G.svg) { G.pending = [ci, ii]; showTab("graph"); return; }
    showTab("graph");
    // Small computations stay whole with the node selected; big ones (or an open
    // neighbourhood view) re-centre on the node.
    var big = comps[ci].instructions.length > MAX_GRAPH_NODES;
    if (ci !== G.ci) { G.expanded = {}; G.collapsed = {}; }
    nsChain(comps[ci].instructions[ii]).forEach(function (p) { delete G.collapsed[p]; });
    G.ci = ci; G.select.value = ci;
    G.center = big || G.center != null ? ii : null;
    G.selected = ii;
    draw();
    details(ci, ii);
    selectInstruction(comps[ci].instructions[ii][C.name]);
  }
  // Search runs over one lower-case line per instruction: name, opcode, shape, op_name and a
  // custom call's target, so "dot", "bf16[4096", "attention" or "cublas" all find something.
  var haystack = null;
  function searchIndex() {
    if (haystack) return haystack;
    haystack = [];
    comps.forEach(function (c, ci) {
      c.instructions.forEach(function (r, ii) {
        var t = /custom_call_target="([^"]*)"/.exec(r[C.text]);
        haystack.push([ci, ii, (r[C.name] + "\u0001" + r[C.opcode] + "\u0001" + r[C.shape] + "\u0001" + (r[C.op_name] || "") + "\u0001" + (t ? t[1] : "")).toLowerCase()]);
      });
    });
    return haystack;
  }
  function runSearch(q, box) {
    box.textContent = "";
    q = q.trim().toLowerCase();
    if (q.length < 2) return;
    var hs = searchIndex(), hits = [], more = 0, exact = [];
    for (var k = 0; k < hs.length; k++) {
      var at = hs[k][2].indexOf(q);
      if (at < 0) continue;
      // Exact names first, then entry and non-fusion computations, in instruction order.
      var r = comps[hs[k][0]].instructions[hs[k][1]];
      if (r[C.name].toLowerCase() === q || r[C.opcode] === q) exact.push(hs[k]);
      else if (hits.length < 80) hits.push(hs[k]); else more++;
    }
    hits = exact.concat(hits);
    if (hits.length > 80) { more += hits.length - 80; hits = hits.slice(0, 80); }
    if (!hits.length) { box.appendChild(el("div", {cls: "muted", text: "no instruction matches"})); return; }
    hits.forEach(function (h) {
      var r = comps[h[0]].instructions[h[1]];
      box.appendChild(el("div", {cls: "hit mono", "data-name": r[C.name], on: {click: function () { focusInstruction(h[0], h[1]); }}},
        r[C.name], el("span", {cls: "muted", text: "  " + r[C.opcode] + " " + clip(r[C.shape], 28) + "  " + comps[h[0]].name})));
    });
    if (more) box.appendChild(el("div", {cls: "muted", text: "… " + more + " more; type more to narrow"}));
  }
  function jumpTo(name) {
    var at = nameIndex()[name];
    if (at) showText(at[0], at[1]);
  }
