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
  // Note [One unit convention]: these three mirror hloscope.cli.common's format_bytes,
  // format_count and format_seconds digit for digit (binary byte units, two decimals; counts in
  // k/M/G/T; seconds to three significant digits), and a browser test checks they agree.
  function fmtBytes(n) {
    if (n == null || isNaN(n)) return "–";
    n = Number(n);
    var u = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
    for (var i = 0; i < u.length; i++) if (n >= u[i][1]) return (n / u[i][1]).toFixed(2) + " " + u[i][0];
    return Math.round(n) + " B";
  }
  function fmtNum(n) {
    if (n == null || isNaN(n)) return "–";
    n = Number(n);
    var a = Math.abs(n), u = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < u.length; i++) if (a >= u[i][0]) return (n / u[i][0]).toFixed(2) + " " + u[i][1];
    return n.toFixed(0);
  }
  function g3(x) { return String(parseFloat(x.toPrecision(3))); }
  function fmtTime(s) {
    if (s == null || isNaN(s)) return "–";
    s = Number(s);
    var u = [["s", 1], ["ms", 1e-3], ["µs", 1e-6]];
    for (var i = 0; i < u.length; i++) if (s >= u[i][1]) return g3(s / u[i][1]) + " " + u[i][0];
    return g3(s * 1e9) + " ns";
  }
  function fmtPct(x) { return x == null || isNaN(x) ? "–" : (100 * x).toFixed(x < 0.1 ? 2 : 1) + "%"; }
  window.hloscopeFormat = {bytes: fmtBytes, count: fmtNum, seconds: fmtTime};
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
    // Rows come in order, so a repeated operand repeats the last user: checking it is enough
    // (indexOf made a value with 20,000 users quadratic).
    rows.forEach(function (r, i) { r[C.operands].forEach(function (o) { if (o >= 0 && u[o][u[o].length - 1] !== i) u[o].push(i); }); });
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
    var t = el("table", opts.id ? {id: opts.id} : null), thead = el("thead"), tbody = el("tbody"), hr = el("tr");
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
  // Note [Shareable links]: the URL hash holds the tab and the selected instruction
  // ("#memory" or "#graph&i=fusion.9"), so a link to the page reopens the same view.
  var tabs = {}, currentTab = null, currentInst = null;
  function setHash() {
    var h = "#" + currentTab + (currentInst ? "&i=" + encodeURIComponent(currentInst) : "");
    if (location.hash !== h) history.replaceState(null, "", h);
  }
  function showTab(name) {
    Object.keys(tabs).forEach(function (k) {
      tabs[k].section.classList.toggle("active", k === name);
      tabs[k].button.classList.toggle("active", k === name);
    });
    if (currentTab !== name) { currentTab = name; currentInst = null; }
    if (tabs[name].onshow) { var f = tabs[name].onshow; tabs[name].onshow = null; f(); }
    setHash();
  }
  function addTab(name, label, build, lazy) {
    var s = el("section", {cls: "tab", id: "tab-" + name});
    var b = el("button", {text: label, "data-tab": name, on: {click: function () { showTab(name); }}});
    document.getElementById("tabs").appendChild(b);
    document.querySelector("main").appendChild(s);
    tabs[name] = {section: s, button: b, onshow: lazy ? function () { build(s); } : null};
    if (!lazy) build(s);
  }
  function selectInstruction(name) { currentInst = name; setHash(); }

  // ---- estimated time per instruction ----------------------------------------------------------
  var TIM = section("timing").data;
  var timeByName = null;  // name -> seconds per step (every execution), from data.py's per-row seconds
  function secondsOf(name) {
    if (!TIM) return null;
    if (!timeByName) {
      timeByName = {};
      comps.forEach(function (c) {
        if (!c.seconds) return;
        c.instructions.forEach(function (r, i) { if (c.seconds[i] != null) timeByName[r[C.name]] = c.seconds[i]; });
      });
    }
    var v = timeByName[name];
    return v == null ? null : v;
  }
  function shareOf(sec) { return TIM && TIM.total_seconds && sec != null ? sec / TIM.total_seconds : null; }
  function shareBar(x) {
    var b = el("span", {cls: "share"}), bar = el("span", {cls: "bar", style: "width:70px"});
    bar.appendChild(el("i", {style: "width:" + Math.min(100, 100 * (x || 0)).toFixed(1) + "%"}));
    b.appendChild(bar); b.appendChild(document.createTextNode(" " + fmtPct(x)));
    return b;
  }
  var CONTROL = {"while": 1, "call": 1, "conditional": 1};
  function bodyOf(name) {  // a while loop's body computation index, from its printed text
    var at = nameIndex()[name];
    if (!at) return -1;
    var r = comps[at[0]].instructions[at[1]], m = /\bbody=%?([\w.\-]+)/.exec(r[C.text]);
    return m && compIndex[m[1]] != null ? compIndex[m[1]] : (r[C.called].length ? r[C.called][r[C.called].length - 1] : -1);
  }
  function compLink(ci, label) {
    return el("span", {cls: "link mono", text: label || comps[ci].name, on: {click: function () { showComputation(ci, null, true); }}});
  }
  function gridOf() {
    var col = section("collectives").data, m = D.module;
    return [pick(col, "num_replicas") || m.replica_count || 1, pick(col, "num_partitions") || m.num_partitions || 1];
  }
  function flopsLabel(cost) {
    var sum = section("summary").data || {}, why = [];
    if (Object.keys(cost.trip_counts || {}).length) why.push("loops × trips");
    var cc = Object.keys(sum.custom_call_targets || {});
    if (cc.length && cost.loop_aware && cost.loop_aware.flops !== cost.flops) why.push("custom calls counted");
    return why.length ? why.join(", ") : "as XLA counts them";
  }

  function header() {
    var m = D.module, sum = section("summary").data, cost = section("cost").data;
    var mem = section("memory").data, col = collectiveRows(), grid = gridOf();
    document.getElementById("title").textContent = D.title || m.name;
    var sub = [m.instruction_count + " instructions", m.computation_count + " computations", "entry " + m.entry,
      grid[0] + " replica" + (grid[0] === 1 ? "" : "s") + " × " + grid[1] + " partition" + (grid[1] === 1 ? "" : "s")];
    if (m.is_scheduled) sub.push("scheduled");
    if (D.source_path) sub.push(D.source_path);
    document.getElementById("subtitle").textContent = sub.join(" · ");
    var figs = document.getElementById("figures");
    function fig(v, k, extra, id) {
      var f = el("div", {cls: "figure"}, el("div", {cls: "v", text: v}), el("div", {cls: "k", text: k}));
      if (extra) f.appendChild(el("div", {cls: "kx", text: extra}));
      if (id) f.id = id;
      figs.appendChild(f);
    }
    if (TIM) fig(fmtTime(TIM.total_seconds), "estimated step time", TIM.hardware + (TIM.implied ? " (implied, see Overview)" : ""), "fig-time");
    if (cost) {
      var la = cost.loop_aware || {flops: cost.flops, bytes_accessed: cost.bytes_accessed};
      fig(fmtNum(la.flops) + "FLOP", "FLOPs per step", flopsLabel(cost) + "; XLA's HloCostAnalysis: " + fmtNum(cost.flops) + "FLOP", "fig-flops");
      fig(fmtBytes(la.bytes_accessed), "bytes accessed per step", "XLA's count: " + fmtBytes(cost.bytes_accessed));
    }
    if (mem) fig(fmtBytes(mem.peak_bytes), "peak memory", "at schedule step " + mem.peak_time, "fig-peak");
    if (sum) fig(fmtBytes(sum.parameter_bytes), "parameters");
    if (col && col.length) fig(fmtBytes(col.reduce(function (a, r) { return a + (Number(collBytes(r)) || 0) * (Number(r.count) || 1); }, 0)), "collective payload per step");
  }

  // ---- overview: where the time goes -----------------------------------------------------------
  function buildOverview(s) {
    var card = el("div", {cls: "card"}, el("h2", {text: "Where the time goes"}));
    s.appendChild(card);
    if (!TIM) { card.appendChild(statusNote(section("timing"), "The time estimate")); return; }
    card.appendChild(el("p", null, "Estimated step time ", el("b", {text: fmtTime(TIM.total_seconds)}), " on " + TIM.hardware + "."));
    if (TIM.implied) card.appendChild(el("p", {cls: "note", id: "implied-hardware", text: TIM.implied + ". Pass --hardware NAME for another profile."}));
    // The four terms are summed per operation; operations overlap, so they can exceed the step.
    var parts = [["compute", TIM.compute_seconds, "#3b6fd8"], ["memory", TIM.memory_seconds, "#2f9e8f"],
      ["communication", TIM.communication_seconds, "#d6336c"], ["launch", TIM.launch_seconds, "#e59f2b"]];
    var sumParts = parts.reduce(function (a, p) { return a + (p[1] || 0); }, 0) || 1;
    var bar = el("div", {cls: "split", id: "time-split"});
    var legend = el("div", {cls: "legend"});
    parts.forEach(function (p) {
      var w = 100 * (p[1] || 0) / sumParts;
      bar.appendChild(el("i", {style: "width:" + w.toFixed(2) + "%;background:" + p[2], title: p[0] + " " + fmtTime(p[1])}));
      legend.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:" + p[2]}), p[0] + " " + fmtTime(p[1]) + " (" + fmtPct(p[1] / sumParts) + ")"));
    });
    card.appendChild(bar); card.appendChild(legend);
    card.appendChild(el("p", {cls: "muted", text: "Each term is summed over the operations (roofline: compute and memory time per kernel, the α-β model per collective, a launch per kernel); operations overlap, so the terms add to " + fmtTime(sumParts) + ", more than the step."}));
    var rows = (TIM.per_instruction || []).map(function (r) {
      return {name: r.name, opcode: r.opcode, computation: r.computation, seconds: r.seconds, share: shareOf(r.seconds),
        runs: r.executions, trip: r.trip_count, bound: r.bound};
    });
    var entry = D.module.entry;
    var g = el("div", {cls: "grid2"});
    var topLevel = rows.filter(function (r) { return r.computation === entry; }).slice(0, 15);
    var leaf = rows.filter(function (r) { return !CONTROL[r.opcode]; }).slice(0, 15);
    g.appendChild(el("div", {cls: "card", id: "top-steps"}, el("h2", {text: "Top steps of the entry computation"}),
      table(stepCols(false), topLevel, {sortCol: 2})));
    g.appendChild(el("div", {cls: "card", id: "top-ops"}, el("h2", {text: "Hottest operations (inside loops: all trips)"}),
      table(stepCols(true), leaf, {sortCol: 2})));
    s.appendChild(g);
    s.appendChild(memoryGlance());
    s.appendChild(opProfile());
    s.appendChild(moduleCard());
  }
  function whatCell(r) {  // a loop as "N trips × body" (the body a link), else the opcode
    if (r.opcode === "while") {
      var b = bodyOf(r.name), box = el("span", {cls: "mono nowrap", text: (r.trip != null ? r.trip : "?") + " trips × "});
      if (b >= 0) box.appendChild(compLink(b, "body")); else box.appendChild(document.createTextNode("body"));
      return box;
    }
    return el("span", {cls: "mono nowrap", text: r.opcode});
  }
  function stepCols(withWhere) {
    var cols = [
      {key: "name", label: "instruction", fmt: function (r) { return instLink(r.name); }},
      {key: "opcode", label: "what", fmt: whatCell},
      {key: "seconds", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.seconds); }},
      {key: "share", label: "share of step", fmt: function (r) { return shareBar(r.share); }, val: function (r) { return r.share; }},
      {key: "bound", label: "bound by", cls: "muted"}];
    if (withWhere) cols.push({key: "computation", label: "in", cls: "mono wrap", fmt: function (r) { return compIndex[r.computation] != null ? compLink(compIndex[r.computation]) : r.computation; }});
    return cols;
  }
  // Where memory peaks and why, on the first screen: the peak, its step and what holds it.
  function memoryGlance() {
    var mem = section("memory").data, card = el("div", {cls: "card", id: "memory-glance"}, el("h2", {text: "Where memory peaks"}));
    if (!mem) { card.appendChild(statusNote(section("memory"), "The memory analysis")); return card; }
    var at = (memorySeries(mem).filter(function (p) { return p.time === mem.peak_time; })[0] || {}).instruction;
    var bufs = (mem.peak_buffers || []).slice(), total = mem.peak_bytes || 1;
    card.appendChild(el("p", null, "Peak ", el("b", {text: fmtBytes(mem.peak_bytes)}), " at schedule step " + mem.peak_time + (at ? " (" + at + ")" : "") +
      ", " + bufs.length + " buffers live; the largest:", " ", el("span", {cls: "link", text: "open the Memory tab", on: {click: function () { showTab("memory"); }}})));
    var kinds = {};
    bufs.forEach(function (b) { var k = bufKind(b); kinds[k] = (kinds[k] || 0) + (Number(b.bytes) || 0); });
    var split = el("div", {cls: "legend"});
    Object.keys(kinds).sort(function (a, b) { return kinds[b] - kinds[a]; }).forEach(function (k) { split.appendChild(el("span", {cls: "chip", text: k + " " + fmtBytes(kinds[k]) + " (" + fmtPct(kinds[k] / total) + ")"})); });
    card.appendChild(split);
    card.appendChild(table([
      {key: "name", label: "buffer", fmt: bufLinks, val: bufName},
      {key: "kind", label: "kind", fmt: bufKind, val: bufKind},
      {key: "shape", label: "shape", cls: "mono wrap"},
      {key: "bytes", label: "size", num: true, fmt: function (r) { return fmtBytes(r.bytes); }},
      {key: "share", label: "of the peak", fmt: function (r) { return shareBar((Number(r.bytes) || 0) / total); }, val: function (r) { return r.bytes; }},
      {key: "op_name", label: "op_name", cls: "mono wrap"}], bufs, {sortCol: 3, limit: 6}));
    return card;
  }
  // XLA's op profile view: time rolled up by op_name prefix (jit(f)/layer_3/attention/dot).
  function opProfile() {
    var card = el("div", {cls: "card", id: "op-profile"}, el("h2", {text: "Time by op_name (rolled up as XLA's op profile)"}));
    var root = {name: "", seconds: 0, count: 0, kids: {}};
    comps.forEach(function (c) {
      if (!c.seconds) return;
      c.instructions.forEach(function (r, i) {
        var t = c.seconds[i];
        if (!t || CONTROL[r[C.opcode]]) return;
        var path = r[C.op_name] ? String(r[C.op_name]).split("/") : ["(no op_name)"], node = root;
        root.seconds += t; root.count++;
        path.forEach(function (p) {
          node = node.kids[p] || (node.kids[p] = {name: p, seconds: 0, count: 0, kids: {}});
          node.seconds += t; node.count++;
        });
      });
    });
    var total = TIM.total_seconds || root.seconds || 1;
    card.appendChild(el("p", {cls: "muted", text: "Operations' times (loop trips included) summed by each prefix of their op_name; click ▸ to open a level. Shares are of the step time (" + fmtTime(TIM.total_seconds) + "), and overlapping operations can make them add to more."}));
    var tb = el("tbody"), t = el("table", {cls: "tree"}, el("thead", null, el("tr", null, el("th", {text: "op_name"}), el("th", {cls: "num", text: "est. time"}), el("th", {text: "share"}), el("th", {cls: "num", text: "operations"}))), tb);
    function kidsOf(n) { return Object.keys(n.kids).map(function (k) { return n.kids[k]; }).sort(function (a, b) { return b.seconds - a.seconds; }); }
    function rowsOf(n, depth, after) {
      var out = [];
      kidsOf(n).slice(0, 50).forEach(function (k) {
        var has = Object.keys(k.kids).length > 0, tr = el("tr", {"data-depth": depth});
        var tog = el("span", {cls: "tog", text: has ? "▸ " : "  "});
        var nameCell = el("td", {cls: "mono", style: "padding-left:" + (8 + depth * 16) + "px"}, tog, k.name);
        tr.appendChild(nameCell);
        tr.appendChild(el("td", {cls: "num", text: fmtTime(k.seconds)}));
        tr.appendChild(el("td", null, shareBar(k.seconds / total)));
        tr.appendChild(el("td", {cls: "num", text: String(k.count)}));
        var open = null;
        if (has) tog.addEventListener("click", function () {
          if (open) { open.forEach(function (x) { x.remove(); }); open = null; tog.textContent = "▸ "; return; }
          open = []; tog.textContent = "▾ ";
          var anchor = tr;
          rowsOf(k, depth + 1).forEach(function (x) { anchor.after(x); anchor = x; open.push(x); });
        });
        tog.classList.toggle("link", has);
        out.push(tr);
        if (has && depth < 1 && after) setTimeout(function () { tog.click(); }, 0);
      });
      return out;
    }
    rowsOf(root, 0, true).forEach(function (x) { tb.appendChild(x); });
    card.appendChild(el("div", {cls: "scroll"}, t));
    return card;
  }

  // ---- module: inputs, outputs, opcodes ---------------------------------------------------------
  function moduleCard() {
    var s = el("div");
    var sec = section("summary"), sum = sec.data;
    if (!sum) { s.appendChild(el("div", {cls: "card"}, statusNote(sec, "The summary"))); return s; }
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
    return s;
  }

  // ---- cost ------------------------------------------------------------------------------------
  function buildCost(s) {
    var sec = section("cost"), cost = sec.data, card = el("div", {cls: "card"}, el("h2", {text: "Costliest instructions and loops"}));
    s.appendChild(card);
    if (!cost) { card.appendChild(statusNote(sec, "The cost analysis")); return; }
    var rows = {}, list = [];
    function row(name) {
      if (!rows[name]) {
        var at = nameIndex()[name], r = at ? comps[at[0]].instructions[at[1]] : null;
        rows[name] = {name: name, computation: at ? comps[at[0]].name : "", opcode: r ? r[C.opcode] : "", flops: null, bytes: null,
          trans: null, time: secondsOf(name), runs: null, trip: null, op_name: r && r[C.op_name] || "", source: r && r[C.source] || ""};
        rows[name].share = shareOf(rows[name].time);
        list.push(rows[name]);
      }
      return rows[name];
    }
    (cost.per_instruction || []).forEach(function (c) {
      var r = row(c.name); r.flops = c.flops; r.bytes = c.bytes_accessed; r.trans = c.transcendentals;
      if (c.op_name) r.op_name = c.op_name;
      if (sourceOf(c)) r.source = sourceOf(c);
    });
    if (TIM) (TIM.per_instruction || []).forEach(function (t) {
      var r = row(t.name); r.runs = t.executions; r.trip = t.trip_count;
    });
    card.appendChild(el("p", {cls: "muted", text: "Per step: an instruction inside a loop body counts every trip (the runs column), and a while loop's time is trips × (body + condition). " +
      "XLA's HloCostAnalysis counts " + fmtNum(cost.flops) + "FLOP and " + fmtBytes(cost.bytes_accessed) + " (loop bodies once, custom calls not at all); counting loop trips and custom-call gemms gives " +
      fmtNum(cost.loop_aware ? cost.loop_aware.flops : cost.flops) + "FLOP. Click a header to sort."}));
    if (!list.length) { card.appendChild(el("p", {cls: "note", text: "The cost analysis gave no per-instruction rows."})); return; }
    var cols = [
      {key: "name", label: "instruction", fmt: function (r) { return instLink(r.name); }},
      {key: "opcode", label: "what", fmt: function (r) { return r.opcode === "while" ? whatCell(r) : el("span", {cls: "mono", text: r.opcode}); }},
      {key: "computation", label: "in", cls: "mono wrap", fmt: function (r) { return compIndex[r.computation] != null ? compLink(compIndex[r.computation]) : r.computation; }},
      {key: "time", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.time); }},
      {key: "share", label: "share", fmt: function (r) { return shareBar(r.share); }, val: function (r) { return r.share; }},
      {key: "runs", label: "runs", num: true, fmt: function (r) { return r.runs == null ? "" : "×" + fmtNum(r.runs); }},
      {key: "flops", label: "FLOPs (all runs)", num: true, fmt: function (r) { return fmtNum(r.flops); }},
      {key: "bytes", label: "bytes (all runs)", num: true, fmt: function (r) { return fmtBytes(r.bytes); }},
      {key: "op_name", label: "op_name", cls: "mono wrap"},
      {key: "source", label: "source", cls: "mono wrap"}];
    if (!TIM) cols.splice(3, 3);
    card.appendChild(table(cols, list, {sortCol: TIM ? 3 : 3, id: "cost-table"}));
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
  // A buffer is one value: an instruction and, for a tuple-shaped result, its index ({0}, {1,2}).
  function bufInst(r) { return String(pick(r, "instruction", "name", "value") || ""); }
  function bufName(r) { var ix = r.index; return bufInst(r) + (ix && ix.length ? "{" + ix.join(",") + "}" : ""); }
  function instRow(name) { var at = nameIndex()[name]; return at ? comps[at[0]].instructions[at[1]] : null; }
  var entryRoot = null;
  function bufKind(r) {
    var row = instRow(bufInst(r)), op = r.opcode || (row ? row[C.opcode] : "");
    if (entryRoot == null) { var e = comps[compIndex[D.module.entry]]; entryRoot = e && e.root >= 0 ? e.instructions[e.root][C.name] : ""; }
    if (op === "parameter") return "argument";
    if (op === "constant") return "constant";
    if (bufInst(r) === entryRoot) return "output";
    return "temporary";
  }
  function bufLinks(r) {
    var name = bufInst(r), box = el("span", {cls: "buf"});
    box.appendChild(el("span", {cls: "link mono", text: bufName(r), title: "show in the text", on: {click: function () { jumpTo(name); }}}));
    box.appendChild(el("span", {cls: "link small", text: " graph", title: "show in the graph", on: {click: function () { var at = nameIndex()[name]; if (at) focusInstruction(at[0], at[1]); }}}));
    return box;
  }
  // One view per memory space (S(0) the default, S(1)... e.g. a GPU's or TPU's other memories):
  // its curve, its peak and the buffers live there (Note [One peak] in analysis/memory).
  function memorySpaces(mem) {
    var base = memorySeries(mem), out = [], ms = mem.memory_spaces;
    if (ms && !Array.isArray(ms) && Object.keys(ms).length) {
      Object.keys(ms).sort(function (a, b) { return a - b; }).forEach(function (k) {
        var sp = ms[k], tl = sp.timeline || [];
        var series = Number(k) === 0 && base.length ? base : tl.map(function (v, i) {
          return typeof v === "number" ? {time: base[i] ? base[i].time : i, bytes: v, instruction: base[i] ? base[i].instruction : null} : memorySeries({timeline: [v]})[0];
        });
        out.push({space: Number(k), series: series, peak_bytes: sp.peak_bytes, peak_time: sp.peak_time,
          peak_buffers: sp.peak_buffers || [], peak_buffer_count: sp.peak_buffer_count, temp_bytes: sp.temp_bytes});
      });
    }
    if (!out.length) out.push({space: 0, series: base, peak_bytes: mem.peak_bytes, peak_time: mem.peak_time, peak_buffers: mem.peak_buffers || []});
    return out;
  }
  function buildMemory(s) {
    var sec = section("memory"), mem = sec.data;
    var figCard = el("div", {cls: "card"}, el("h2", {text: "Memory"}));
    s.appendChild(figCard);
    if (!mem) { figCard.appendChild(statusNote(sec, "The memory analysis")); return; }
    var chips = el("div", {cls: "memfigs"});
    var xla = mem.xla_live_range_peak;
    [["peak (default memory space)", mem.peak_bytes], ["arguments", mem.argument_bytes], ["outputs", mem.output_bytes],
      ["aliased", mem.alias_bytes], ["temporaries", mem.temp_bytes], ["constants", mem.constant_bytes],
      ["total allocated", mem.total_bytes], ["XLA's HloLiveRange peak" + (xla ? " (step " + xla.time + ")" : ""), xla ? xla.bytes : null]].forEach(function (f) {
      if (f[1] == null) return;
      chips.appendChild(el("div", {cls: "mf"}, el("b", {text: fmtBytes(f[1])}), el("span", {text: f[0]})));
    });
    var spaces = memorySpaces(mem);
    spaces.forEach(function (sp) {
      if (sp.space) chips.appendChild(el("div", {cls: "mf other"}, el("b", {text: fmtBytes(sp.peak_bytes)}), el("span", {text: "peak of memory space S(" + sp.space + ")"})));
    });
    figCard.appendChild(chips);
    if (mem.peak_definition) figCard.appendChild(el("p", {cls: "muted", text: "Peak: " + mem.peak_definition + "."}));
    var buffers = pick(mem, "buffers", "live_ranges", "values") || [];
    var chartCard = el("div", {cls: "card chart"}), peakCard = el("div", {cls: "card", id: "peak-buffers"});
    s.appendChild(chartCard); s.appendChild(peakCard);
    var bar = el("div", {cls: "toolbar", id: "memory-spaces"});
    function show(sp) {
      Array.prototype.forEach.call(bar.children, function (b) { b.classList.toggle("active", Number(b.getAttribute("data-space")) === sp.space); });
      chartCard.textContent = "";
      chartCard.appendChild(el("h2", {text: "Live memory over the schedule, memory space S(" + sp.space + ")" + (sp.space ? "" : " (default)")}));
      if (spaces.length > 1) chartCard.appendChild(bar);
      var live = el("div", {id: "live-set"});
      var readout = el("div", {cls: "readout mono", id: "memory-readout", text: "Hover the chart to read the bytes live at each step; click to list them."});
      chartCard.appendChild(readout);
      var mine = buffers.filter(function (b) { return (b.memory_space || 0) === sp.space; });
      if (sp.series.length) chartCard.appendChild(memoryChart(sp.series, sp, readout, function (p) { showLive(live, p, mine); }));
      else chartCard.appendChild(el("p", {cls: "note", text: "The memory analysis gave no series over time."}));
      if (mem.buffers_omitted) chartCard.appendChild(el("p", {cls: "note", text: mem.buffers_omitted + " smallest live ranges are not in the page; live sets list the " + buffers.length + " biggest."}));
      chartCard.appendChild(live);
      peakCard.textContent = "";
      var n = sp.peak_buffer_count != null ? sp.peak_buffer_count : sp.peak_buffers.length;
      peakCard.appendChild(el("h2", {text: "Buffers live at the peak of S(" + sp.space + ") (" + fmtBytes(sp.peak_bytes) + " at step " + sp.peak_time + ", " + n + " buffers" + (n > sp.peak_buffers.length ? ", the " + sp.peak_buffers.length + " biggest listed" : "") + ")"}));
      peakCard.appendChild(bufferTable(sp.peak_buffers));
    }
    spaces.forEach(function (sp) {
      bar.appendChild(el("button", {cls: "btn", "data-space": sp.space, text: "S(" + sp.space + ")" + (sp.space ? "" : " default") + ": peak " + fmtBytes(sp.peak_bytes), on: {click: function () { show(sp); }}}));
    });
    show(spaces[0]);
    if (mem.explain) s.appendChild(el("div", {cls: "card"}, el("h2", {text: "How the figures arise"}), el("pre", {cls: "explain", text: mem.explain})));
  }
  function bufferTable(rows) {
    return table([
      {key: "name", label: "buffer", fmt: bufLinks, val: bufName},
      {key: "kind", label: "kind", fmt: bufKind, val: bufKind},
      {key: "opcode", label: "opcode", cls: "mono", fmt: function (r) { var row = instRow(bufInst(r)); return r.opcode || (row ? row[C.opcode] : ""); }},
      {key: "shape", label: "shape", cls: "mono wrap"},
      {key: "size", label: "size", num: true, fmt: function (r) { return fmtBytes(pick(r, "size", "bytes")); }, val: function (r) { return Number(pick(r, "size", "bytes")); }},
      {key: "live", label: "live steps", num: true, fmt: function (r) { return r.start != null ? r.start + "–" + r.end : ""; }, val: function (r) { return r.start; }},
      {key: "op_name", label: "op_name", cls: "mono wrap"},
      {key: "source", label: "source", cls: "mono wrap", fmt: sourceOf}], rows, {sortCol: 4, limit: 300});
  }
  function showLive(box, p, buffers) {
    box.textContent = "";
    box.appendChild(el("h2", {text: "Live at step " + p.time + (p.instruction ? " (" + p.instruction + ")" : "") + ": " + fmtBytes(p.bytes)}));
    if (!buffers.length) { box.appendChild(el("p", {cls: "note", text: "The memory analysis did not list live ranges, so the buffers at a point cannot be shown."})); return; }
    var rows = buffers.filter(function (b) { return b.start <= p.time && p.time <= b.end; });
    // Values sharing one buffer (an address) count once, at the largest (Note [One peak]).
    var big = {}, loose = 0;
    rows.forEach(function (b) {
      var n = Number(pick(b, "bytes", "size")) || 0;
      if (b.buffer == null) loose += n; else big[b.buffer] = Math.max(big[b.buffer] || 0, n);
    });
    var sum = Object.keys(big).reduce(function (a, k) { return a + big[k]; }, loose);
    box.appendChild(el("p", {cls: "muted", text: rows.length + " values, " + fmtBytes(sum) + " in the buffers listed."}));
    box.appendChild(bufferTable(rows));
  }
  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw || 1))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  function memoryChart(series, mem, readout, onpick) {
    // Drawn at the card's own pixel size: no stretching, so text keeps its shape.
    var W = Math.max(600, Math.round((document.querySelector("main").clientWidth || 1200) - 80)), H = 320, L = 78, R = 20, T = 24, B = 34;
    var svg = sv("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, id: "memory-chart"});
    var t0 = series[0].time, t1 = series[series.length - 1].time;
    if (t1 === t0) t1 = t0 + 1;
    var maxB = series.reduce(function (a, p) { return Math.max(a, p.bytes); }, 1);
    function x(t) { return L + (W - L - R) * (t - t0) / (t1 - t0); }
    function y(b) { return T + (H - T - B) * (1 - b / maxB); }
    var ax = sv("g", {"class": "axis"});
    // Round byte ticks in the unit of the maximum (0, 256 MiB, 512 MiB...), not quarters of it.
    var fifth = maxB / 5, unit = fifth >= 1073741824 ? 1073741824 : fifth >= 1048576 ? 1048576 : fifth >= 1024 ? 1024 : 1;
    var bstep = niceStep(maxB / unit, 5) * unit;
    for (var b = 0; b <= maxB + 1e-9; b += bstep) {
      ax.appendChild(sv("line", {x1: L, x2: W - R, y1: y(b), y2: y(b)}));
      ax.appendChild(sv("text", {x: L - 6, y: y(b) + 4, "text-anchor": "end", text: fmtBytes(b)}));
    }
    var step = Math.max(1, niceStep(t1 - t0, 10));
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      ax.appendChild(sv("line", {x1: x(t), x2: x(t), y1: H - B, y2: H - B + 4, "class": "tick"}));
      ax.appendChild(sv("text", {x: x(t), y: H - B + 16, "text-anchor": "middle", text: String(t)}));
    }
    ax.appendChild(sv("text", {x: W - R, y: H - 4, "text-anchor": "end", text: "schedule step"}));
    svg.appendChild(ax);
    // A step path: memory holds its value until the next instruction.
    var d = "M" + x(t0) + "," + y(0);
    series.forEach(function (p, i) {
      var nt = i + 1 < series.length ? series[i + 1].time : p.time;
      d += "L" + x(p.time).toFixed(1) + "," + y(p.bytes).toFixed(1) + "L" + x(nt).toFixed(1) + "," + y(p.bytes).toFixed(1);
    });
    d += "L" + x(series[series.length - 1].time) + "," + y(0) + "Z";
    svg.appendChild(sv("path", {d: d, "class": "area"}));
    var peak = series.reduce(function (a, p) { return p.bytes > a.bytes ? p : a; }, series[0]);
    if (mem.peak_time != null) series.forEach(function (p) { if (p.time === mem.peak_time) peak = p; });
    svg.appendChild(sv("circle", {cx: x(peak.time), cy: y(peak.bytes), r: 5, "class": "peak", "data-bytes": peak.bytes, "data-time": peak.time}));
    var lx = x(peak.time) + 8, anchor = "start";
    if (lx > W - 260) { lx = x(peak.time) - 8; anchor = "end"; }
    svg.appendChild(sv("text", {x: lx, y: Math.max(14, y(peak.bytes) - 6), "text-anchor": anchor, "class": "peak-label",
      text: "peak " + fmtBytes(peak.bytes) + " at step " + peak.time + (peak.instruction ? " (" + peak.instruction + ")" : "")}));
    var cursor = sv("line", {"class": "cursor", y1: T, y2: H - B, x1: -10, x2: -10});
    var pin = sv("line", {"class": "cursor pinned", y1: T, y2: H - B, x1: -10, x2: -10});
    svg.appendChild(cursor); svg.appendChild(pin);
    var hit = sv("rect", {x: L, y: T, width: W - L - R, height: H - T - B, "class": "hit", "data-t0": t0, "data-t1": t1});
    function at(ev) {
      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * W / r.width;
      var tt = t0 + (px - L) / (W - L - R) * (t1 - t0), lo = 0, hi = series.length - 1;
      while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (series[mid].time <= tt) lo = mid; else hi = mid - 1; }
      return series[lo];
    }
    hit.addEventListener("mousemove", function (ev) {
      var p = at(ev);
      cursor.setAttribute("x1", x(p.time)); cursor.setAttribute("x2", x(p.time));
      readout.textContent = "step " + p.time + " · " + fmtBytes(p.bytes) + " live" + (p.instruction ? " · " + p.instruction : "") +
        (p.time === peak.time ? " · the peak" : "");
    });
    hit.addEventListener("click", function (ev) {
      var p = at(ev);
      pin.setAttribute("x1", x(p.time)); pin.setAttribute("x2", x(p.time));
      onpick(p);
    });
    svg.appendChild(hit);
    return el("div", {cls: "chart-wrap"}, svg);
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
    var grid = gridOf();
    card.appendChild(el("p", {cls: "muted", text: "On " + grid[0] + " replicas × " + grid[1] + " partitions. Payload and ring bytes are per device and run; est. time covers every run in a step."}));
    rows = rows.map(function (r) { var o = {}; for (var k in r) o[k] = r[k]; o.time = secondsOf(r.name); o.share = shareOf(o.time); return o; });
    var cols = [
      {key: "name", label: "instruction", fmt: function (r) { return instLink(String(r.name || "")); }},
      {key: "opcode", label: "opcode", cls: "mono"},
      {key: "group_mode", label: "mode", cls: "mono"},
      {key: "num_groups", label: "groups", num: true, fmt: function (r) { return r.num_groups == null ? "" : String(r.num_groups); }},
      {key: "group_size", label: "devices per group", num: true},
      {key: "count", label: "runs", num: true},
      {key: "bytes", label: "payload", num: true, fmt: function (r) { return fmtBytes(collBytes(r)); }, val: function (r) { return Number(collBytes(r)); }},
      {key: "ring_bytes", label: "ring bytes/device", num: true, fmt: function (r) { return fmtBytes(r.ring_bytes); }},
      {key: "time", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.time); }},
      {key: "share", label: "share", fmt: function (r) { return shareBar(r.share); }, val: function (r) { return r.share; }},
      {key: "op_name", label: "op_name", cls: "mono wrap"}];
    if (!TIM) cols.splice(8, 2);
    card.appendChild(table(cols, rows, {sortCol: TIM ? 8 : 6, id: "collectives-table"}));
  }

  // ---- graph: data ----------------------------------------------------------------------------
  // Mirrors report/graphs.py: fusions are one node; expanded ones inline their body as a cluster.
  // Instructions whose op_name shares a namespace (its first G.nsDepth parts) form a cluster too;
  // a collapsed namespace is one node standing for all of them (Model Explorer's layers).
  function nsOf(r) {
    var o = r[C.op_name];
    if (!o || !G.nsDepth) return null;
    var parts = String(o).split("/");
    if (parts.length <= G.nsDepth) return null;  // the leaf op itself is no namespace
    return parts.slice(0, G.nsDepth).join("/");
  }
  function graphData(ci, keep, expanded) {
    var rows = comps[ci].instructions, nodes = [], edges = [], outId = {}, groupNode = {};
    function ownerOf(i) {  // the node id instruction i is drawn as (a collapsed namespace's, or its own)
      var ns = nsOf(rows[i]);
      return ns && G.collapsed[ns] ? "ns:" + ns : (outId[i] || String(i));
    }
    rows.forEach(function (r, i) {
      if (keep && !keep[i]) return;
      var ns = nsOf(r);
      if (ns && G.collapsed[ns]) {
        if (!groupNode[ns]) { groupNode[ns] = {id: "ns:" + ns, ci: ci, ii: i, group: ns, members: 0}; nodes.push(groupNode[ns]); }
        groupNode[ns].members++;
        r[C.operands].forEach(function (o) { if (o >= 0 && (!keep || keep[o])) edges.push([ownerOf(o), "ns:" + ns, o]); });
        return;
      }
      var called = r[C.called], isFusion = r[C.opcode] === "fusion" && called.length && called[0] >= 0;
      if (isFusion && expanded[r[C.name]]) {
        var fc = called[0], inner = comps[fc].instructions, pre = i + "/";
        var params = {};
        inner.forEach(function (q, j) {
          nodes.push({id: pre + j, ci: fc, ii: j, cluster: r[C.name], ns: ns});
          q[C.operands].forEach(function (o) { if (o >= 0) edges.push([pre + o, pre + j, -1]); });
          if (q[C.opcode] === "parameter") { var m = /parameter\((\d+)\)/.exec(q[C.text]); if (m) params[m[1]] = pre + j; }
        });
        r[C.operands].forEach(function (o, k) {
          if (o >= 0 && (!keep || keep[o]) && params[k] != null) edges.push([ownerOf(o), params[k], o]);
        });
        outId[i] = pre + comps[fc].root;
        return;
      }
      nodes.push({id: String(i), ci: ci, ii: i, fusion: isFusion ? called[0] : null, ns: ns});
      r[C.operands].forEach(function (o) { if (o >= 0 && (!keep || keep[o])) edges.push([ownerOf(o), String(i), o]); });
    });
    var seen = {};
    edges = edges.filter(function (e) {
      var k = e[0] + ">" + e[1];
      if (e[0] === e[1] || seen[k]) return false;
      seen[k] = 1; return true;
    });
    return {nodes: nodes, edges: edges};
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
    var shown = [];
    g.edges.forEach(function (e, k) {
      if (idx[e[0]] == null || idx[e[1]] == null || e[0] === e[1]) return;
      gr.setEdge(e[0], e[1], labels && e[2] >= 0 ? {width: 96, height: 12, labelpos: "c", k: k} : {k: k});
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
    [["no grouping", 0], ["op_name level 1", 1], ["level 2", 2], ["level 3", 3], ["level 4", 4]].forEach(function (o) { ns.appendChild(el("option", {value: o[1], text: o[0]})); });
    ns.addEventListener("change", function () { G.nsDepth = Number(ns.value); G.collapsed = {}; draw(); });
    var collapseAll = el("button", {cls: "btn", id: "graph-collapse-all", text: "collapse all", on: {click: function () {
      if (!G.nsDepth) { G.nsDepth = 1; ns.value = "1"; }
      G.lastNs.forEach(function (k) { G.collapsed[k] = true; }); draw(); }}});
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
    else if (ov === "bytes") v = bytesByName()[r[C.name]];
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
      var r = comps[n.ci].instructions[n.ii], v = G.overlay === "time" ? (n.ci === ci && comps[ci].seconds ? comps[ci].seconds[n.ii] : 0) : G.overlay === "bytes" ? bytesByName()[r[C.name]] : 0;
      if (v > G.ovMax) G.ovMax = v;
    });
    var labels = g.nodes.length <= 120;
    var useDagre = typeof dagre !== "undefined" && g.nodes.length <= DAGRE_MAX_NODES && edgeSpan(g) <= DAGRE_MAX_SPAN;
    var L = useDagre ? layoutDagre(g, labels) : layout(g), svg = G.svg;
    svg.textContent = "";
    var root = sv("g", {id: "graph-root"});
    var nsSeen = {};
    g.nodes.forEach(function (n) { if (n.ns) nsSeen[n.ns] = 1; });
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
      if (labels && e[2] >= 0 && lx != null) {
        var shp = rows[e[2]] ? rows[e[2]][C.shape] : "";
        root.appendChild(sv("text", {"class": "elabel", x: lx, y: ly + 3, "text-anchor": "middle", text: clip(shp, 22)}));
      }
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
        if (n.group) { delete G.collapsed[n.group]; draw(true); }
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
    var ns = nsOf(comps[ci].instructions[ii]);
    if (ns) delete G.collapsed[ns];
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

  // ---- instruction text ------------------------------------------------------------------------
  // Note [Virtual text]: an LLM-scale entry computation has 30,000+ lines; building them all
  // froze the browser for seconds. Lines have one fixed height, so the view keeps a spacer of the
  // full height and builds only the ~60 lines in sight, again on each scroll.
  var T = {}, LH = 19;
  function buildText(s) {
    var card = el("div", {cls: "card"}), bar = el("div", {cls: "toolbar"});
    var sel = el("select", {id: "text-computation"});
    comps.forEach(function (c, i) { sel.appendChild(el("option", {value: i, text: (c.is_entry ? "ENTRY " : "") + c.name + " (" + c.instructions.length + ")"})); });
    sel.addEventListener("change", function () { renderText(Number(sel.value), null); });
    bar.appendChild(el("label", {text: "computation"})); bar.appendChild(sel);
    bar.appendChild(el("span", {cls: "muted", text: "Click an operand to jump to it; users are listed at the end of each line."}));
    card.appendChild(bar);
    var code = el("div", {cls: "code", id: "text-code"}), spacer = el("div", {cls: "spacer"});
    code.appendChild(spacer);
    code.addEventListener("scroll", function () { if (!T.raf) T.raf = requestAnimationFrame(function () { T.raf = 0; paintText(); }); });
    card.appendChild(code); s.appendChild(card);
    T.sel = sel; T.code = code; T.spacer = spacer;
    if (T.pending) { var p = T.pending; T.pending = null; renderText(p[0], p[1]); }
    else renderText(comps.findIndex(function (c) { return c.is_entry; }), null);
  }
  function renderText(ci, hl) {
    T.sel.value = ci; T.ci = ci; T.hl = hl; T.painted = {};
    var rows = comps[ci].instructions;
    T.names = {};
    rows.forEach(function (r, i) { T.names[r[C.name]] = i; });
    T.spacer.textContent = "";
    T.spacer.style.height = (rows.length * LH + 16) + "px";
    if (hl != null) T.code.scrollTop = Math.max(0, hl * LH - T.code.clientHeight / 2);
    else T.code.scrollTop = 0;
    paintText();
  }
  function paintText() {
    var rows = comps[T.ci].instructions, top = T.code.scrollTop, h = T.code.clientHeight || 640;
    var first = Math.max(0, Math.floor(top / LH) - 10), last = Math.min(rows.length, Math.ceil((top + h) / LH) + 10);
    var keep = {};
    for (var i = first; i < last; i++) keep[i] = 1;
    Object.keys(T.painted).forEach(function (k) { if (!keep[k]) { T.painted[k].remove(); delete T.painted[k]; } });
    for (var j = first; j < last; j++) if (!T.painted[j]) { var ln = textLine(T.ci, j); T.painted[j] = ln; T.spacer.appendChild(ln); }
  }
  function textLine(ci, i) {
    var rows = comps[ci].instructions, r = rows[i], users = usersOf(ci), names = T.names;
    var line = el("div", {cls: "line" + (i === T.hl ? " hl" : ""), id: "L" + ci + "_" + i, style: "top:" + (8 + i * LH) + "px"});
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
    return line;
  }
  function textLink(ci, j, label) {
    return el("span", {cls: "link", text: label, on: {click: function () { showText(ci, j); }}});
  }
  function showText(ci, ii) {
    if (!T.code) { T.pending = [ci, ii]; showTab("text"); selectInstruction(comps[ci].instructions[ii][C.name]); return; }
    showTab("text");
    selectInstruction(comps[ci].instructions[ii][C.name]);
    if (T.ci !== ci) { renderText(ci, ii); return; }
    Object.keys(T.painted).forEach(function (k) { T.painted[k].classList.toggle("hl", Number(k) === ii); });
    T.hl = ii;
    T.code.scrollTop = Math.max(0, ii * LH - T.code.clientHeight / 2);
    paintText();
  }

  // ---- start -----------------------------------------------------------------------------------
  header();
  addTab("overview", "Overview", buildOverview);
  addTab("cost", "Cost", buildCost, true);
  addTab("memory", "Memory", buildMemory, true);
  addTab("collectives", "Collectives", buildCollectives, true);
  addTab("graph", "Graph", buildGraph, true);
  addTab("text", "Text", buildText, true);
  (function restore() {  // Note [Shareable links]
    var h = location.hash.slice(1).split("&"), tab = tabs[h[0]] ? h[0] : "overview", inst = null;
    h.slice(1).forEach(function (kv) { if (kv.slice(0, 2) === "i=") inst = decodeURIComponent(kv.slice(2)); });
    var at = inst ? nameIndex()[inst] : null;
    if (at && tab === "graph") focusInstruction(at[0], at[1]);
    else if (at && tab === "text") showText(at[0], at[1]);
    else { showTab(tab); if (inst) selectInstruction(inst); }
  })();
  document.body.setAttribute("data-ready", "1");
})();
