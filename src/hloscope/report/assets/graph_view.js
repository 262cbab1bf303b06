/* hloscope report page: the Graph tab (the whole program, Model Explorer's way).
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 * The model is graph_model.js (Note [Program tree]), the layout graph_layout.js (Note [Graph
 * layout]) and the drawing graph_draw.js (Note [Level of detail]).
 */
  var FIT_BOXES = 70;  // boxes "open what fits" shows: about what a screen holds readably
  var G = {overlay: "family", grouping: "auto", view: {x: 0, y: 0, s: 1}, scene: null, selected: null, marked: null};

  function buildGraph(s) {
    var card = el("div", {cls: "card graph-card"}), bar = el("div", {cls: "toolbar", id: "graph-toolbar"});
    var search = el("input", {type: "search", id: "graph-search", placeholder: "search name, opcode, shape, layout, op_name, target…", size: 36});
    var results = el("div", {cls: "search-results", id: "search-results"});
    var timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { runSearch(search.value, results); }, 120); });
    search.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { clearTimeout(timer); runSearch(search.value, results); var first = results.querySelector(".hit"); if (first) first.click(); }
    });
    var grouping = el("select", {id: "graph-grouping", title: "how instructions are grouped"},
      el("option", {value: "auto", text: "group by op_name, else blocks"}), el("option", {value: "auto-only", text: "group by schedule blocks"}),
      el("option", {value: "kind", text: "group by kind of op"}), el("option", {value: "none", text: "group by computation only"}));
    G.grouping = ["auto", "auto-only", "kind", "none"].indexOf(param("graph", "group")) >= 0 ? param("graph", "group") : "auto";
    grouping.value = G.grouping;
    grouping.addEventListener("change", function () { G.grouping = grouping.value; setParam("graph", "group", G.grouping === "auto" ? null : G.grouping); rebuildProgram(true); });
    var overlay = el("select", {id: "graph-overlay"});
    Object.keys(OVERLAYS).forEach(function (k) { overlay.appendChild(el("option", {value: k, text: "colour by " + OVERLAYS[k].label})); });
    G.overlay = OVERLAYS[param("graph", "colour")] ? param("graph", "colour") : "family";
    overlay.value = G.overlay;
    overlay.addEventListener("change", function () { G.overlay = overlay.value; setParam("graph", "colour", G.overlay === "family" ? null : G.overlay); refresh(); });
    var comp = el("select", {id: "graph-computation", title: "open the graph at a computation"});
    comp.appendChild(el("option", {value: "", text: "go to a computation…"}));
    // Sized by the heads' counts: reading .instructions here decoded all 29,000 computations of
    // the 10x Llama copy (0.4 s of the graph's first picture).
    comps.map(function (c, i) { return i; }).filter(function (i) { return !comps[i].is_fusion || rowCount(comps[i]) > 12; })
      .sort(function (a, b) { return (comps[b].is_entry - comps[a].is_entry) || (comps[a].is_fusion - comps[b].is_fusion) || (rowCount(comps[b]) - rowCount(comps[a])); })
      .slice(0, 400).forEach(function (i) {
        comp.appendChild(el("option", {value: i, text: (comps[i].is_entry ? "ENTRY " : comps[i].is_fusion ? "fused: " : "") + comps[i].name + " (" + rowCount(comps[i]) + ")"}));
      });
    comp.addEventListener("change", function () { if (comp.value !== "") showComputation(Number(comp.value)); comp.value = ""; });
    bar.appendChild(search); bar.appendChild(comp); bar.appendChild(grouping); bar.appendChild(overlay);
    bar.appendChild(el("button", {cls: "btn", id: "graph-open-fit", text: "fit open", title: "open the busiest groups while the picture stays readable", on: {click: function () { closeAll(); openToFit(FIT_BOXES, G.canvas.clientWidth, G.canvas.clientHeight, 0.4); refresh(true); fitView(); }}}));
    bar.appendChild(el("button", {cls: "btn", id: "graph-collapse-all", text: "close all", on: {click: function () { closeAll(); refresh(true); fitView(); }}}));
    bar.appendChild(el("button", {cls: "btn", id: "graph-expand-all", text: "open all", title: "every group, loop and fusion (level of detail keeps it drawable)", on: {click: openAllAndDraw}}));
    bar.appendChild(el("button", {cls: "btn", id: "graph-fit", text: "fit", on: {click: function () { fitView(); }}}));
    card.appendChild(bar);
    var legendBox = el("div", {cls: "legend graph-legend", id: "graph-legend"});
    card.appendChild(legendBox);
    var notice = el("p", {cls: "muted", id: "graph-notice"});
    var canvas = el("canvas", {id: "graph-canvas", tabindex: "0"}), minimap = el("canvas", {id: "graph-minimap", title: "the whole program: click or drag to move the view"});
    var stage = el("div", {cls: "graph-stage"}, canvas);
    var side = el("div", {cls: "card details", id: "graph-details"}, el("p", {cls: "muted", text: "Click a box for its details; double-click a group, loop or fusion to open or close it. Wheel zooms, drag pans; f fits."}));
    var wrap = el("div", {cls: "graph-wrap"}, stage, el("div", {cls: "graph-side"}, minimap, notice, results, side));
    card.appendChild(wrap);
    s.appendChild(card);
    G.canvas = canvas; G.minimap = minimap; G.legend = legendBox; G.side = side; G.notice = notice; G.colours = graphColours();
    graphInput(canvas, minimap);
    window.addEventListener("resize", function () { if (currentTab === "graph") { sizeStage(); drawGraph(); } });
    if (window.matchMedia) matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () { G.colours = graphColours(); G.miniCache = null; drawGraph(); });
    tabs.graph.onactive = function () { sizeStage(); if (G.scene) drawGraph(); };
    // The search index (one line per instruction) is made in slices while the page is idle
    // (Note [Work in slices]), so the first search answers at once.
    inSlices(indexRows);
    rebuildProgram(false);
    sizeStage();
    if (G.pending) {
      var p = G.pending, open = G.pendingOpen;
      G.pending = null; G.pendingOpen = false;
      if (open) showComputation(comps[p[0]].instructions[p[1]][C.called].filter(function (k) { return k >= 0; })[0]);
      else focusInstruction(p[0], p[1]);
    }
    else if (G.pendingMarks) { var m = G.pendingMarks; G.pendingMarks = null; showInGraph(m[0], m[1]); }
    else fitView();
  }
  // The stage fills the window below the toolbar, whatever the header's height (at 1280×720
  // the graph gets most of the screen).
  function sizeStage() {
    var stage = G.canvas.parentNode, top = stage.getBoundingClientRect().top + window.scrollY;
    var h = Math.max(360, window.innerHeight - top - 18);
    stage.style.height = h + "px";
    G.side.parentNode.style.maxHeight = h + "px";
  }
  function rebuildProgram(keepPlace) {
    var started = performance.now();
    buildProgram(G.grouping);
    var t1 = performance.now();
    sizeStage();
    openToFit(FIT_BOXES, G.canvas.clientWidth, G.canvas.clientHeight, 0.4);
    var t2 = performance.now();
    refresh(true);
    G.timing = {build: t1 - started, open: t2 - t1, layout_and_draw: performance.now() - t2};
    G.notice.textContent = "The whole program: " + D.module.instruction_count + " instructions in " + D.module.computation_count + " computations. " +
      "Opened " + G.scene.boxes + " boxes to fit (" + (performance.now() - started).toFixed(0) + " ms); double-click any group, loop or fusion to open it.";
    if (keepPlace) fitView();
  }
  // Layout again where something opened or closed, then draw.
  function refresh(relayout) {
    if (relayout || !G.scene) G.scene = buildScene();
    G.ovMax = overlayMax(G.scene);
    legend();
    drawGraph();
  }
  function closeAll() {
    Object.keys(GM.byId).forEach(function (k) { var n = GM.byId[k]; if (n !== GM.root) setOpen(n, false); });
  }
  // Everything open: laid out by the fast layout (dagre on two thousand groups takes seconds);
  // a group opened or closed later is laid out by dagre again (Note [Graph layout]).
  function openAllAndDraw() {
    GM.bulk = true;
    try { openAll(); refresh(true); } finally { GM.bulk = false; }
    fitView();
  }
  function openAll() {
    var started = performance.now();
    (function walk(n) { ensureKids(n).forEach(function (k) { if (k.kind === "op") return; setOpen(k, true); walk(k); }); })(GM.root);
    G.lastOpenAll = performance.now() - started;
  }

  // ---- the view: pan, zoom, fit, centre ------------------------------------------------------
  function fitView() {
    var sc = G.scene, w = G.canvas.clientWidth || 900, h = G.canvas.clientHeight || 600, pad = 20;
    var s = Math.min(1.1, (w - 2 * pad) / sc.w, (h - 2 * pad) / sc.h);
    G.view = {s: s, x: sc.w / 2 - w / 2 / s, y: sc.h / 2 - h / 2 / s};
    drawGraph();
  }
  function centerOnItem(it, scale) {
    var w = G.canvas.clientWidth, h = G.canvas.clientHeight, s = scale || Math.max(G.view.s, 0.85);
    if (it.w * s > w * 0.9 || it.h * s > h * 0.9) s = Math.min(s, 0.9 * w / it.w, 0.9 * h / it.h);
    G.view = {s: s, x: it.x + it.w / 2 - w / 2 / s, y: it.y + it.h / 2 - h / 2 / s};
    drawGraph();
  }
  function fitItems(items) {
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    items.forEach(function (it) { x0 = Math.min(x0, it.x); y0 = Math.min(y0, it.y); x1 = Math.max(x1, it.x + it.w); y1 = Math.max(y1, it.y + it.h); });
    if (!isFinite(x0)) return;
    centerOnItem({x: x0, y: y0, w: x1 - x0, h: y1 - y0}, Math.min(1, G.view.s));
  }
  function toWorld(ev) {
    var r = G.canvas.getBoundingClientRect(), v = G.view;
    return [v.x + (ev.clientX - r.left) / v.s, v.y + (ev.clientY - r.top) / v.s];
  }
  function graphInput(c, mini) {
    var drag = null, last = 0;
    c.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var p = toWorld(ev), f = Math.pow(1.0015, -ev.deltaY), v = G.view, s = Math.max(0.005, Math.min(4, v.s * f));
      G.view = {s: s, x: p[0] - (p[0] - v.x) * v.s / s, y: p[1] - (p[1] - v.y) * v.s / s};
      drawGraph();
    }, {passive: false});
    c.addEventListener("mousedown", function (ev) { drag = {x: ev.clientX, y: ev.clientY, v: G.view, moved: false}; c.classList.add("panning"); });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      G.view = {s: drag.v.s, x: drag.v.x - dx / drag.v.s, y: drag.v.y - dy / drag.v.s};
      drawGraph();
    });
    window.addEventListener("mouseup", function (ev) {
      var d = drag;
      drag = null; c.classList.remove("panning");
      if (!d || d.moved || ev.target !== c) return;
      var now = performance.now(), it = hitTest.apply(null, toWorld(ev));
      if (now - last < 350 && it && G.lastClick === it.n) { last = 0; toggle(it.n); return; }
      last = now; G.lastClick = it ? it.n : null;
      select(it ? it.n : null);
    });
    c.addEventListener("keydown", function (ev) {
      if (ev.key === "f") fitView();
      else if (ev.key === "Enter" && G.selected) toggle(G.selected);
    });
    function miniMove(ev) {
      var r = mini.getBoundingClientRect(), k = G.miniScale || 1, w = G.canvas.clientWidth / G.view.s, h = G.canvas.clientHeight / G.view.s;
      G.view = {s: G.view.s, x: (ev.clientX - r.left) / k - w / 2, y: (ev.clientY - r.top) / k - h / 2};
      drawGraph();
    }
    var miniDrag = false;
    mini.addEventListener("mousedown", function (ev) { ev.stopPropagation(); miniDrag = true; miniMove(ev); });
    window.addEventListener("mousemove", function (ev) { if (miniDrag) miniMove(ev); });
    window.addEventListener("mouseup", function () { miniDrag = false; });
  }
  // Open or close a box, keeping it where it was on the screen.
  function toggle(n) {
    if (n === GM.root || n.kind === "op") return;
    var before = n.item ? [n.item.x, n.item.y] : null, started = performance.now();
    setOpen(n, !n.expanded);
    refresh(true);
    if (before && n.item) { G.view.x += n.item.x - before[0]; G.view.y += n.item.y - before[1]; }
    G.lastToggle = performance.now() - started;
    drawGraph();
    select(n);
  }

  // ---- selection and details -----------------------------------------------------------------
  function select(n) {
    G.selected = n;
    drawGraph();
    if (!n) return;
    if (n.kind === "op" || n.kind === "call") { details(n.ci, n.ii, n); selectInstruction(comps[n.ci].instructions[n.ii][C.name]); }
    else groupDetails(n);
  }
  function dlRow(dl, k, v) {
    if (v == null || v === "") return;
    dl.appendChild(el("dt", {text: k}));
    dl.appendChild(v instanceof Node ? el("dd", null, v) : el("dd", {cls: "mono", text: String(v)}));
  }
  function details(ci, ii, node) {
    var r = comps[ci].instructions[ii], box = G.side, m;
    box.textContent = "";
    box.appendChild(el("h2", {cls: "mono", text: r[C.name]}));
    var dl = el("dl"), row = function (k, v) { dlRow(dl, k, v); };
    row("opcode", r[C.opcode]); row("shape", layoutShape(r) || r[C.shape]); row("computation", comps[ci].name);
    if (r[C.opcode] === "get-tuple-element" && (m = /index=(\d+)/.exec(r[C.text]))) row("tuple index", m[1]);
    if ((m = /replica_groups=(\{[^ ]*\}|\[[^\]]*\][^,]*)/.exec(r[C.text]))) row("replica groups", m[1]);
    if ((m = /source_target_pairs=(\{[^ ]*\})/.exec(r[C.text]))) row("source-target pairs", m[1]);
    if ((m = /custom_call_target="([^"]*)"/.exec(r[C.text]))) row("target", m[1]);
    if (r[C.opcode] === "while" && TIM && TIM.trip_counts && TIM.trip_counts[r[C.name]] != null) row("trips", String(TIM.trip_counts[r[C.name]]));
    var sec = comps[ci].seconds ? comps[ci].seconds[ii] : null;
    if (sec != null) row("est. time (per step)", fmtTime(sec) + " (" + fmtPct(shareOf(sec)) + " of the step)");
    var cat = categoryOf(ci, ii);
    if (cat) row("category", cat + (boundOf(r[C.name]) ? ", " + boundOf(r[C.name]) + "-bound" : ""));
    if (comps[ci].flop_util && comps[ci].flop_util[ii] != null) row("FLOP utilisation", fmtPct(comps[ci].flop_util[ii]) + " of the peak");
    if (comps[ci].band_util && comps[ci].band_util[ii] != null) row("bandwidth", fmtPct(comps[ci].band_util[ii]) + " of the peak");
    if (comps[ci].bytes && comps[ci].bytes[ii] != null) row("bytes accessed (per step)", fmtBytes(comps[ci].bytes[ii]));
    row("op_name", r[C.op_name] ? breakableSpan(r[C.op_name], "mono") : null); row("source", r[C.source] ? breakableSpan(r[C.source], "mono") : null);
    var ops = el("div"); r[C.operands].forEach(function (o) { if (o >= 0) { ops.appendChild(link(ci, o)); ops.appendChild(document.createTextNode(" ")); } });
    row("operands", ops.childNodes.length ? ops : null);
    var us = el("div"), users = usersOf(ci)[ii];
    users.slice(0, 30).forEach(function (u) { us.appendChild(link(ci, u)); us.appendChild(document.createTextNode(" ")); });
    if (users.length > 30) us.appendChild(el("span", {cls: "muted", text: "+" + (users.length - 30)}));
    row("users", us.childNodes.length ? us : null);
    var cl = el("div"); r[C.called].forEach(function (t) { if (t >= 0) cl.appendChild(el("div", null, compLink(t))); });
    row("calls", cl.childNodes.length ? cl : null);
    box.appendChild(dl);
    var acts = el("div", {cls: "toolbar"});
    if (node && node.kind === "call") acts.appendChild(el("button", {cls: "btn", text: node.expanded ? "close" : "open", on: {click: function () { toggle(node); }}}));
    acts.appendChild(el("button", {cls: "btn", text: "show text", on: {click: function () { showText(ci, ii); }}}));
    box.appendChild(acts);
  }
  function groupDetails(n) {
    var box = G.side, f = nodeFigures(n);
    box.textContent = "";
    box.appendChild(el("h2", {cls: "mono"}, breakable(n.kind === "instance" ? n.label : n.label)));
    var dl = el("dl"), row = function (k, v) { dlRow(dl, k, v); };
    row("kind", {ns: "op_name namespace", auto: "automatic group (schedule order)", instance: "computation"}[n.kind] || n.kind);
    if (n.path) row("op_name prefix", breakableSpan(n.path, "mono"));
    if (n.range) row("from … to", n.range);
    if (n.sub) row("holds", n.sub);
    row("instructions", fmtNum(f.count));
    if (f.seconds) row("est. time (per step)", fmtTime(f.seconds) + " (" + fmtPct(shareOf(f.seconds)) + " of the step)");
    if (f.bytes) row("bytes accessed (per step)", fmtBytes(f.bytes));
    if (f.peakBytes) row("live at the memory peak", fmtBytes(f.peakBytes));
    var inst = instanceOf(n), ci = compOf(inst), rows = comps[ci].instructions, secs = comps[ci].seconds;
    var top = memberIndices(n).slice().sort(function (a, b) { return ((secs && secs[b]) || 0) - ((secs && secs[a]) || 0); }).slice(0, 8);
    var tl = el("div");
    top.forEach(function (ii) { tl.appendChild(el("div", null, link(ci, ii), el("span", {cls: "muted", text: " " + rows[ii][C.opcode] + (secs && secs[ii] ? " · " + fmtTime(secs[ii]) : "")}))); });
    row(secs ? "slowest inside" : "inside", tl);
    box.appendChild(dl);
    box.appendChild(el("div", {cls: "toolbar"}, el("button", {cls: "btn", text: n.expanded ? "close" : "open", on: {click: function () { toggle(n); }}})));
    selectInstruction(null);
  }
  function layoutShape(r) {  // the shape as written, with its layout and memory space
    var t = r[C.text], eq = t.indexOf(" = "), at = t.indexOf(" " + r[C.opcode] + "(", eq);
    return eq >= 0 && at > eq ? t.slice(eq + 3, at) : null;
  }
  function link(ci, ii) {
    return el("span", {cls: "link mono", text: comps[ci].instructions[ii][C.name], on: {click: function () { focusInstruction(ci, ii); }}});
  }
  function focusInstruction(ci, ii) {
    if (!G.canvas) { G.pending = [ci, ii]; showTab("graph"); return; }
    showTab("graph");
    var node = openTo(ci, ii);
    refresh(true);
    if (!node || !node.item) { flash("Cannot place " + comps[ci].instructions[ii][C.name] + " in the graph: its computation is not run by a loop, call or fusion."); return; }
    G.marked = null;
    centerOnItem(node.item);
    select(node);
  }
  // Open the graph where a computation runs (the first instruction that calls it), or fit the
  // whole program for the entry.
  function showComputation(ci) {
    if (comps[ci].is_entry) { showTab("graph"); if (G.canvas) fitView(); return; }
    var callers = callersOf(ci).filter(function (x) { return OPENABLE[comps[x[0]].instructions[x[1]][C.opcode]]; });
    if (!callers.length) callers = callersOf(ci);
    if (!callers.length) { flash(comps[ci].name + " is not called by any instruction of this module."); return; }
    if (!G.canvas) { G.pending = callers[0]; G.pendingOpen = true; showTab("graph"); return; }
    showTab("graph");
    var node = openTo(callers[0][0], callers[0][1]);
    if (!node) return;
    setOpen(node, true);
    refresh(true);
    if (node.item) { centerOnItem(node.item); select(node); }
  }
  // Mark a set of instructions (the "what to fix first" items) and fit the view to them.
  function showInGraph(names, title) {
    if (!G.canvas) { G.pendingMarks = [names, title]; showTab("graph"); return; }
    showTab("graph");
    var marked = {}, nodes = [];
    names.slice(0, 16).forEach(function (n) {
      var at = instAt(n);
      if (!at) return;
      var node = openTo(at[0], at[1]);
      if (node) { marked[node.id] = 1; nodes.push(node); }
    });
    refresh(true);
    G.marked = marked;
    fitItems(nodes.filter(function (n) { return n.item; }).map(function (n) { return n.item; }));
    G.notice.textContent = (title ? title + ": " : "") + nodes.length + " operations marked in red.";
  }

  // ---- search --------------------------------------------------------------------------------
  // One lower-case line per instruction: name, opcode, shape with its layout and memory space,
  // op_name, a custom call's target and the computations it calls. Hits rank exact names
  // first, then names that start with the query, then by where they are: the entry, other
  // computations, fused computations, and fused computations' parameters last.
  // Columns, not a [ci, ii, line, rank] array per instruction: 318,000 small arrays at 10x
  // were garbage the collector walked on every later pause.
  var HS = null, hsAt = [0, 0];  // {ci, ii, rank, line, n}; where indexRows goes on
  function indexRows(until) {  // adds lines until performance.now() passes until (0: all); true when done
    if (!HS) {
      var total = comps.reduce(function (a, c) { return a + rowCount(c); }, 0);
      HS = {ci: new Int32Array(total), ii: new Int32Array(total), rank: new Uint8Array(total), line: new Array(total), n: 0};
    }
    var ci = hsAt[0], ii = hsAt[1];
    for (; ci < comps.length; ci++, ii = 0) {
      if (until && performance.now() > until) { hsAt = [ci, ii]; return false; }
      var c = comps[ci], rows = c.instructions, where = c.is_entry ? 0 : c.is_fusion ? 2 : 1;
      for (; ii < rows.length; ii++) {
        if (until && (ii & 255) === 255 && performance.now() > until) { hsAt = [ci, ii]; return false; }
        var r = rows[ii], t = r[C.opcode] === "custom-call" ? /custom_call_target="([^"]*)"/.exec(r[C.text]) : null;
        var called = r[C.called].length ? r[C.called].filter(function (k) { return k >= 0; }).map(function (k) { return comps[k].name; }).join(" ") : "";
        var k = HS.n++;
        HS.ci[k] = ci; HS.ii[k] = ii; HS.rank[k] = where + (where === 2 && r[C.opcode] === "parameter" ? 1 : 0);
        HS.line[k] = (r[C.name] + "\u0001" + r[C.opcode] + "\u0001" + (layoutShape(r) || r[C.shape]) + "\u0001" + (r[C.op_name] || "") + "\u0001" + (t ? t[1] : "") + "\u0001" + called).toLowerCase();
      }
    }
    hsAt = [ci, 0];
    return true;
  }
  function searchIndex() { indexRows(0); return HS; }  // what the slices have not done yet, now
  function runSearch(q, box) {
    box.textContent = "";
    q = q.trim().toLowerCase();
    if (q.length < 2) return;
    var hs = searchIndex(), hits = [];
    for (var k = 0; k < hs.n; k++) {
      if (hs.line[k].indexOf(q) < 0) continue;
      var name = comps[hs.ci[k]].instructions[hs.ii[k]][C.name].toLowerCase();
      hits.push([name === q ? 0 : name.indexOf(q) === 0 ? 1 : 2, hs.rank[k], k, [hs.ci[k], hs.ii[k]]]);
    }
    hits.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]; });
    var more = Math.max(0, hits.length - 80);
    if (!hits.length) { box.appendChild(el("div", {cls: "muted", text: "no instruction matches"})); return; }
    hits.slice(0, 80).forEach(function (x) {
      var h = x[3], r = comps[h[0]].instructions[h[1]];
      box.appendChild(el("div", {cls: "hit mono", "data-name": r[C.name], "data-computation": comps[h[0]].name, on: {click: function () { focusInstruction(h[0], h[1]); }}},
        r[C.name], el("span", {cls: "muted", text: "  " + r[C.opcode] + " " + clip(layoutShape(r) || r[C.shape], 34) + "  " + comps[h[0]].name})));
    });
    if (more) box.appendChild(el("div", {cls: "muted", text: "… " + more + " more; type more to narrow"}));
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function jumpTo(name) {
    var at = instAt(name);
    if (at) showText(at[0], at[1]);
  }

  // ---- what tests and benchmarks read (the canvas has no DOM nodes to query) ------------------
  window.hloscopeGraph = {
    items: function () {
      var out = [], r = G.canvas.getBoundingClientRect(), v = G.view;
      (function walk(it) {
        it.kids.forEach(function (c) {
          var n = c.n, leaf = n.kind === "op" || n.kind === "call", fill = c.open ? null : fillOf(n);
          var f = nodeFigures(n);
          out.push({id: n.id, kind: n.kind, name: leaf ? comps[n.ci].instructions[n.ii][C.name] : n.label, open: c.open, how: n.laidWith,
            count: f.count, seconds: f.seconds, depth: c.depth,
            lines: c.open ? [groupTitle(n)] : nodeLines(n), fill: fill, ink: fill ? inkOn(fill) : null,
            selected: G.selected === n, marked: !!(G.marked && G.marked[n.id]),
            x: r.left + (c.x - v.x) * v.s, y: r.top + (c.y - v.y) * v.s, w: c.w * v.s, h: c.h * v.s});
          if (c.open) walk(c);
        });
      })(G.scene.root);
      return out;
    },
    state: function () { return {timing: G.timing, scale: G.view.s, boxes: G.scene.boxes, groups: G.scene.groups, frame_ms: G.stats && G.stats.ms, stats: G.stats, overlayMax: G.ovMax, w: G.scene.w, h: G.scene.h, toggle_ms: G.lastToggle}; },
    toggle: function (id) { var n = GM.byId[id]; var t = performance.now(); toggle(n); return performance.now() - t; },
    openAll: function () { var t = performance.now(); openAllAndDraw(); return performance.now() - t; },
    closeAll: function () { closeAll(); refresh(true); fitView(); },
    fit: function () { fitView(); },
    select: function (name) { var at = instAt(name); if (at) focusInstruction(at[0], at[1]); return !!at; }
  };
