/* hloscope report page, part 2 of 6: the Overview, module and Cost tabs.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
  // ---- overview: where the time goes -----------------------------------------------------------
  function buildOverview(s) {
    var card = el("div", {cls: "card"}, el("h2", {text: "Where the time goes"}));
    s.appendChild(card);
    if (!TIM) { card.appendChild(statusNote(section("timing"), "The time estimate")); return; }
    card.appendChild(el("p", null, "Estimated step time ", el("b", {text: fmtTime(TIM.total_seconds)}), " on " + TIM.hardware + "."));
    if (TIM.implied) card.appendChild(el("p", {cls: "note", id: "implied-hardware", text: TIM.implied + ". Pass --hardware NAME for another profile."}));
    (TIM.notes || []).forEach(function (n) { card.appendChild(el("p", {cls: "note estimate-note", text: "Note: " + n + "."})); });
    // The terms are summed per operation; operations overlap, so they can exceed the step.
    var parts = [["compute", TIM.compute_seconds, "#3b6fd8"], ["memory", TIM.memory_seconds, "#2f9e8f"],
      ["communication", TIM.communication_seconds, "#d6336c"], ["launch", TIM.launch_seconds, "#e59f2b"]];
    if (TIM.fresh_page_seconds) parts.push(["fresh pages", TIM.fresh_page_seconds, "#8c6bb1"]);
    var sumParts = parts.reduce(function (a, p) { return a + (p[1] || 0); }, 0) || 1;
    var bar = el("div", {cls: "split", id: "time-split"});
    var legend = el("div", {cls: "legend"});
    parts.forEach(function (p) {
      var w = 100 * (p[1] || 0) / sumParts;
      bar.appendChild(el("i", {style: "width:" + w.toFixed(2) + "%;background:" + p[2], title: p[0] + " " + fmtTime(p[1])}));
      legend.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:" + p[2]}), p[0] + " " + fmtTime(p[1]) + " (" + fmtPct(p[1] / sumParts) + ")"));
    });
    card.appendChild(bar); card.appendChild(legend);
    // Within a kernel compute and memory overlap (the larger plus 5% of the smaller), and
    // asynchronous work overlaps other operations, so the terms can add to more than the step;
    // say so only when they do (seed 001: 152 µs both).
    var over = fmtTime(sumParts) !== fmtTime(TIM.total_seconds) && sumParts > TIM.total_seconds;
    card.appendChild(el("p", {cls: "muted", id: "terms-note", text: "Each term is summed over the operations (roofline: compute and memory time per kernel, the α-β model per collective, a launch per kernel). " +
      (over ? "Compute and memory overlap within a kernel, and asynchronous work overlaps other operations, so the terms add to " + fmtTime(sumParts) + ", more than the " + fmtTime(TIM.total_seconds) + " step."
        : "They add to " + fmtTime(sumParts) + ", the step time: nothing overlaps.")}));
    var rows = (TIM.per_instruction || []).map(function (r) {
      return {name: r.name, opcode: r.opcode, computation: r.computation, seconds: r.seconds, share: shareOf(r.seconds),
        runs: r.executions, trip: r.trip_count, bound: r.bound};
    });
    var entry = D.module.entry;
    var g = el("div");  // one above the other: each needs the width (Note: "in" was clipped side by side)
    var topLevel = rows.filter(function (r) { return r.computation === entry; }).slice(0, 15);
    var leaf = rows.filter(function (r) { return !CONTROL[r.opcode]; }).slice(0, 15);
    // Without loops or calls in the entry the two lists are one: show it once, full width.
    var same = topLevel.length === leaf.length && topLevel.every(function (r, i) { return r.name === leaf[i].name; });
    if (!same) g.appendChild(el("div", {cls: "card", id: "top-steps"}, el("h2", {text: "Top steps of the entry computation"}),
      table(stepCols(false), topLevel, {sortCol: 2})));
    var hot = el("div", {cls: "card", id: "top-ops"}, el("h2", {text: same ? "Hottest operations (the entry computation has no loops or calls)" : "Hottest operations (inside loops: all trips)"}),
      table(stepCols(!same), leaf, {sortCol: 2}));
    s.appendChild(fixFirst());
    if (same) { s.appendChild(hot); } else { g.appendChild(hot); s.appendChild(g); }
    s.appendChild(categoryCard());
    s.appendChild(memoryGlance());
    s.appendChild(moduleCard());
  }
  function whatCell(r) {  // a loop as "N trips × body" (the body a link), else the opcode
    if (r.opcode === "while") {
      var b = r.body != null ? r.body : bodyOf(r.name), box = el("span", {cls: "mono nowrap", text: (r.trip != null ? r.trip : "?") + " trips × "});
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
    if (withWhere) cols.push({key: "computation", label: "in", cls: "mono wrap", fmt: function (r) { return compIndex[r.computation] != null ? compLink(compIndex[r.computation], r.computation) : r.computation; }});
    return cols;
  }
  // Where memory peaks and why, on the first screen: the peak, its step and what holds it.
  function memoryGlance() {
    var mem = section("memory").data, card = el("div", {cls: "card", id: "memory-glance"}, el("h2", {text: "Where memory peaks"}));
    if (!mem) { card.appendChild(statusNote(section("memory"), "The memory analysis")); return card; }
    var at = mem.peak_instruction;  // the analysis's (analysis/memory/report.py), as `hloscope memory` prints it
    var bufs = (mem.peak_buffers || []).slice(), total = mem.peak_bytes || 1;
    card.appendChild(el("p", null, "Live-range peak ", el("b", {text: fmtBytes(mem.peak_bytes)}), " at schedule step " + mem.peak_time + (at ? " (" + at + ")" : "") +
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
  // ---- module: inputs, outputs, opcodes ---------------------------------------------------------
  function moduleCard() {
    var s = el("div");
    var sec = section("summary"), sum = sec.data;
    if (!sum) { s.appendChild(el("div", {cls: "card"}, statusNote(sec, "The summary"))); return s; }
    var g = el("div");  // one above the other: each needs the width (Note: "in" was clipped side by side)
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
    // The cost, loop and time rows joined in Python (cost_rows in report/joined.py): no name
    // index over every row of the module here (Note [Joined in Python]).
    var list = (cost.rows || []).map(function (r) { var o = {}; for (var k in r) o[k] = r[k]; o.share = shareOf(r.time); return o; });
    card.appendChild(el("p", {cls: "muted", text: "Per step: an instruction inside a loop body counts every trip (the runs column), and a while loop's time is trips × (body + condition). " +
      "XLA's HloCostAnalysis counts " + fmtNum(cost.flops) + "FLOP and " + fmtBytes(cost.bytes_accessed) + " (loop bodies once, custom calls not at all); counting loop trips and custom-call gemms gives " +
      fmtNum(cost.loop_aware ? cost.loop_aware.flops : cost.flops) + "FLOP. Click a header to sort."}));
    if (!list.length) { card.appendChild(el("p", {cls: "note", text: "The cost analysis gave no per-instruction rows."})); return; }
    var cols = [
      {key: "name", label: "instruction", fmt: function (r) { return instLink(r.name); }},
      {key: "opcode", label: "what", fmt: function (r) { return r.opcode === "while" ? whatCell(r) : el("span", {cls: "mono", text: r.opcode}); }},
      {key: "computation", label: "in", cls: "mono", fmt: function (r) { return compIndex[r.computation] != null ? compLink(compIndex[r.computation], clip(r.computation, 32)) : r.computation; }},
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
