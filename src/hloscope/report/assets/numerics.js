/* hloscope report page: the Numerics tab (report/numerics.py's section, when inputs were given).
 *
 * Inlined with the other parts in one function scope (PARTS in report/html.py): it uses page.js's
 * helpers (el, sv, table, instLink, section, statusNote) and defines buildNumerics, which the
 * start of the page adds as a tab when D.numerics is there. Every string from the module comes
 * from an untrusted file: textContent and attributes only, never markup.
 */
  function numericsRows(data) {
    var cols = data.columns;
    return data.rows.map(function (r, i) {
      var o = {order: i};
      cols.forEach(function (c, k) { o[c] = r[k]; });
      return o;
    });
  }
  function fmtVal(x) {
    if (x == null) return "–";
    var a = Math.abs(x);
    return a !== 0 && (a >= 1e5 || a < 1e-3) ? x.toExponential(3) : String(parseFloat(x.toPrecision(4)));
  }
  // The abs-max of each value along the schedule (log scale), NaN/infinity marked: where
  // magnitudes explode or vanish.
  function numericsChart(rows, readout) {
    var W = Math.max(600, Math.round((document.querySelector("main").clientWidth || 1200) - 80)), H = 280, L = 60, R = 20, T = 16, B = 34;
    var svg = sv("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, id: "numerics-chart"});
    var pts = rows.filter(function (r) { return r.abs_max != null && r.abs_max > 0; });
    var lo = 0, hi = 1;
    if (pts.length) {
      lo = Math.floor(Math.min.apply(null, pts.map(function (r) { return Math.log10(r.abs_max); })));
      hi = Math.ceil(Math.max.apply(null, pts.map(function (r) { return Math.log10(r.abs_max); })));
      if (hi === lo) hi = lo + 1;
    }
    var n = Math.max(1, rows.length - 1);
    function x(i) { return L + (W - L - R) * i / n; }
    function y(v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); }
    var ax = sv("g", {"class": "axis"}), step = Math.max(1, Math.ceil((hi - lo) / 8));
    for (var e = lo; e <= hi; e += step) {
      ax.appendChild(sv("line", {x1: L, x2: W - R, y1: y(e), y2: y(e)}));
      ax.appendChild(sv("text", {x: L - 6, y: y(e) + 4, "text-anchor": "end", text: "1e" + e}));
    }
    ax.appendChild(sv("text", {x: W - R, y: H - 4, "text-anchor": "end", text: "values in execution order (abs-max, log scale)"}));
    svg.appendChild(ax);
    var d = "";
    pts.forEach(function (r, k) { d += (k ? "L" : "M") + x(r.order).toFixed(1) + "," + y(Math.log10(r.abs_max)).toFixed(1); });
    if (d) svg.appendChild(sv("path", {d: d, "class": "line", fill: "none", stroke: "#3b6fb6", "stroke-width": 1}));
    rows.forEach(function (r) {
      if (r.nan || r.inf) svg.appendChild(sv("circle", {cx: x(r.order), cy: T + 4, r: 3, "class": "bad", fill: "#c0392b",
        "data-name": r.name}));
    });
    var hit = sv("rect", {x: L, y: T, width: W - L - R, height: H - T - B, fill: "transparent", "class": "hit"});
    hit.addEventListener("mousemove", function (ev) {
      var b = svg.getBoundingClientRect(), px = (ev.clientX - b.left) * W / b.width;
      var i = Math.max(0, Math.min(rows.length - 1, Math.round((px - L) / (W - L - R) * n))), r = rows[i];
      readout.textContent = r.name + " (" + r.opcode + ", " + r.computation + ") abs-max " + fmtVal(r.abs_max) +
        (r.nan ? " · " + r.nan + " NaN" : "") + (r.inf ? " · " + r.inf + " inf" : "") + (r.op_name ? " · " + r.op_name : "");
    });
    svg.appendChild(hit);
    return svg;
  }
  function buildNumerics(s) {
    var sec = section("numerics"), data = sec.data, card = el("div", {cls: "card"}, el("h2", {text: "Numerics"}));
    s.appendChild(card);
    if (!data) { card.appendChild(statusNote(sec, "The run for value statistics")); return; }
    var rows = numericsRows(data);
    card.appendChild(el("p", {cls: "muted", text: "What every value held in a run on the given inputs (" + data.devices +
      " device" + (data.devices === 1 ? "" : "s") + "): each instruction's values over all its executions and devices. " +
      (data.total_rows > rows.length ? "The first " + rows.length + " of " + data.total_rows + " rows. " : "") +
      "`hloscope stats` prints the same per device."}));
    var nf = data.first_nonfinite;
    if (nf && nf.instruction) {
      var where = el("p", {cls: "note error", id: "numerics-first-nonfinite"}, "The first NaN or infinity was made by ",
        instLink(nf.instruction.name));
      if (nf.fused) where.appendChild(document.createTextNode(" (" + nf.fused.name + ", " + nf.fused.opcode + ", inside it)"));
      if ((nf.loops || []).length) where.appendChild(document.createTextNode(" in " + nf.loops.map(function (l) {
        return "iteration " + l.iteration + " of " + l["while"]; }).join(", ")));
      if (nf.devices && nf.devices.length) where.appendChild(document.createTextNode(" on device" + (nf.devices.length > 1 ? "s " : " ") + nf.devices.join(",")));
      if (nf.source) where.appendChild(document.createTextNode(" · " + nf.source));
      card.appendChild(where);
    } else if (nf) {
      card.appendChild(el("p", {cls: "note error", id: "numerics-first-nonfinite",
        text: "No instruction made a NaN or an infinity, but an input (or a constant) already held one."}));
    }
    var readout = el("div", {cls: "readout muted", text: "Move over the chart to read a value."});
    card.appendChild(numericsChart(rows, readout));
    card.appendChild(readout);
    var g = data.growth || {};
    [["explode", "Where magnitudes explode (result abs-max over the largest operand's)"],
     ["vanish", "Where magnitudes vanish"]].forEach(function (kv) {
      var list = g[kv[0]] || [];
      if (!list.length) return;
      var c = el("div", {cls: "card", id: "numerics-" + kv[0]}, el("h2", {text: kv[1]}));
      c.appendChild(table([
        {key: "name", label: "instruction", fmt: function (r) { return instLink(r.name); }},
        {key: "opcode", label: "opcode"},
        {key: "ratio", label: "× operands", num: true, fmt: function (r) { return fmtVal(r.ratio); }},
        {key: "abs_max", label: "abs-max", num: true, fmt: function (r) { return fmtVal(r.abs_max); }},
        {key: "operands_abs_max", label: "operands' abs-max", num: true, fmt: function (r) { return fmtVal(r.operands_abs_max); }}],
        list, {limit: 10}));
      s.appendChild(c);
    });
    var all = el("div", {cls: "card"}, el("h2", {text: "Every value"}));
    all.appendChild(table([
      {key: "order", label: "#", num: true},
      {key: "name", label: "instruction", fmt: function (r) { return instLink(r.name.replace(/\{.*\}$/, "")); }},
      {key: "opcode", label: "opcode"}, {key: "shape", label: "shape", cls: "mono"},
      {key: "executions", label: "runs", num: true},
      {key: "min", label: "min", num: true, fmt: function (r) { return fmtVal(r.min); }},
      {key: "max", label: "max", num: true, fmt: function (r) { return fmtVal(r.max); }},
      {key: "mean", label: "mean", num: true, fmt: function (r) { return fmtVal(r.mean); }},
      {key: "std", label: "std", num: true, fmt: function (r) { return fmtVal(r.std); }},
      {key: "abs_max", label: "abs-max", num: true, fmt: function (r) { return fmtVal(r.abs_max); }},
      {key: "nan", label: "NaN", num: true}, {key: "inf", label: "inf", num: true}, {key: "zero", label: "zeros", num: true},
      {key: "op_name", label: "op_name", cls: "mono wrap"}], rows, {id: "numerics-table", sortCol: 0, sortDir: 1}));
    s.appendChild(all);
  }
