/* hloscope report page. Inlined by report/html.py; reads the JSON block #hloscope-data.
 *
 * Every string from the module (names, op_name, source, text) comes from an untrusted file, so
 * the DOM is built with textContent and attributes only, never by parsing markup.
 */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("hloscope-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var MAX_GRAPH_NODES = 250;  // more than this and layout + DOM get slow; offer neighbourhoods
  var C = {};
  D.columns.forEach(function (c, i) { C[c] = i; });
  var comps = D.computations;
  var compIndex = {};
  comps.forEach(function (c, i) { compIndex[c.name] = i; });

  // ---- small helpers -------------------------------------------------------------------------
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else if (k === "on") for (var ev in attrs.on) e.addEventListener(ev, attrs.on[ev]);
      else e.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var ch = arguments[i];
      if (ch == null) continue;
      e.appendChild(typeof ch === "string" ? document.createTextNode(ch) : ch);
    }
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    return e;
  }
  function pick(o) {  // first present field among alternatives
    if (!o) return undefined;
    for (var i = 1; i < arguments.length; i++) if (o[arguments[i]] !== undefined && o[arguments[i]] !== null) return o[arguments[i]];
    return undefined;
  }
  function fmtBytes(n) {
    if (n == null || isNaN(n)) return "–";
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0; n = Number(n);
    while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(n < 10 ? 2 : 1) : String(Math.round(n))) + " " + u[i];
  }
  function fmtNum(n) {
    if (n == null || isNaN(n)) return "–";
    n = Number(n);
    var a = Math.abs(n), u = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < u.length; i++) if (a >= u[i][0]) return (n / u[i][0]).toFixed(2) + " " + u[i][1];
    return String(Math.round(n * 100) / 100);
  }
  function fmtTime(s) {
    if (s == null || isNaN(s)) return "–";
    s = Number(s);
    if (s >= 1) return s.toFixed(3) + " s";
    if (s >= 1e-3) return (s * 1e3).toFixed(3) + " ms";
    return (s * 1e6).toFixed(2) + " µs";
  }
  function sourceOf(r) {
    var s = pick(r, "source");
    if (s) return String(s);
    var f = pick(r, "source_file"), l = pick(r, "source_line");
    return f ? (l != null ? f + ":" + l : String(f)) : "";
  }
  function section(name) { return D[name] || {status: "unavailable", message: "not collected", data: null}; }
  function statusNote(sec, what) {
    if (sec.status === "ok") return null;
    return el("p", {cls: sec.status === "error" ? "note error" : "note",
      text: what + (sec.status === "error" ? " failed: " : " not available: ") + (sec.message || "")});
  }

  // ---- instruction lookup ----------------------------------------------------------------------
  var byName = null;  // name -> [comp, index]; built on first search
  function nameIndex() {
    if (byName) return byName;
    byName = {};
    comps.forEach(function (c, ci) {
      c.instructions.forEach(function (r, ii) { if (!(r[C.name] in byName)) byName[r[C.name]] = [ci, ii]; });
    });
    return byName;
  }
  var usersCache = {};
  function usersOf(ci) {
    if (usersCache[ci]) return usersCache[ci];
    var rows = comps[ci].instructions, u = rows.map(function () { return []; });
    rows.forEach(function (r, i) { r[C.operands].forEach(function (o) { if (o >= 0 && u[o].indexOf(i) < 0) u[o].push(i); }); });
    return (usersCache[ci] = u);
  }
  var callers = null;  // computation index -> [[comp, inst]] that call it
  function callersOf(ci) {
    if (!callers) {
      callers = comps.map(function () { return []; });
      comps.forEach(function (c, k) {
        c.instructions.forEach(function (r, i) { r[C.called].forEach(function (t) { if (t >= 0) callers[t].push([k, i]); }); });
      });
    }
    return callers[ci];
  }

  // ---- tables ----------------------------------------------------------------------------------
  // cols: [{key, label, num, fmt(row) -> string|Node, val(row) -> sortable}]
  function table(cols, rows, opts) {
    opts = opts || {};
    var t = el("table"), thead = el("thead"), tbody = el("tbody"), hr = el("tr");
    var state = {col: opts.sortCol == null ? -1 : opts.sortCol, dir: opts.sortDir || -1};
    cols.forEach(function (c, i) {
      var th = el("th", {cls: "sortable" + (c.num ? " num" : ""), text: c.label});
      th.addEventListener("click", function () {
        state.dir = state.col === i ? -state.dir : (c.num ? -1 : 1); state.col = i; draw();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr); t.appendChild(thead); t.appendChild(tbody);
    function draw() {
      var rs = rows.slice();
      if (state.col >= 0) {
        var c = cols[state.col], get = c.val || function (r) { return r[c.key]; };
        rs.sort(function (a, b) {
          var x = get(a), y = get(b);
          if (x == null) return 1; if (y == null) return -1;
          return (x < y ? -1 : x > y ? 1 : 0) * state.dir;
        });
      }
      Array.prototype.forEach.call(hr.children, function (th, i) {
        th.classList.remove("sorted-asc", "sorted-desc");
        if (i === state.col) th.classList.add(state.dir > 0 ? "sorted-asc" : "sorted-desc");
      });
      tbody.textContent = "";
      var limit = opts.limit || 500;
      rs.slice(0, limit).forEach(function (r) {
        var tr = el("tr");
        cols.forEach(function (c) {
          var v = c.fmt ? c.fmt(r) : r[c.key];
          var td = el("td", {cls: (c.num ? "num" : "") + (c.cls ? " " + c.cls : "")});
          if (v instanceof Node) td.appendChild(v); else td.textContent = v == null ? "" : String(v);
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
      if (rs.length > limit) tbody.appendChild(el("tr", null, el("td", {colspan: cols.length, cls: "muted", text: "… " + (rs.length - limit) + " more rows"})));
    }
    draw();
    return el("div", {cls: "scroll"}, t);
  }
  function instLink(name) {
    return el("span", {cls: "link mono", text: name, on: {click: function () { jumpTo(name); }}});
  }

  // ---- header and tabs -------------------------------------------------------------------------
  var tabs = {};
  function showTab(name) {
    Object.keys(tabs).forEach(function (k) {
      tabs[k].section.classList.toggle("active", k === name);
      tabs[k].button.classList.toggle("active", k === name);
    });
    if (tabs[name].onshow) { tabs[name].onshow(); tabs[name].onshow = null; }
  }
  function addTab(name, label, build, lazy) {
    var s = el("section", {cls: "tab", id: "tab-" + name});
    var b = el("button", {text: label, "data-tab": name, on: {click: function () { showTab(name); }}});
    document.getElementById("tabs").appendChild(b);
    document.querySelector("main").appendChild(s);
    tabs[name] = {section: s, button: b, onshow: lazy ? function () { build(s); } : null};
    if (!lazy) build(s);
  }

  function header() {
    var m = D.module, sum = section("summary").data, cost = section("cost").data;
    var mem = section("memory").data, tim = section("timing").data, col = collectiveRows();
    document.getElementById("title").textContent = D.title || m.name;
    var sub = [m.instruction_count + " instructions", m.computation_count + " computations", "entry " + m.entry];
    if (m.replica_count) sub.push(m.replica_count + " replicas");
    if (m.num_partitions) sub.push(m.num_partitions + " partitions");
    if (m.is_scheduled) sub.push("scheduled");
    if (D.source_path) sub.push(D.source_path);
    document.getElementById("subtitle").textContent = sub.join(" · ");
    var figs = document.getElementById("figures");
    function fig(v, k) { figs.appendChild(el("div", {cls: "figure"}, el("div", {cls: "v", text: v}), el("div", {cls: "k", text: k}))); }
    fig(String(m.instruction_count), "instructions");
    if (sum) fig(fmtBytes(sum.parameter_bytes), "parameters");
    if (cost) fig(fmtNum(cost.loop_aware ? cost.loop_aware.flops : cost.flops) + "FLOP", cost.loop_aware ? "flops (loop trips)" : "flops");
    if (cost) fig(fmtBytes(cost.bytes_accessed), "bytes accessed");
    if (mem) fig(fmtBytes(mem.peak_bytes), "peak memory");
    if (tim) fig(fmtTime(pick(tim, "total_seconds", "seconds", "time_s")), "estimated time");
    if (col && col.length) fig(fmtBytes(col.reduce(function (a, r) { return a + (Number(collBytes(r)) || 0); }, 0)), "collective bytes");
  }

  // ---- overview --------------------------------------------------------------------------------
  function buildOverview(s) {
    var sec = section("summary"), sum = sec.data;
    if (!sum) { s.appendChild(el("div", {cls: "card"}, statusNote(sec, "The summary"))); return; }
    var g = el("div", {cls: "grid2"});
    function io(title, rows, total) {
      return el("div", {cls: "card"}, el("h2", {text: title + " (" + fmtBytes(total) + ")"}),
        table([{key: "name", label: "name", cls: "mono wrap"}, {key: "shape", label: "shape", cls: "mono wrap"},
          {key: "bytes", label: "bytes", num: true, fmt: function (r) { return fmtBytes(r.bytes); }}], rows, {limit: 200}));
    }
    g.appendChild(io("Parameters", sum.parameters || [], sum.parameter_bytes));
    g.appendChild(io("Outputs", sum.outputs || [], sum.output_bytes));
    s.appendChild(g);
    var ops = Object.keys(sum.opcode_counts || {}).map(function (k) { return {opcode: k, count: sum.opcode_counts[k]}; });
    var max = ops.reduce(function (a, r) { return Math.max(a, r.count); }, 1);
    var card = el("div", {cls: "card"}, el("h2", {text: "Instructions by opcode"}));
    card.appendChild(table([{key: "opcode", label: "opcode", cls: "mono"},
      {key: "count", label: "count", num: true},
      {key: "bar", label: "", fmt: function (r) { var b = el("span", {cls: "bar", style: "width:160px"}); b.appendChild(el("i", {style: "width:" + (100 * r.count / max).toFixed(1) + "%"})); return b; }, val: function (r) { return r.count; }}],
      ops, {sortCol: 1}));
    s.appendChild(card);
    var chips = el("div", {cls: "card"}, el("h2", {text: "At a glance"}));
    Object.keys(sum.collectives || {}).forEach(function (k) { chips.appendChild(el("span", {cls: "chip", text: k + " ×" + sum.collectives[k]})); });
    Object.keys(sum.custom_call_targets || {}).forEach(function (k) { chips.appendChild(el("span", {cls: "chip", text: "custom-call " + k + " ×" + sum.custom_call_targets[k]})); });
    if (sum.while_loops) chips.appendChild(el("span", {cls: "chip", text: "while loops ×" + sum.while_loops}));
    ["cost", "memory", "collectives", "timing"].forEach(function (k) { var n = statusNote(section(k), k); if (n) chips.appendChild(n); });
    s.appendChild(chips);
  }

  // ---- cost ------------------------------------------------------------------------------------
  function buildCost(s) {
    var sec = section("cost"), cost = sec.data, card = el("div", {cls: "card"}, el("h2", {text: "Costliest instructions"}));
    s.appendChild(card);
    if (!cost) { card.appendChild(statusNote(sec, "The cost analysis")); return; }
    var times = {}, tim = section("timing").data;
    if (tim) (pick(tim, "per_instruction", "longest") || []).forEach(function (r) {
      var n = pick(r, "name", "instruction"); times[n] = (times[n] || 0) + (Number(pick(r, "seconds", "time_s")) || 0);
    });
    var rows = (cost.per_instruction || []).map(function (r) {
      return {name: r.name, computation: r.computation, opcode: r.opcode, flops: r.flops, bytes: r.bytes_accessed,
        trans: r.transcendentals, time: times[r.name], op_name: r.op_name || "", source: sourceOf(r)};
    });
    var tot = el("p", {cls: "muted", text: "Total " + fmtNum(cost.flops) + "FLOP, " + fmtBytes(cost.bytes_accessed) + " accessed" +
      (cost.loop_aware ? "; counting loop trips " + fmtNum(cost.loop_aware.flops) + "FLOP, " + fmtBytes(cost.loop_aware.bytes_accessed) : "") +
      ". Click a header to sort."});
    card.appendChild(tot);
    if (!rows.length) { card.appendChild(el("p", {cls: "note", text: "The cost analysis gave no per-instruction rows."})); return; }
    var cols = [
      {key: "name", label: "instruction", fmt: function (r) { return instLink(r.name); }},
      {key: "opcode", label: "opcode", cls: "mono"},
      {key: "flops", label: "FLOPs", num: true, fmt: function (r) { return fmtNum(r.flops); }},
      {key: "bytes", label: "bytes", num: true, fmt: function (r) { return fmtBytes(r.bytes); }},
      {key: "op_name", label: "op_name", cls: "mono wrap"},
      {key: "source", label: "source", cls: "mono wrap"}];
    // The time column only when there is a time estimate (it needs a hardware profile).
    if (tim) cols.splice(4, 0, {key: "time", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.time); }});
    card.appendChild(table(cols, rows, {sortCol: 2}));
  }

  // ---- memory ----------------------------------------------------------------------------------
  function memorySeries(mem) {
    var raw = pick(mem, "timeline", "series", "memory_over_time", "live_bytes") || [];
    if (raw && !Array.isArray(raw) && raw.bytes) raw = raw.bytes.map(function (b, i) { return {time: (raw.time || [])[i] != null ? raw.time[i] : i, bytes: b}; });
    return raw.map(function (p, i) {
      if (typeof p === "number") return {time: i, bytes: p, instruction: null};
      if (Array.isArray(p)) return {time: p[0], bytes: p[1], instruction: p[2] || null};
      return {time: pick(p, "time", "t") != null ? pick(p, "time", "t") : i, bytes: Number(pick(p, "bytes", "live_bytes", "size")) || 0,
        instruction: pick(p, "instruction", "name") || null};
    });
  }
  function buildMemory(s) {
    var sec = section("memory"), mem = sec.data;
    var chartCard = el("div", {cls: "card chart"}, el("h2", {text: "Live memory over the schedule"}));
    s.appendChild(chartCard);
    if (!mem) { chartCard.appendChild(statusNote(sec, "The memory analysis")); return; }
    chartCard.appendChild(el("p", {cls: "muted", text: "Peak " + fmtBytes(mem.peak_bytes) + (mem.peak_time != null ? " at time " + mem.peak_time : "") + ". Click the chart to list the buffers live at that point."}));
    var series = memorySeries(mem), live = el("div");
    var buffers = pick(mem, "buffers", "live_ranges", "values") || [];
    if (series.length) chartCard.appendChild(memoryChart(series, mem, function (p) { showLive(live, p, buffers); }));
    else chartCard.appendChild(el("p", {cls: "note", text: "The memory analysis gave no series over time."}));
    chartCard.appendChild(live);
    var peakCard = el("div", {cls: "card"}, el("h2", {text: "Buffers live at the peak"}));
    peakCard.appendChild(bufferTable(mem.peak_buffers || []));
    s.appendChild(peakCard);
  }
  function bufferTable(rows) {
    return table([
      {key: "name", label: "buffer", fmt: function (r) { return instLink(String(pick(r, "instruction", "name", "value") || "")); }, val: function (r) { return pick(r, "instruction", "name"); }},
      {key: "shape", label: "shape", cls: "mono wrap"},
      {key: "size", label: "size", num: true, fmt: function (r) { return fmtBytes(pick(r, "size", "bytes")); }, val: function (r) { return Number(pick(r, "size", "bytes")); }},
      {key: "op_name", label: "op_name", cls: "mono wrap"},
      {key: "source", label: "source", cls: "mono wrap", fmt: sourceOf}], rows, {sortCol: 2, limit: 200});
  }
  function showLive(box, p, buffers) {
    box.textContent = "";
    box.appendChild(el("h2", {text: "Live at time " + p.time + (p.instruction ? " (" + p.instruction + ")" : "") + ": " + fmtBytes(p.bytes)}));
    if (!buffers.length) { box.appendChild(el("p", {cls: "note", text: "The memory analysis did not list live ranges, so the buffers at a point cannot be shown."})); return; }
    var rows = buffers.filter(function (b) { return b.start <= p.time && p.time <= b.end; });
    box.appendChild(bufferTable(rows));
  }
  function memoryChart(series, mem, onpick) {
    var W = 1000, H = 300, L = 70, R = 16, T = 22, B = 28;
    var svg = sv("svg", {viewBox: "0 0 " + W + " " + H, preserveAspectRatio: "none", id: "memory-chart"});
    var t0 = series[0].time, t1 = series[series.length - 1].time || 1;
    var maxB = series.reduce(function (a, p) { return Math.max(a, p.bytes); }, 1);
    function x(t) { return L + (W - L - R) * (t1 === t0 ? 0.5 : (t - t0) / (t1 - t0)); }
    function y(b) { return T + (H - T - B) * (1 - b / maxB); }
    var ax = sv("g", {"class": "axis"});
    for (var k = 0; k <= 4; k++) {
      var b = maxB * k / 4;
      ax.appendChild(sv("line", {x1: L, x2: W - R, y1: y(b), y2: y(b)}));
      ax.appendChild(sv("text", {x: L - 6, y: y(b) + 4, "text-anchor": "end", text: fmtBytes(b)}));
    }
    ax.appendChild(sv("text", {x: L, y: H - 8, text: String(t0)}));
    ax.appendChild(sv("text", {x: W - R, y: H - 8, "text-anchor": "end", text: String(t1) + " (schedule time)"}));
    svg.appendChild(ax);
    // A step path: memory holds its value until the next instruction.
    var d = "M" + x(t0) + "," + y(0);
    series.forEach(function (p, i) {
      d += "L" + x(p.time) + "," + y(p.bytes);
      var nt = i + 1 < series.length ? series[i + 1].time : p.time;
      d += "L" + x(nt) + "," + y(p.bytes);
    });
    d += "L" + x(t1) + "," + y(0) + "Z";
    svg.appendChild(sv("path", {d: d, "class": "area"}));
    var peak = series.reduce(function (a, p) { return p.bytes > a.bytes ? p : a; }, series[0]);
    if (mem.peak_time != null) series.forEach(function (p) { if (p.time === mem.peak_time) peak = p; });
    svg.appendChild(sv("circle", {cx: x(peak.time), cy: y(peak.bytes), r: 5, "class": "peak"}));
    svg.appendChild(sv("text", {x: Math.min(x(peak.time) + 8, W - 150), y: y(peak.bytes) - 6 < 14 ? 14 : y(peak.bytes) - 6, "class": "peak-label", text: "peak " + fmtBytes(peak.bytes)}));
    var cursor = sv("line", {"class": "cursor", y1: T, y2: H - B, x1: -10, x2: -10});
    svg.appendChild(cursor);
    var hit = sv("rect", {x: L, y: T, width: W - L - R, height: H - T - B, "class": "hit"});
    hit.addEventListener("click", function (ev) {
      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * W / r.width;
      var t = t0 + (px - L) / (W - L - R) * (t1 - t0), best = series[0];
      series.forEach(function (p) { if (p.time <= t) best = p; });
      cursor.setAttribute("x1", x(best.time)); cursor.setAttribute("x2", x(best.time));
      onpick(best);
    });
    svg.appendChild(hit);
    return svg;
  }

  // ---- collectives -----------------------------------------------------------------------------
  function collectiveRows() {
    var d = section("collectives").data;
    if (!d) return null;
    return Array.isArray(d) ? d : (pick(d, "collectives", "instructions") || []);
  }
  function collBytes(r) { return pick(r, "payload_bytes", "bytes", "bytes_on_wire", "operand_bytes"); }
  function buildCollectives(s) {
    var sec = section("collectives"), rows = collectiveRows(), card = el("div", {cls: "card"}, el("h2", {text: "Collectives"}));
    s.appendChild(card);
    if (!rows) { card.appendChild(statusNote(sec, "The collectives analysis")); return; }
    if (!rows.length) { card.appendChild(el("p", {cls: "note", text: "This module has no collectives."})); return; }
    card.appendChild(table([
      {key: "name", label: "instruction", fmt: function (r) { return instLink(String(r.name || "")); }},
      {key: "opcode", label: "opcode", cls: "mono"},
      {key: "group_mode", label: "mode", cls: "mono"},
      {key: "group_size", label: "group size", num: true},
      {key: "count", label: "runs", num: true},
      {key: "bytes", label: "payload", num: true, fmt: function (r) { return fmtBytes(collBytes(r)); }, val: function (r) { return Number(collBytes(r)); }},
      {key: "ring_bytes", label: "ring bytes/device", num: true, fmt: function (r) { return fmtBytes(r.ring_bytes); }},
      {key: "replica_groups", label: "groups", cls: "mono wrap", fmt: function (r) { var g = r.replica_groups; return g == null ? "" : (typeof g === "string" ? g : JSON.stringify(g)); }},
      {key: "op_name", label: "op_name", cls: "mono wrap"}], rows, {sortCol: 5}));
  }

  // ---- graph: data ----------------------------------------------------------------------------
  // Mirrors report/graphs.py: fusions are one node; expanded ones inline their body as a cluster.
  function graphData(ci, keep, expanded) {
    var rows = comps[ci].instructions, nodes = [], edges = [], outId = {};
    rows.forEach(function (r, i) {
      if (keep && !keep[i]) return;
      var called = r[C.called], isFusion = r[C.opcode] === "fusion" && called.length && called[0] >= 0;
      if (isFusion && expanded[r[C.name]]) {
        var fc = called[0], inner = comps[fc].instructions, pre = i + "/";
        var params = {};
        inner.forEach(function (q, j) {
          nodes.push({id: pre + j, ci: fc, ii: j, cluster: r[C.name]});
          q[C.operands].forEach(function (o) { if (o >= 0) edges.push([pre + o, pre + j]); });
          if (q[C.opcode] === "parameter") { var m = /parameter\((\d+)\)/.exec(q[C.text]); if (m) params[m[1]] = pre + j; }
        });
        r[C.operands].forEach(function (o, k) {
          if (o >= 0 && (!keep || keep[o]) && params[k] != null) edges.push([outId[o] || String(o), params[k]]);
        });
        outId[i] = pre + comps[fc].root;
        return;
      }
      nodes.push({id: String(i), ci: ci, ii: i, fusion: isFusion ? called[0] : null});
      r[C.operands].forEach(function (o) { if (o >= 0 && (!keep || keep[o])) edges.push([outId[o] || String(o), String(i)]); });
    });
    return {nodes: nodes, edges: edges};
  }
  function neighbourhood(ci, center, depth, cap) {
    var rows = comps[ci].instructions, users = usersOf(ci), dist = {}, q = [center], keep = {}, n = 1;
    dist[center] = 0; keep[center] = true;
    while (q.length) {
      var i = q.shift();
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

  // ---- graph: layout (longest-path layers, barycenter ordering) ---------------------------------
  var NW = 168, NH = 38, GX = 22, GY = 46;
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
    var pos = {};
    function setPos() { layers.forEach(function (ls) { ls.forEach(function (v, k) { pos[v] = k; }); }); }
    setPos();
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
      };
    }
    for (var it = 0; it < 4; it++) {
      layers.slice(1).forEach(sweep(preds));
      layers.slice(0, -1).reverse().forEach(sweep(succs));
    }
    var width = layers.reduce(function (a, ls) { return Math.max(a, ls.length); }, 1) * (NW + GX);
    var xy = g.nodes.map(function () { return null; });
    layers.forEach(function (ls, l) {
      var off = (width - ls.length * (NW + GX)) / 2;
      ls.forEach(function (v, k) { xy[v] = [off + k * (NW + GX), l * (NH + GY)]; });
    });
    return {xy: xy, idx: idx, width: width, height: layers.length * (NH + GY)};
  }

  // ---- graph: view -----------------------------------------------------------------------------
  var G = {ci: 0, center: null, depth: 3, expanded: {}, selected: null, view: null};
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
    var search = el("input", {type: "text", id: "graph-search", placeholder: "search instructions by name…", size: 28});
    var results = el("div", {cls: "search-results", id: "search-results"});
    search.addEventListener("input", function () { runSearch(search.value, results); });
    var depth = el("input", {type: "number", min: 1, max: 12, value: G.depth, id: "graph-depth"});
    depth.addEventListener("change", function () { G.depth = Math.max(1, Number(depth.value) || 3); if (G.center != null) draw(); });
    var whole = el("button", {cls: "btn", text: "whole computation", on: {click: function () { G.center = null; draw(); }}});
    var fit = el("button", {cls: "btn", text: "fit", on: {click: function () { fitView(); }}});
    bar.appendChild(el("label", {text: "computation"})); bar.appendChild(sel); bar.appendChild(search);
    bar.appendChild(el("label", {text: "depth"})); bar.appendChild(depth); bar.appendChild(whole); bar.appendChild(fit);
    card.appendChild(bar);
    var notice = el("p", {cls: "muted", id: "graph-notice"});
    card.appendChild(notice);
    var svg = sv("svg", {id: "graph-svg"});
    var side = el("div", {cls: "card details", id: "graph-details"}, el("p", {cls: "muted", text: "Click a node to see it here; double-click a fusion to expand it."}));
    var wrap = el("div", {cls: "graph-wrap"}, svg, el("div", null, results, side));
    card.appendChild(wrap);
    s.appendChild(card);
    G.svg = svg; G.select = sel; G.notice = notice; G.side = side;
    panZoom(svg);
    showComputation(comps.findIndex(function (c) { return c.is_entry; }), null);
  }
  function showComputation(ci, center) {
    G.ci = ci; G.center = center; G.expanded = {}; G.selected = center;
    if (G.select) G.select.value = ci;
    draw();
  }
  function draw() {
    var ci = G.ci, rows = comps[ci].instructions, keep = null, msg = "";
    if (G.center != null) {
      keep = neighbourhood(ci, G.center, G.depth, MAX_GRAPH_NODES);
      msg = "Neighbourhood of " + rows[G.center][C.name] + " (depth " + G.depth + "): " + Object.keys(keep).length + " of " + rows.length + " instructions.";
    } else if (rows.length > MAX_GRAPH_NODES) {
      // Too big to draw whole: start from the root's neighbourhood, capped.
      G.center = comps[ci].root >= 0 ? comps[ci].root : rows.length - 1;
      keep = neighbourhood(ci, G.center, G.depth, MAX_GRAPH_NODES);
      msg = "This computation has " + rows.length + " instructions; showing the neighbourhood of its root " + rows[G.center][C.name] +
        " (" + Object.keys(keep).length + " nodes). Search or click a node and change the depth to explore.";
    } else msg = rows.length + " instructions. Double-click a fusion (dashed) to expand it.";
    G.notice.textContent = msg;
    var g = graphData(ci, keep, G.expanded);
    var L = layout(g), svg = G.svg;
    svg.textContent = "";
    var root = sv("g", {id: "graph-root"});
    // Clusters (expanded fusions) behind everything.
    var boxes = {};
    g.nodes.forEach(function (n, i) {
      if (!n.cluster) return;
      var p = L.xy[i], b = boxes[n.cluster] || (boxes[n.cluster] = [1e9, 1e9, -1e9, -1e9]);
      b[0] = Math.min(b[0], p[0]); b[1] = Math.min(b[1], p[1]); b[2] = Math.max(b[2], p[0] + NW); b[3] = Math.max(b[3], p[1] + NH);
    });
    Object.keys(boxes).forEach(function (k) {
      var b = boxes[k];
      root.appendChild(sv("rect", {"class": "gcluster", x: b[0] - 10, y: b[1] - 18, width: b[2] - b[0] + 20, height: b[3] - b[1] + 28}));
      root.appendChild(sv("text", {x: b[0] - 4, y: b[1] - 5, "font-size": 10, fill: "#7b61c9", text: k}));
    });
    var edgeEls = [];
    g.edges.forEach(function (e) {
      var a = L.idx[e[0]], b = L.idx[e[1]];
      if (a == null || b == null) return;
      var p = L.xy[a], q = L.xy[b], x1 = p[0] + NW / 2, y1 = p[1] + NH, x2 = q[0] + NW / 2, y2 = q[1], my = (y1 + y2) / 2;
      var path = sv("path", {"class": "gedge", d: "M" + x1 + "," + y1 + "C" + x1 + "," + my + " " + x2 + "," + my + " " + x2 + "," + y2});
      path.__ends = [a, b];
      edgeEls.push(path); root.appendChild(path);
    });
    g.nodes.forEach(function (n, i) {
      var r = comps[n.ci].instructions[n.ii], p = L.xy[i];
      var cls = "gnode" + (n.fusion != null ? " fusion" : "") + (n.ci === ci && n.ii === G.center ? " center" : "") + (n.ci === ci && n.ii === G.selected ? " selected" : "");
      var gn = sv("g", {"class": cls, transform: "translate(" + p[0] + "," + p[1] + ")", "data-name": r[C.name]});
      gn.appendChild(sv("title", {text: r[C.name] + " = " + r[C.shape] + " " + r[C.opcode] + (r[C.op_name] ? "\n" + r[C.op_name] : "")}));
      gn.appendChild(sv("rect", {width: NW, height: NH, rx: 7, fill: FAMILY_FILL[r[C.family]] || "#f3f5f9"}));
      gn.appendChild(sv("text", {x: 8, y: 15, text: clip(r[C.name], 25)}));
      gn.appendChild(sv("text", {x: 8, y: 29, "class": "op", text: clip(r[C.opcode] + " " + r[C.shape], 30)}));
      gn.addEventListener("click", function (ev) {
        ev.stopPropagation();
        edgeEls.forEach(function (pth) { pth.classList.toggle("hot", pth.__ends[0] === i || pth.__ends[1] === i); });
        Array.prototype.forEach.call(root.querySelectorAll(".gnode.selected"), function (x) { x.classList.remove("selected"); });
        gn.classList.add("selected");
        if (n.ci === ci) G.selected = n.ii;
        details(n.ci, n.ii);
      });
      gn.addEventListener("dblclick", function (ev) {
        ev.stopPropagation();
        if (n.fusion != null) { G.expanded[r[C.name]] = true; draw(); }
        else if (n.cluster) { delete G.expanded[n.cluster]; draw(); }
      });
      root.appendChild(gn);
    });
    svg.appendChild(root);
    G.view = {w: Math.max(L.width, 200), h: Math.max(L.height, 100)};
    fitView();
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function fitView() {
    if (!G.view) return;
    var pad = 30, w = G.view.w + 2 * pad, h = G.view.h + 2 * pad;
    var r = G.svg.getBoundingClientRect(), sw = r.width || 900, sh = r.height || 600;
    // Fit the whole graph, but never shrink text below ~60%: past that, show the top and let
    // the reader pan and zoom.
    var scale = Math.min(1.2, Math.max(0.6, Math.min(sw / w, sh / h)));
    var vw = sw / scale, vh = sh / scale;
    setViewBox([-pad + (w - vw) / 2, -pad, vw, vh]);
  }
  function setViewBox(vb) { G.vb = vb; G.svg.setAttribute("viewBox", vb.join(" ")); }
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
    row("op_name", r[C.op_name]); row("source", r[C.source]);
    var ops = el("div"); r[C.operands].forEach(function (o) { if (o >= 0) { ops.appendChild(link(ci, o)); ops.appendChild(document.createTextNode(" ")); } });
    row("operands", ops.childNodes.length ? ops : null);
    var us = el("div"); usersOf(ci)[ii].forEach(function (u) { us.appendChild(link(ci, u)); us.appendChild(document.createTextNode(" ")); });
    row("users", us.childNodes.length ? us : null);
    var cl = el("div"); r[C.called].forEach(function (t) { if (t >= 0) cl.appendChild(el("div", null, el("span", {cls: "link mono", text: comps[t].name, on: {click: function () { showComputation(t, null); }}}))); });
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
    showTab("graph");
    // Small computations stay whole with the node selected; big ones (or an open
    // neighbourhood view) re-centre on the node.
    var big = comps[ci].instructions.length > MAX_GRAPH_NODES;
    if (ci !== G.ci) G.expanded = {};
    G.ci = ci; G.select.value = ci;
    G.center = big || G.center != null ? ii : null;
    G.selected = ii;
    draw();
    details(ci, ii);
  }
  function runSearch(q, box) {
    box.textContent = "";
    q = q.trim().toLowerCase();
    if (q.length < 2) return;
    var idx = nameIndex(), hits = [];
    for (var name in idx) { if (name.toLowerCase().indexOf(q) >= 0) { hits.push(name); if (hits.length >= 60) break; } }
    if (!hits.length) { box.appendChild(el("div", {cls: "muted", text: "no instruction matches"})); return; }
    hits.forEach(function (name) {
      var at = idx[name];
      box.appendChild(el("div", {cls: "hit mono", "data-name": name, on: {click: function () { focusInstruction(at[0], at[1]); }}},
        name, el("span", {cls: "muted", text: "  " + comps[at[0]].name})));
    });
  }
  function jumpTo(name) {
    var at = nameIndex()[name];
    if (at) showText(at[0], at[1]);
  }

  // ---- instruction text ------------------------------------------------------------------------
  var T = {};
  function buildText(s) {
    var card = el("div", {cls: "card"}), bar = el("div", {cls: "toolbar"});
    var sel = el("select", {id: "text-computation"});
    comps.forEach(function (c, i) { sel.appendChild(el("option", {value: i, text: (c.is_entry ? "ENTRY " : "") + c.name + " (" + c.instructions.length + ")"})); });
    sel.addEventListener("change", function () { renderText(Number(sel.value), null); });
    bar.appendChild(el("label", {text: "computation"})); bar.appendChild(sel);
    bar.appendChild(el("span", {cls: "muted", text: "Click an operand to jump to it; users are listed at the end of each line."}));
    card.appendChild(bar);
    var code = el("div", {cls: "code", id: "text-code"});
    card.appendChild(code); s.appendChild(card);
    T.sel = sel; T.code = code;
    if (T.pending) { renderText(T.pending[0], T.pending[1]); T.pending = null; }
    else renderText(comps.findIndex(function (c) { return c.is_entry; }), null);
  }
  function renderText(ci, hl) {
    T.sel.value = ci; T.code.textContent = ""; T.ci = ci;
    var rows = comps[ci].instructions, users = usersOf(ci), frag = document.createDocumentFragment(), names = {};
    rows.forEach(function (r, i) { names[r[C.name]] = i; });
    rows.forEach(function (r, i) {
      var line = el("div", {cls: "line" + (i === hl ? " hl" : ""), id: "L" + ci + "_" + i});
      // Link operand names inside the printed line: split on name-like tokens, link known ones.
      var text = r[C.text], re = /%?[A-Za-z_][\w.\-]*/g, last = 0, m, first = true;
      while ((m = re.exec(text))) {
        var nm = m[0].charAt(0) === "%" ? m[0].slice(1) : m[0];
        if (!(nm in names)) continue;
        line.appendChild(document.createTextNode(text.slice(last, m.index)));
        if (first && nm === r[C.name]) line.appendChild(el("span", {cls: "nm", text: m[0]}));
        else line.appendChild(textLink(ci, names[nm], m[0]));
        first = false; last = m.index + m[0].length;
      }
      line.appendChild(document.createTextNode(text.slice(last)));
      if (users[i].length) {
        var u = el("span", {cls: "users", text: "users: "});
        users[i].slice(0, 8).forEach(function (j) { u.appendChild(textLink(ci, j, rows[j][C.name])); u.appendChild(document.createTextNode(" ")); });
        if (users[i].length > 8) u.appendChild(document.createTextNode("+" + (users[i].length - 8)));
        line.appendChild(u);
      }
      frag.appendChild(line);
    });
    T.code.appendChild(frag);
    if (hl != null) { var target = document.getElementById("L" + ci + "_" + hl); if (target) target.scrollIntoView({block: "center"}); }
  }
  function textLink(ci, j, label) {
    return el("span", {cls: "link", text: label, on: {click: function () { showText(ci, j); }}});
  }
  function showText(ci, ii) {
    if (!T.code) { T.pending = [ci, ii]; showTab("text"); return; }
    showTab("text");
    if (T.ci !== ci) renderText(ci, ii);
    else {
      Array.prototype.forEach.call(T.code.querySelectorAll(".line.hl"), function (x) { x.classList.remove("hl"); });
      var target = document.getElementById("L" + ci + "_" + ii);
      if (target) { target.classList.add("hl"); target.scrollIntoView({block: "center"}); }
    }
  }

  // ---- start -----------------------------------------------------------------------------------
  header();
  addTab("overview", "Overview", buildOverview);
  addTab("cost", "Cost", buildCost);
  addTab("memory", "Memory", buildMemory);
  addTab("collectives", "Collectives", buildCollectives);
  addTab("graph", "Graph", buildGraph, true);
  addTab("text", "Text", buildText, true);
  showTab(location.hash && tabs[location.hash.slice(1)] ? location.hash.slice(1) : "overview");
  document.body.setAttribute("data-ready", "1");
})();
