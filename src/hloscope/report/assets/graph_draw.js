/* hloscope report page: drawing the whole-program graph on a canvas, its colours, legend and minimap.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 *
 * Note [Level of detail]
 * ----------------------
 * A frame walks the scene tree from the root and skips every box outside the view together
 * with all it holds, so a frame costs what is on screen, not what is open. How a box is drawn
 * depends on its size on screen: an open box smaller than MIN_OPEN_PX is drawn closed (a
 * filled box with its label), a node shorter than TEXT_PX has no text, edges thinner than a
 * pixel's worth of zoom are left out, and labels of closed groups keep a readable font size
 * whatever the zoom, so "fit" on a whole program still names its parts.
 */
  var FAMILY_FILL = {"linear algebra": "#ffd9b3", "collective": "#f7c6d9", "control flow": "#ddd2f7", "reduction": "#cde9cf",
    "source": "#e4ebf5", "custom": "#fbe7a6", "indexing": "#cfe9ee", "shape": "#e2e6ef", "elementwise binary": "#eef1f6",
    "elementwise unary": "#eef1f6", "compare": "#eef1f6", "convert": "#eef1f6", "tuple": "#eceef3", "async": "#e3dcf7"};
  // A sequential scale, light to dark (ColorBrewer YlOrRd), read with a square root for sizes
  // and times so small values stay visible; linear for fractions.
  var RAMP = ["#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026", "#800026"];
  var MIN_OPEN_PX = 36, TEXT_PX = 21;
  var OVERLAYS = {
    family: {label: "kind of op"},
    time: {label: "est. time", unit: fmtTime, sqrt: true, get: function (f) { return f.seconds; }},
    bytes: {label: "bytes accessed", unit: fmtBytes, sqrt: true, get: function (f) { return f.bytes; }},
    util: {label: "FLOP utilisation", unit: fmtPct, fixedMax: 1, get: function (f) { return f.timedSec ? f.utilSec / f.timedSec : null; }},
    peak: {label: "live at the memory peak", unit: fmtBytes, sqrt: true, get: function (f) { return f.peakBytes; }}
  };
  function rampColour(x) {  // x in [0, 1]
    var t = Math.max(0, Math.min(1, x)) * (RAMP.length - 1), k = Math.min(RAMP.length - 2, Math.floor(t)), f = t - k;
    function ch(hex, i) { return parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16); }
    var out = "#";
    for (var i = 0; i < 3; i++) { var v = Math.round(ch(RAMP[k], i) * (1 - f) + ch(RAMP[k + 1], i) * f); out += (v < 16 ? "0" : "") + v.toString(16); }
    return out;
  }
  function overlayMax(scene) {  // the largest value among the boxes shown, the legend's top
    var ov = OVERLAYS[G.overlay];
    if (!ov.get) return 0;
    if (ov.fixedMax) return ov.fixedMax;
    var m = 0;
    (function walk(it) { it.kids.forEach(function (c) { if (c.open) walk(c); else { var v = ov.get(nodeFigures(c.n)); if (v > m) m = v; } }); })(scene.root);
    return m;
  }
  function fillOf(n) {
    if (G.overlay === "family") {
      if (n.kind === "op" || n.kind === "call") return FAMILY_FILL[comps[n.ci].instructions[n.ii][C.family]] || "#eef1f6";
      return n.kind === "ns" ? "#d8efe9" : n.kind === "instance" ? "#e6e0f8" : "#e3e9f6";
    }
    var v = OVERLAYS[G.overlay].get(nodeFigures(n));
    if (v == null || !G.ovMax) return "#f1f3f7";
    var x = v / G.ovMax;
    return rampColour(OVERLAYS[G.overlay].sqrt ? Math.sqrt(Math.max(0, x)) : x);
  }
  function legend() {
    var box = G.legend;
    box.textContent = "";
    var ov = OVERLAYS[G.overlay];
    if (G.overlay === "family") {
      box.appendChild(el("b", {text: "kind of op"}));
      [["linear algebra", "matmul/conv"], ["collective", "collective"], ["control flow", "loop/call"], ["reduction", "reduction"],
        ["custom", "custom call"], ["indexing", "indexing"], ["shape", "data movement"], ["elementwise binary", "elementwise"]].forEach(function (f) {
        box.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:" + FAMILY_FILL[f[0]]}), f[1]));
      });
      box.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:#d8efe9;outline:1.5px solid #2f9e8f"}), "group (closed)"));
      return;
    }
    box.appendChild(el("b", {text: ov.label + (ov.fixedMax ? "" : " (largest shown: " + ov.unit(G.ovMax) + ")")}));
    var bar = el("span", {cls: "ramp"}), ticks = el("span", {cls: "ramp-ticks"});
    bar.style.background = "linear-gradient(90deg," + RAMP.join(",") + ")";
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) {  // absolute values at the ramp's marks
      var v = ov.sqrt ? G.ovMax * f * f : G.ovMax * f;
      ticks.appendChild(el("span", {text: G.ovMax ? ov.unit(v) : "–"}));
    });
    box.appendChild(el("span", {cls: "ramp-box"}, bar, ticks));
    box.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:#f1f3f7"}), "none"));
  }

  // ---- one frame ----------------------------------------------------------------------------
  function drawGraph() {
    if (!G.canvas || !G.scene) return;
    var started = performance.now();
    var c = G.canvas, dpr = window.devicePixelRatio || 1, w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    var ctx = c.getContext("2d"), v = G.view;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = G.colours.canvas; ctx.fillRect(0, 0, w, h);
    ctx.setTransform(dpr * v.s, 0, 0, dpr * v.s, -v.x * v.s * dpr, -v.y * v.s * dpr);
    var vis = {x0: v.x, y0: v.y, x1: v.x + w / v.s, y1: v.y + h / v.s};
    G.stats = {boxes: 0, edges: 0, text: 0};
    G.edgeAlpha = G.lastEdges > 150 ? 0.45 : G.lastEdges > 60 ? 0.7 : 1;  // a hairball fades behind the boxes
    drawItem(ctx, G.scene.root, vis, v.s);
    G.stats.ms = performance.now() - started;
    G.lastEdges = G.stats.edges;
    drawMinimap();
  }
  function inView(it, vis) { return it.x < vis.x1 && it.x + it.w > vis.x0 && it.y < vis.y1 && it.y + it.h > vis.y0; }
  function drawItem(ctx, it, vis, s) {
    var n = it.n, col = G.colours;
    if (it.open && n !== GM.root && (it.w * s < MIN_OPEN_PX || it.h * s < MIN_OPEN_PX)) { drawClosed(ctx, it, s, true); return; }
    if (it.open) {
      if (n !== GM.root) {
        ctx.fillStyle = n.kind === "ns" ? col.nsBox : n.kind === "call" || n.kind === "instance" ? col.callBox : col.autoBox;
        roundRect(ctx, it.x, it.y, it.w, it.h, 10); ctx.fill();
        ctx.lineWidth = (G.selected === n ? 2.5 : 1) / Math.max(s, 0.25);
        ctx.strokeStyle = G.selected === n ? col.peak : n.kind === "ns" ? col.nsStroke : col.groupStroke; ctx.stroke();
        if (it.w * s >= 60) headerText(ctx, it, s);
        G.stats.boxes++;
      }
      var edgesOn = s >= 0.06 && (it.w * s > 80);
      if (edgesOn) {
        if (!it.fan) {  // a box feeding many (the parameters) draws its edges faintly: no hairball
          it.fan = {};
          it.edges.forEach(function (e) { it.fan[e.from.n.id] = (it.fan[e.from.n.id] || 0) + 1; });
        }
        it.edges.forEach(function (e) { drawEdge(ctx, e, vis, s, it.fan[e.from.n.id] > 12); });
      }
      it.kids.forEach(function (k) { if (inView(k, vis)) drawItem(ctx, k, vis, s); });
      return;
    }
    drawClosed(ctx, it, s, false);
  }
  function drawClosed(ctx, it, s, wasOpen) {
    var n = it.n, fill = wasOpen ? G.colours.callBox : fillOf(n), leaf = n.kind === "op" || n.kind === "call";
    var sel = G.selected === n || (G.marked && G.marked[n.id]);
    ctx.fillStyle = fill;
    roundRect(ctx, it.x, it.y, it.w, it.h, leaf ? 7 : 9); ctx.fill();
    ctx.lineWidth = (sel ? 2.5 : leaf ? 1 : 1.6) / Math.max(s, 0.3);
    ctx.strokeStyle = sel ? G.colours.peak : leaf ? (n.kind === "call" ? "#7b61c9" : G.colours.nodeStroke) : "#2f9e8f";
    if (n.kind === "call" && !wasOpen) ctx.setLineDash([5 / Math.max(s, 0.3), 3 / Math.max(s, 0.3)]);
    ctx.stroke(); ctx.setLineDash([]);
    G.stats.boxes++;
    var lines = nodeLines(n), ink = inkOn(fill);
    if (leaf && NH * s < TEXT_PX) {  // small on screen: the name alone, at a size still readable
      if (NH * s < 13 || it.w * s < 44) return;
      var fs = 9.5;
      ctx.save(); ctx.beginPath(); ctx.rect(it.x, it.y, it.w, it.h); ctx.clip();
      ctx.fillStyle = ink[0]; ctx.font = (fs / s).toFixed(2) + "px system-ui, sans-serif";
      ctx.fillText(fitText(ctx, lines[0], it.w - 6 / s), it.x + 4 / s, it.y + it.h / 2 + fs * 0.35 / s);
      ctx.restore();
      G.stats.text++;
      return;
    }
    if (!leaf && it.w * s < 44) return;
    ctx.save();
    ctx.beginPath(); ctx.rect(it.x, it.y, it.w, it.h); ctx.clip();
    ctx.fillStyle = ink[0];
    var maxW = it.w - 14;
    if (leaf) {  // scaled with the box
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillText(fitText(ctx, lines[0], maxW), it.x + 8, it.y + 15);
      if (NH * s >= 26) { ctx.fillStyle = ink[1]; ctx.font = "10px system-ui, sans-serif"; ctx.fillText(fitText(ctx, lines[1], maxW), it.x + 8, it.y + 30); }
    } else {  // a fixed size on screen, so a group names itself at any zoom (Note [Level of detail])
      var f1 = Math.min(12.5, Math.max(10.5, 11 * s)), f2 = f1 - 1.5, b1 = (f1 + 4) / s, b2 = b1 + (f2 + 4) / s;
      ctx.font = "600 " + (f1 / s).toFixed(2) + "px system-ui, sans-serif";
      ctx.fillText(fitText(ctx, lines[0], maxW), it.x + 8 / s * Math.min(1, s), it.y + b1);
      if (b2 * s <= it.h * s - 2) {
        ctx.fillStyle = ink[1]; ctx.font = (f2 / s).toFixed(2) + "px system-ui, sans-serif";
        ctx.fillText(fitText(ctx, lines[1], maxW), it.x + 8 / s * Math.min(1, s), it.y + b2);
      }
    }
    ctx.restore();
    G.stats.text++;
  }
  function headerText(ctx, it, s) {  // at a readable size on screen, whatever the zoom
    var n = it.n, px = Math.min(12, Math.max(10.5, 11 * s)), k = px / s / 11;
    ctx.save();
    ctx.beginPath(); ctx.rect(it.x, it.y, it.w, Math.max(HEAD, (px + 6) / s)); ctx.clip();
    ctx.fillStyle = G.colours.groupInk;
    ctx.font = "600 " + (11 * k).toFixed(2) + "px system-ui, sans-serif";
    var f = nodeFigures(n), tail = " · " + fmtNum(f.count) + " ops" + (f.seconds ? " · " + fmtTime(f.seconds) : "");
    ctx.fillText(fitText(ctx, "▾ " + groupTitle(n) + tail, it.w - 12), it.x + 8, it.y + 16 * Math.min(k, 1.4));
    ctx.restore();
  }
  function groupTitle(n) {
    if (n.kind === "call") { var r = comps[n.ci].instructions[n.ii]; return r[C.name] + " (" + r[C.opcode] + ")"; }
    return n.label;
  }
  // A node's two lines: name and what it is (a get-tuple-element shows its index, a loop its trips).
  function nodeLines(n) {
    if (n.kind === "op" || n.kind === "call") {
      var r = comps[n.ci].instructions[n.ii], what = r[C.opcode], m;
      if (what === "get-tuple-element" && (m = /index=(\d+)/.exec(r[C.text]))) what += " {" + m[1] + "}";
      if (what === "while" && TIM && TIM.trip_counts && TIM.trip_counts[r[C.name]] != null) what += " ×" + TIM.trip_counts[r[C.name]];
      if (what === "custom-call" && (m = /custom_call_target="([^"]*)"/.exec(r[C.text]))) what = m[1];
      return [r[C.name], what + " " + r[C.shape]];
    }
    var f = nodeFigures(n);
    return ["▸ " + n.label, (n.sub ? n.sub : fmtNum(f.count) + " ops") + (f.seconds ? " · " + fmtTime(f.seconds) : "")];
  }
  function drawEdge(ctx, e, vis, s, faint) {
    var p = e.pts;
    if (!p || p.length < 2) return;
    var minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (var i = 0; i < p.length; i++) { minX = Math.min(minX, p[i][0]); maxX = Math.max(maxX, p[i][0]); minY = Math.min(minY, p[i][1]); maxY = Math.max(maxY, p[i][1]); }
    if (maxX < vis.x0 || minX > vis.x1 || maxY < vis.y0 || minY > vis.y1) return;
    var hot = G.selected && (e.from.n === G.selected || e.to.n === G.selected);
    ctx.strokeStyle = hot ? G.colours.peak : G.colours.edge;
    ctx.globalAlpha = hot ? 1 : (G.edgeAlpha || 1) * (faint ? 0.25 : 1);
    ctx.lineWidth = (hot ? 2 : 1.1) / Math.max(s, 0.35);
    ctx.beginPath(); ctx.moveTo(p[0][0], p[0][1]);
    if (p.length === 2) {
      var my = (p[0][1] + p[1][1]) / 2;
      ctx.bezierCurveTo(p[0][0], my, p[1][0], my, p[1][0], p[1][1]);
    } else {
      for (var k = 1; k < p.length - 1; k++) {
        var mx = (p[k][0] + p[k + 1][0]) / 2, my2 = (p[k][1] + p[k + 1][1]) / 2;
        if (k === p.length - 2) ctx.quadraticCurveTo(p[k][0], p[k][1], p[k + 1][0], p[k + 1][1]);
        else ctx.quadraticCurveTo(p[k][0], p[k][1], mx, my2);
      }
    }
    ctx.stroke();
    ctx.globalAlpha = 1;
    G.stats.edges++;
    if (s >= 0.4) {  // the arrowhead
      var a = p[p.length - 1], b = p[p.length - 2], ang = Math.atan2(a[1] - b[1], a[0] - b[0]), L = 7;
      ctx.fillStyle = ctx.strokeStyle;
      ctx.beginPath(); ctx.moveTo(a[0], a[1]);
      ctx.lineTo(a[0] - L * Math.cos(ang - 0.4), a[1] - L * Math.sin(ang - 0.4));
      ctx.lineTo(a[0] - L * Math.cos(ang + 0.4), a[1] - L * Math.sin(ang + 0.4)); ctx.fill();
    }
    if (s >= 0.7 && e.lx != null && e.shape) {
      ctx.fillStyle = G.colours.muted; ctx.font = "9px ui-monospace, monospace";
      ctx.fillText(fitText(ctx, e.shape, 88), e.lx - 44, e.ly + 3);
    }
  }
  function roundRect(ctx, x, y, w, h, r) {
    r = Math.min(r, w / 2, h / 2);
    ctx.beginPath(); ctx.moveTo(x + r, y); ctx.arcTo(x + w, y, x + w, y + h, r); ctx.arcTo(x + w, y + h, x, y + h, r);
    ctx.arcTo(x, y + h, x, y, r); ctx.arcTo(x, y, x + w, y, r); ctx.closePath();
  }
  function graphColours() {
    var dark = matchMedia && matchMedia("(prefers-color-scheme: dark)").matches;
    return {canvas: cssVar("--canvas") || "#fcfcfe", edge: cssVar("--edge") || "#a3acbf", nodeStroke: cssVar("--node-stroke") || "#9aa5bb",
      peak: cssVar("--peak") || "#d6336c", muted: cssVar("--muted") || "#6b7385",
      nsBox: dark ? "rgba(47,158,143,.10)" : "rgba(47,158,143,.06)", nsStroke: "#8cc9bf",
      callBox: dark ? "rgba(123,97,201,.12)" : "rgba(123,97,201,.06)", autoBox: dark ? "rgba(90,141,232,.10)" : "rgba(59,111,216,.05)",
      groupStroke: "#b9a9e6", groupInk: dark ? "#cfd8ee" : "#2b3550"};
  }

  // ---- the minimap: the whole scene small, and the view's rectangle on it -------------------
  function drawMinimap() {
    var m = G.minimap, sc = G.scene;
    if (!m || !sc) return;
    var dpr = window.devicePixelRatio || 1, w = m.clientWidth, h = m.clientHeight;
    if (m.width !== Math.round(w * dpr)) { m.width = Math.round(w * dpr); m.height = Math.round(h * dpr); G.miniCache = null; }
    var k = Math.min(w / sc.w, h / sc.h), ctx = m.getContext("2d");
    G.miniScale = k;
    if (!G.miniCache || G.miniCache.scene !== sc || G.miniCache.overlay !== G.overlay) {
      var off = document.createElement("canvas"); off.width = m.width; off.height = m.height;
      var o = off.getContext("2d");
      o.setTransform(dpr * k, 0, 0, dpr * k, 0, 0);
      (function walk(it) {
        it.kids.forEach(function (c) {
          if (c.open && (c.w * k > 3 && c.h * k > 3)) { o.strokeStyle = "#9d8fd6"; o.lineWidth = 1 / k; o.strokeRect(c.x, c.y, c.w, c.h); walk(c); }
          else { o.fillStyle = c.open ? "#cfc6ee" : fillOf(c.n); o.fillRect(c.x, c.y, c.w, c.h); }
        });
      })(sc.root);
      G.miniCache = {scene: sc, overlay: G.overlay, canvas: off};
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, m.width, m.height);
    ctx.drawImage(G.miniCache.canvas, 0, 0);
    var v = G.view, cw = G.canvas.clientWidth / v.s, ch = G.canvas.clientHeight / v.s;
    var x0 = Math.max(0, v.x * k), y0 = Math.max(0, v.y * k), x1 = Math.min(w - 1, (v.x + cw) * k), y1 = Math.min(h - 1, (v.y + ch) * k);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.strokeStyle = G.colours.peak; ctx.lineWidth = 1.5;
    if (x1 > x0 && y1 > y0) ctx.strokeRect(x0 + 0.75, y0 + 0.75, Math.max(3, x1 - x0 - 1.5), Math.max(3, y1 - y0 - 1.5));
  }

  // ---- hit testing: the deepest box under a point (world coordinates) -----------------------
  function hitTest(x, y) {
    var s = G.view.s;
    function inside(it) { return x >= it.x && x <= it.x + it.w && y >= it.y && y <= it.y + it.h; }
    function find(it) {
      for (var k = it.kids.length - 1; k >= 0; k--) {
        var c = it.kids[k];
        if (!inside(c)) continue;
        if (c.open && !(c.w * s < MIN_OPEN_PX || c.h * s < MIN_OPEN_PX)) {
          if (y <= c.y + HEAD) return c;  // the header: the group itself
          return find(c) || c;
        }
        return c;
      }
      return null;
    }
    return find(G.scene.root);
  }
