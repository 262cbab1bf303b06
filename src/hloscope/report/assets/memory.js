/* hloscope report page, part 3 of 6: the Memory and Collectives tabs.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
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
  // A peak buffer's live range, looked up among the live ranges by instruction and index.
  var rangeByName = null;
  function rangeOf(r) {
    if (r.start != null) return r;
    if (!rangeByName) {
      rangeByName = {};
      var mem = section("memory").data;
      ((mem && pick(mem, "buffers", "live_ranges")) || []).forEach(function (b) { rangeByName[bufName(b)] = b; });
    }
    return rangeByName[bufName(r)] || null;
  }
  function bufferTable(rows) {
    return table([
      {key: "name", label: "buffer", fmt: bufLinks, val: bufName},
      {key: "kind", label: "kind", fmt: bufKind, val: bufKind},
      {key: "opcode", label: "opcode", cls: "mono", fmt: function (r) { var row = instRow(bufInst(r)); return r.opcode || (row ? row[C.opcode] : ""); }},
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
      {key: "replica_groups", label: "replica groups", cls: "mono wrap", fmt: function (r) { return r.replica_groups == null ? "" : r.replica_groups === "{}" ? "{} (all devices)" : r.replica_groups; }},
      {key: "group_size", label: "devices per group", num: true},
      {key: "count", label: "runs", num: true},
      {key: "bytes", label: "payload", num: true, fmt: function (r) { return fmtBytes(collBytes(r)); }, val: function (r) { return Number(collBytes(r)); }},
      {key: "ring_bytes", label: "ring bytes/device", num: true, fmt: function (r) { return fmtBytes(r.ring_bytes); }},
      {key: "time", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.time); }},
      {key: "share", label: "share", fmt: function (r) { return shareBar(r.share); }, val: function (r) { return r.share; }},
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
