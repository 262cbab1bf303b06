/* hloscope report page, part 3 of 6: the Memory and Collectives tabs.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
  // ---- memory ----------------------------------------------------------------------------------
  // Note [Series as columns]
  // A memory curve is three columns (t: step, b: bytes live, n: the instruction at the step or
  // null), never an object per step: at 10x Llama the curve has 232,000 steps, and reading the
  // block into objects twice (rows, then points) made the Memory tab's first show wait for the
  // garbage collector (200 ms of its 370). pointOf makes the one object a readout needs.
  var seriesCache = null;
  function memorySeries(mem) {
    if (mem === section("memory").data) return seriesCache || (seriesCache = readSeries(mem));
    return readSeries(mem);
  }
  // A point's instruction is named when read (from its row, Note [Page encoding] in
  // report/html.py): drawing the curve reads 1,000 points' bytes and no name.
  function Point(s, i) { this.time = s.t[i]; this.bytes = s.b[i]; this.s = s; this.i = i; }
  Object.defineProperty(Point.prototype, "instruction", {
    get: function () { return this.name !== undefined ? this.name : this.s.name(this.i); },
    set: function (v) { this.name = v; }});
  function pointOf(s, i) { return i == null || i < 0 || i >= s.length ? null : new Point(s, i); }
  function seriesIndex(s, time) {  // position of a step in the series, or -1
    if (s.contiguous) return time >= s.t[0] && time < s.t[0] + s.length && time === Math.floor(time) ? time - s.t[0] : -1;
    if (!s.at) { s.at = new Map(); for (var i = 0; i < s.length; i++) s.at.set(s.t[i], i); }
    var k = s.at.get(time);
    return k == null ? -1 : k;
  }
  // n: each step's instruction, as a list of names or a function of the step's position
  function columnsSeries(t, b, n) {
    var ok = true;
    for (var i = 1; i < t.length && ok; i++) ok = t[i] === t[0] + i;
    var name = typeof n === "function" ? n : function (k) { return n ? n[k] || null : null; };
    return {t: t, b: b, name: name, length: b.length, contiguous: ok};
  }
  function readSeries(mem) {
    var raw = pick(mem, "timeline", "series", "memory_over_time", "live_bytes") || [];
    var i, t = [], b = [], n = [];
    if (raw && !Array.isArray(raw) && raw.columns) {  // Note [Compact memory rows]: read in place
      var col = function (k) { var at = raw.columns.indexOf(k); return at >= 0 ? raw.values[at] : null; };
      b = col("bytes") || col("live_bytes") || [];
      // Steps and bytes as typed arrays: one block each, nothing per step for the collector.
      var times = raw.index === "time" ? null : col("time"), nb = b.length, bb = new Float64Array(nb);
      var tt = times ? times.slice(0, nb) : new Float64Array(nb);
      for (i = 0; i < nb; i++) { if (!times) tt[i] = i; bb[i] = Number(b[i]) || 0; }
      var names = col("instruction"), rows = raw.ordinals && raw.ordinals.instruction;
      return columnsSeries(tt, bb, rows ? function (k) { return rowName(names[k]); } : names);
    }
    if (raw && !Array.isArray(raw) && raw.bytes) return columnsSeries(raw.bytes.map(function (x, k) { return raw.time && raw.time[k] != null ? raw.time[k] : k; }), raw.bytes, null);
    raw.forEach(function (p, k) {
      if (typeof p === "number") { t.push(k); b.push(p); n.push(null); }
      else if (Array.isArray(p)) { t.push(p[0]); b.push(p[1]); n.push(p[2] || null); }
      else {
        t.push(pick(p, "time", "t") != null ? pick(p, "time", "t") : k); b.push(Number(pick(p, "bytes", "live_bytes", "size")) || 0);
        n.push(pick(p, "instruction", "name") || null);
      }
    });
    return columnsSeries(t, b, n);
  }
  // A buffer is one value: an instruction and, for a tuple-shaped result, its index ({0}, {1,2}).
  function bufInst(r) {  // pick(r, "instruction", "name", "value"), written out: 20,000 calls at 10x Llama
    var v = r.instruction != null ? r.instruction : r.name != null ? r.name : r.value;
    return String(v || "");
  }
  function bufName(r) { var ix = r.index; return bufInst(r) + (ix && ix.length ? "{" + ix.join(",") + "}" : ""); }
  function instRow(name) { var at = instAt(name); return at ? comps[at[0]].instructions[at[1]] : null; }
  var entryRoot = null;
  function bufKind(r) {
    // The buffer's own opcode when it has one: the name index costs a pass over every row
    // (190 ms at start-up on the 10x Llama copy, for the overview's peak table).
    var op = r.opcode;
    if (!op) { var row = instRow(bufInst(r)); op = row ? row[C.opcode] : ""; }
    if (entryRoot == null) { var e = comps[compIndex[D.module.entry]]; entryRoot = e && e.root >= 0 ? e.instructions[e.root][C.name] : ""; }
    if (op === "parameter") return "argument";
    if (op === "constant") return "constant";
    if (bufInst(r) === entryRoot) return "output";
    return "temporary";
  }
  function bufLinks(r) {
    var name = bufInst(r), box = el("span", {cls: "buf"});
    box.appendChild(el("span", {cls: "link mono", text: bufName(r), title: "show in the text", on: {click: function () { jumpTo(name); }}}));
    box.appendChild(el("span", {cls: "link small", text: " graph", title: "show in the graph", on: {click: function () { var at = instAt(name); if (at) focusInstruction(at[0], at[1]); }}}));
    return box;
  }
  // One view per memory space (S(0) the default, S(1)... e.g. a GPU's or TPU's other memories):
  // its curve, its peak and the buffers live there (Note [One peak] in analysis/memory).
  // Another space's steps: a bare number is the headline curve's step at that position.
  function namesBeside(tl, base) {
    var own = tl.map(function (v) { return typeof v === "number" ? undefined : pointOf(readSeries({timeline: [v]}), 0).instruction; });
    return function (i) { return own[i] !== undefined ? own[i] : i < base.length ? base.name(i) : null; };
  }
  function memorySpaces(mem) {
    var base = memorySeries(mem), out = [], ms = mem.memory_spaces;
    if (ms && !Array.isArray(ms) && Object.keys(ms).length) {
      Object.keys(ms).sort(function (a, b) { return a - b; }).forEach(function (k) {
        var sp = ms[k], tl = sp.timeline || [];
        var series = Number(k) === 0 && base.length ? base : columnsSeries(
          tl.map(function (v, i) { return typeof v === "number" ? (i < base.length ? base.t[i] : i) : pointOf(readSeries({timeline: [v]}), 0).time; }),
          tl.map(function (v) { return typeof v === "number" ? v : pointOf(readSeries({timeline: [v]}), 0).bytes; }),
          namesBeside(tl, base));
        out.push({space: Number(k), series: series, peak_bytes: sp.peak_bytes, peak_time: sp.peak_time, peak_instruction: Number(k) === 0 ? mem.peak_instruction : null,
          peak_buffers: sp.peak_buffers || (Number(k) === 0 && mem.peak_buffers) || [], peak_buffer_count: sp.peak_buffer_count, temp_bytes: sp.temp_bytes});
      });
    }
    if (!out.length) out.push({space: 0, series: base, peak_bytes: mem.peak_bytes, peak_time: mem.peak_time, peak_instruction: mem.peak_instruction, peak_buffers: mem.peak_buffers || []});
    return out;
  }
  function buildMemory(s) {
    var sec = section("memory"), mem = sec.data;
    var figCard = el("div", {cls: "card"}, el("h2", {text: "Memory"}));
    s.appendChild(figCard);
    if (!mem) { figCard.appendChild(statusNote(sec, "The memory analysis")); return; }
    var chips = el("div", {cls: "memfigs"});
    // Each peak under the name the analysis gives it (Note [peak_memory_in_bytes] in
    // analysis/memory/xla_peak.py): hloscope's live-range peak is not XLA's peak_memory_in_bytes.
    // Each chip also says which memory spaces it counts (S(0) is the default; S(1), S(2)... a
    // device's other memories): the curve's peak and the temporaries count S(0); "total
    // allocated" and XLA's HloLiveRange peak count every space.
    var xla = mem.xla_live_range_peak, xp = mem.xla_peak_memory;
    var others = Object.keys(mem.memory_spaces || {}).filter(function (k) { return Number(k); });
    var all = others.length ? "S(0) and " + others.map(function (k) { return "S(" + k + ")"; }).join(", ") : "S(0), the only space";
    [["peak", mem.peak_label || "peak of S(0), the default memory space", mem.peak_bytes], ["arguments", "arguments", mem.argument_bytes],
      ["outputs", "outputs", mem.output_bytes], ["aliased", "aliased", mem.alias_bytes], ["temps", "temporaries of S(0)", mem.temp_bytes],
      ["constants", "constants", mem.constant_bytes], ["total", "total allocated, " + all, mem.total_bytes],
      ["xla-live-range-peak", "XLA's HloLiveRange peak" + (xla ? " (step " + xla.time + ")" : "") + ", " + all, xla ? xla.bytes : null],
      ["xla-peak-memory", xp ? xp.label : null, xp ? xp.bytes : null, xp ? xp.counts + " (backend " + xp.backend + ": " + xp.backend_reason + ")" : ""]].forEach(function (f) {
      if (f[1] == null || (f[2] == null && f[0] !== "xla-peak-memory")) return;
      chips.appendChild(el("div", {cls: "mf", "data-figure": f[0], "data-bytes": f[2] == null ? "" : String(f[2]), title: f[3] || ""},
        el("b", {text: f[2] == null ? "not derivable" : fmtBytes(f[2])}), el("span", {text: f[1]})));
    });
    var spaces = memorySpaces(mem);
    spaces.forEach(function (sp) {
      if (sp.space) chips.appendChild(el("div", {cls: "mf other"}, el("b", {text: fmtBytes(sp.peak_bytes)}), el("span", {text: "peak of memory space S(" + sp.space + ")"})));
    });
    figCard.appendChild(chips);
    if (mem.peak_definition) figCard.appendChild(el("p", {cls: "muted", text: "Live-range peak: " + mem.peak_definition + ". Sizes are as the device allocates them: a tiled layout fills whole tiles (a TPU's f32[]{:T(128)} takes 512 bytes)."}));
    if (mem.peak_note) figCard.appendChild(el("p", {cls: "note", id: "peak-note", text: mem.peak_note}));
    memoryRows("buffers");  // the allocations stay in columns (allocationColumns in memory_chart.js)
    var buffers = pick(mem, "buffers", "live_ranges", "values") || [];
    var chartCard = el("div", {cls: "card chart"}), peakCard = el("div", {cls: "card", id: "peak-buffers"});
    s.appendChild(chartCard); s.appendChild(peakCard);
    var bar = el("div", {cls: "toolbar", id: "memory-spaces"});
    function show(sp, step) {
      Array.prototype.forEach.call(bar.children, function (b) { b.classList.toggle("active", Number(b.getAttribute("data-space")) === sp.space); });
      setParam("memory", "space", sp.space ? sp.space : null);
      setParam("memory", "t", step != null ? step : null);
      MEM_VIEW.heap = null; MEM_VIEW.chart = null; MEM_VIEW.picked = null;
      chartCard.textContent = "";
      chartCard.appendChild(el("h2", {text: "Live memory over the schedule, memory space S(" + sp.space + ")" + (sp.space ? "" : " (default)")}));
      if (spaces.length > 1) chartCard.appendChild(bar);
      var live = el("div", {id: "live-set"});
      var readout = el("div", {cls: "readout mono", id: "memory-readout", text: "Hover the chart to read the bytes live at each step; click to list them; drag to zoom into a range, double-click for all."});
      chartCard.appendChild(readout);
      var mine = buffers.filter(function (b) { return (b.memory_space || 0) === sp.space; });
      function onpick(p) {
        MEM_VIEW.picked = p.time;
        setParam("memory", "t", p.time);
        showLive(live, p, mine);
        if (MEM_VIEW.heap) MEM_VIEW.heap.draw();
      }
      if (sp.series.length) {
        chartCard.appendChild(memoryChart(sp.series, sp, readout, onpick));
        if (allocationCount(mem.allocations) && mine.some(function (b) { return b.allocation != null && b.allocation >= 0; }))
          chartCard.appendChild(heapView(sp, mem, mine, function (t) { MEM_VIEW.chart.pick(t); }));
      } else chartCard.appendChild(el("p", {cls: "note", text: "The memory analysis gave no series over time."}));
      if (mem.buffers_omitted) chartCard.appendChild(el("p", {cls: "note", text: mem.buffers_omitted + " smallest live ranges are not in the page; live sets list the " + buffers.length + " biggest."}));
      chartCard.appendChild(live);
      peakCard.textContent = "";
      var n = sp.peak_buffer_count != null ? sp.peak_buffer_count : sp.peak_buffers.length;
      peakCard.appendChild(el("h2", {text: "Buffers live at the peak of S(" + sp.space + ") (" + fmtBytes(sp.peak_bytes) + " at step " + sp.peak_time + ", " + n + " buffers" + (n > sp.peak_buffers.length ? ", the " + sp.peak_buffers.length + " biggest listed" : "") + ")"}));
      peakCard.appendChild(groupedBuffers(sp.peak_buffers, sp.peak_bytes, "peak"));
      if (step != null && MEM_VIEW.chart) MEM_VIEW.chart.pick(step);
    }
    spaces.forEach(function (sp) {
      bar.appendChild(el("button", {cls: "btn", "data-space": sp.space, text: "S(" + sp.space + ")" + (sp.space ? "" : " default") + ": peak " + fmtBytes(sp.peak_bytes), on: {click: function () { show(sp); }}}));
    });
    // Note [Shareable links]: #memory&space=1&t=5 reopens S(1) with step 5's live set.
    var want = Number(param("memory", "space") || 0), start = spaces.filter(function (sp) { return sp.space === want; })[0];
    if (param("memory", "space") && !start) flash("This module has no memory space S(" + param("memory", "space") + "); showing S(0).");
    var t = param("memory", "t"), step = t != null && t !== "" && !isNaN(Number(t)) ? Number(t) : null;
    show(start || spaces[0], step);
    window.hloscopeMemory = {pick: function (k) { if (MEM_VIEW.chart) MEM_VIEW.chart.pick(k); }, zoom: function (a, b) { MEM_VIEW.chart.zoom(a, b); },
      view: function () { return MEM_VIEW.chart ? {v0: MEM_VIEW.chart.view.v0, v1: MEM_VIEW.chart.view.v1, peak: MEM_VIEW.chart.peak.time} : null; }};
    if (mem.explain) s.appendChild(el("div", {cls: "card"}, el("h2", {text: "How the figures arise"}), el("pre", {cls: "explain", text: mem.explain})));
  }
  function allocationCount(t) { return !t ? 0 : Array.isArray(t) ? t.length : t.columns.length ? t.values[0].length : 0; }
  // A peak buffer's live range, looked up among the live ranges by instruction and index.
  var rangeByName = null;
  function rangeOf(r) {
    if (r.start != null) return r;
    if (!rangeByName) {
      rangeByName = new Map();
      var mem = section("memory").data;
      if (mem) memoryRows("buffers");
      ((mem && pick(mem, "buffers", "live_ranges")) || []).forEach(function (b) { rangeByName.set(bufName(b), b); });
    }
    return rangeByName.get(bufName(r)) || null;
  }
  function bufferTable(rows) {
    return table([
      {key: "name", label: "buffer", fmt: bufLinks, val: bufName},
      {key: "kind", label: "kind", fmt: bufKind, val: bufKind},
      {key: "opcode", label: "opcode", cls: "mono", fmt: function (r) { if (r.opcode) return r.opcode; var row = instRow(bufInst(r)); return row ? row[C.opcode] : ""; }},
      {key: "shape", label: "shape", cls: "mono wrap"},
      {key: "size", label: "size", num: true, fmt: function (r) { return fmtBytes(pick(r, "size", "bytes")); }, val: function (r) { return Number(pick(r, "size", "bytes")); }},
      {key: "live", label: "live steps", num: true, fmt: function (r) { var lr = rangeOf(r); return lr ? lr.start + "–" + lr.end : ""; }, val: function (r) { var lr = rangeOf(r); return lr ? lr.start : null; }},
      {key: "op_name", label: "op_name", cls: "mono wrap"},
      {key: "source", label: "source", cls: "mono wrap", fmt: sourceOf}], rows, {sortCol: 4, limit: 300});
  }
  function showLive(box, p, buffers) {
    box.textContent = "";
    box.appendChild(el("h2", {text: "Live at step " + p.time + (p.instruction ? " (" + p.instruction + ")" : "") + ": " + fmtBytes(p.bytes)}));
    if (!buffers.length) { box.appendChild(el("p", {cls: "note", text: "The memory analysis did not list live ranges, so the buffers at a point cannot be shown."})); return; }
    var rows = buffers.filter(function (b) { return b.start <= p.time && p.time <= b.end; });
    box.appendChild(el("p", {cls: "muted", text: rows.length + " values, " + fmtBytes(sharedSum(rows)) + " in the buffers listed."}));
    box.appendChild(groupedBuffers(rows, p.bytes, "live"));
  }
  // Values sharing one buffer (an address) count once, at the largest (Note [One peak]).
  function sharedSum(rows) {
    var big = {}, loose = 0;
    rows.forEach(function (b) {
      var n = Number(pick(b, "bytes", "size")) || 0;
      if (b.buffer == null) loose += n; else big[b.buffer] = Math.max(big[b.buffer] || 0, n);
    });
    return Object.keys(big).reduce(function (a, k) { return a + big[k]; }, loose);
  }
  // A list of buffers, or the same grouped by op_name, source line or opcode: what fills memory.
  function groupedBuffers(rows, total, key) {
    var box = el("div"), bar = el("div", {cls: "toolbar"}), body = el("div");
    var by = el("select", {cls: "group-by", id: key + "-group-by"},
      el("option", {value: "", text: "each buffer"}), el("option", {value: "op_name", text: "grouped by op_name"}),
      el("option", {value: "source", text: "grouped by source line"}), el("option", {value: "opcode", text: "grouped by opcode"}));
    by.value = param("memory", "by") || "";
    bar.appendChild(el("label", {text: "show"})); bar.appendChild(by);
    box.appendChild(bar); box.appendChild(body);
    function draw() {
      body.textContent = "";
      setParam("memory", "by", by.value || null);
      if (!by.value) { body.appendChild(bufferTable(rows)); return; }
      var groups = {};
      rows.forEach(function (b) {
        var k = by.value === "source" ? sourceOf(b) : by.value === "opcode" ? (b.opcode || ((instRow(bufInst(b)) || [])[C.opcode]) || "") : pick(b, "op_name");
        k = k || "(none)";
        (groups[k] = groups[k] || []).push(b);
      });
      var list = Object.keys(groups).map(function (k) { var g = groups[k]; return {key: k, count: g.length, bytes: sharedSum(g), rows: g}; });
      body.appendChild(table([
        {key: "key", label: by.options[by.selectedIndex].text.replace("grouped by ", ""), cls: "mono wrap"},
        {key: "count", label: "buffers", num: true},
        {key: "bytes", label: "bytes", num: true, fmt: function (r) { return fmtBytes(r.bytes); }},
        {key: "share", label: "of " + (key === "peak" ? "the peak" : "this step"), fmt: function (r) { return shareBar(r.bytes / (total || 1)); }, val: function (r) { return r.bytes; }},
        {key: "largest", label: "largest", fmt: function (r) { var b = r.rows.slice().sort(function (a, c) { return (Number(pick(c, "bytes", "size")) || 0) - (Number(pick(a, "bytes", "size")) || 0); })[0]; return bufLinks(b); }}],
        list, {sortCol: 2, id: key + "-groups"}));
    }
    by.addEventListener("change", draw);
    draw();
    return box;
  }

  // ---- collectives -----------------------------------------------------------------------------
  // The rows as the table reads them: in columns (Note [Rows from columns] in page.js), each
  // built row with its time (none without an estimate) and share of the step.
  function collectiveRows() {
    var d = section("collectives").data;
    if (!d) return null;
    var list = Array.isArray(d) ? d : pick(d, "collectives", "instructions") || [];
    function finish(r) { var o = {}; for (var k in r) o[k] = r[k]; o.time = TIM ? r.time : null; o.share = shareOf(o.time); return o; }
    return Array.isArray(list) ? list.map(finish) : columnRows(list, finish);
  }
  var COLL_BYTES = ["payload_bytes", "bytes", "bytes_on_wire", "operand_bytes"];
  function collBytes(r) { return pick.apply(null, [r].concat(COLL_BYTES)); }
  function buildCollectives(s) {
    var sec = section("collectives"), rows = collectiveRows(), card = el("div", {cls: "card"}, el("h2", {text: "Collectives"}));
    s.appendChild(card);
    if (!rows) { card.appendChild(statusNote(sec, "The collectives analysis")); return; }
    if (!rows.length) { card.appendChild(el("p", {cls: "note", text: "This module has no collectives."})); return; }
    var grid = gridOf(), times = rows.column ? rows.column("time") || [] : [];
    var byteCols = rows.column ? COLL_BYTES.map(rows.column) : [];
    card.appendChild(el("p", {cls: "muted", text: "On " + grid[0] + " replicas × " + grid[1] + " partitions. Payload and ring bytes are per device and run; est. time covers every run in a step."}));
    var cols = [
      {key: "name", label: "instruction", fmt: function (r) { return instLink(String(r.name || "")); }},
      {key: "opcode", label: "opcode", cls: "mono"},
      {key: "group_mode", label: "mode", cls: "mono"},
      {key: "num_groups", label: "groups", num: true, fmt: function (r) { return r.num_groups == null ? "" : String(r.num_groups); }},
      {key: "replica_groups", label: "replica groups", cls: "mono wrap", fmt: function (r) { return r.replica_groups == null ? "" : r.replica_groups === "{}" ? "{} (all devices)" : r.replica_groups; }},
      {key: "group_size", label: "devices per group", num: true},
      {key: "count", label: "runs", num: true},
      {key: "bytes", label: "payload", num: true, fmt: function (r) { return fmtBytes(collBytes(r)); }, val: function (r) { return Number(collBytes(r)); },
        at: function (i) { for (var k = 0; k < byteCols.length; k++) if (byteCols[k] && byteCols[k][i] != null) return Number(byteCols[k][i]); return NaN; }},
      {key: "ring_bytes", label: "ring bytes/device", num: true, fmt: function (r) { return fmtBytes(r.ring_bytes); }},
      {key: "time", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.time); }, at: function (i) { return TIM ? times[i] : null; }},
      {key: "share", label: "share", fmt: function (r) { return shareBar(r.share); }, val: function (r) { return r.share; }, at: function (i) { return shareOf(TIM ? times[i] : null); }},
      {key: "op_name", label: "op_name", cls: "mono wrap"}];
    if (!TIM) cols.splice(9, 2);
    card.appendChild(table(cols, rows, {sortCol: TIM ? 9 : 7, id: "collectives-table"}));
  }

  // ---- a BufferAssignment dump (report/data.py collect_dump_data) ------------------------------
  function dumpHeader() {
    var d = D.dump, figs = document.getElementById("figures");
    document.getElementById("title").textContent = D.title;
    document.getElementById("subtitle").textContent = ["XLA BufferAssignment dump", d.allocation_count + " allocations",
      d.value_count + " values", D.source_path || ""].filter(Boolean).join(" · ");
    [[fmtBytes(d.total_bytes), "total bytes used"], [d.peak_bytes != null ? fmtBytes(d.peak_bytes) : "–", "live-range peak" + (d.peak_time != null ? " at step " + d.peak_time : "")],
      [String(d.allocation_count), "allocations"]].forEach(function (f) {
      figs.appendChild(el("div", {cls: "figure"}, el("div", {cls: "v", text: f[0]}), el("div", {cls: "k", text: f[1]})));
    });
  }
  function buildDump(s) {
    var d = D.dump;
    s.appendChild(el("div", {cls: "card"}, el("h2", {text: "This is a buffer-assignment dump"}),
      el("p", {cls: "muted", text: "It holds XLA's allocations and live ranges but not the module, so there is no graph, text or time estimate here; " +
        "report the module itself (the *after_optimizations.txt file of the same dump) for those. `hloscope buffers` prints this page's figures in the terminal."})));
    var kinds = Object.keys(d.bytes_by_kind || {}).map(function (k) { return {kind: k, bytes: d.bytes_by_kind[k], count: (d.count_by_kind || {})[k]}; });
    s.appendChild(el("div", {cls: "card"}, el("h2", {text: "Allocations by kind (" + fmtBytes(d.total_bytes) + ")"}),
      table([{key: "kind", label: "kind", cls: "mono"}, {key: "count", label: "allocations", num: true},
        {key: "bytes", label: "bytes", num: true, fmt: function (r) { return fmtBytes(r.bytes); }},
        {key: "share", label: "share", fmt: function (r) { return shareBar(r.bytes / (d.total_bytes || 1)); }, val: function (r) { return r.bytes; }}], kinds, {sortCol: 2})));
    if (d.peak_bytes != null) s.appendChild(el("div", {cls: "card", id: "dump-peak"}, el("h2", {text: "Values live at the peak (" + fmtBytes(d.peak_bytes) + " at step " + d.peak_time + ")"}),
      table([{key: "name", label: "value", cls: "mono", fmt: function (r) { return bufName(r); }, val: bufName},
        {key: "shape", label: "shape", cls: "mono wrap"},
        {key: "bytes", label: "size", num: true, fmt: function (r) { return fmtBytes(r.bytes); }},
        {key: "share", label: "of the peak", fmt: function (r) { return shareBar(r.bytes / (d.peak_bytes || 1)); }, val: function (r) { return r.bytes; }}], d.peak_buffers || [], {sortCol: 2, id: "dump-peak-table"})));
    s.appendChild(el("div", {cls: "card"}, el("h2", {text: "Allocations, biggest first"}),
      table([{key: "index", label: "allocation", num: true}, {key: "kind", label: "kind", cls: "mono"},
        {key: "size", label: "size", num: true, fmt: function (r) { return fmtBytes(r.size); }},
        {key: "value_count", label: "values", num: true},
        {key: "values", label: "values (offset: name)", cls: "mono wrap", fmt: function (r) {
          return r.values.slice(0, 6).map(function (v) { return v.offset + ": " + bufName(v); }).join("  ") + (r.value_count > 6 ? "  … " + (r.value_count - 6) + " more" : ""); },
          val: function (r) { return r.value_count; }}], d.allocations || [], {sortCol: 2, limit: 300})));
  }
