/* hloscope report page: the Timeline tab (XProf's trace viewer, for the estimated schedule).
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 *
 * The intervals are report/timeline.py's: the estimate's schedule as `hloscope estimate --trace`
 * writes it (analysis/trace.py). A loop body is recorded for its first trip; unrolling repeats
 * it every period (the loop's duration over its trips), as trace.trip_offsets does.
 * Note [Timeline drawing]: one canvas; each row keeps its intervals sorted by start, so a frame
 * finds the first visible one by bisection and draws only what is in view; intervals narrower
 * than a pixel are merged into one mark per pixel column, so a frame costs at most a few
 * thousand rectangles however many intervals there are.
 */
  var TL = section("timeline").data;
  var CAT_COLOUR = {"matmul/convolution": "#3b6fd8", "loop fusion": "#8a6fd1", "input fusion (reductions)": "#2f9e8f",
    "output fusion": "#5b8def", "custom fusion": "#b08bd6", "collective": "#d6336c", "data movement": "#e59f2b",
    "elementwise": "#8d97ad", "reduction": "#46b37b", "custom call": "#c9a227", "host transfer": "#7f8c8d", "other": "#b5bcc9"};
  var CATS = (PROF && PROF.category_names) || [];
  function categoryOf(ci, ii) { var c = comps[ci].category; return c && c[ii] >= 0 ? CATS[c[ii]] : null; }
  // Note [Interval kinds] (report/timeline.py): an interval's category and whether it is a
  // loop or call come with it (kind), so colouring reads no row.
  function eventKind(e) {  // 0 other, 1 while, 2 call or conditional
    var E = TL.events;
    if (E.kind) return E.kind[e] % 3;
    var op = comps[E.ci[e]].instructions[E.ii[e]][C.opcode];
    return op === "while" ? 1 : CONTROL[op] ? 2 : 0;
  }
  function eventCategory(e) {
    var E = TL.events;
    if (!E.kind) return categoryOf(E.ci[e], E.ii[e]);
    var c = Math.floor(E.kind[e] / 3) - 1;
    return c >= 0 ? CATS[c] : null;
  }
  function eventColour(e) {
    if (eventKind(e)) return "#d9dce6";
    return CAT_COLOUR[eventCategory(e)] || "#b5bcc9";
  }
  var TV = {unrolled: true};

  // Rows: one per lane and nesting depth that has intervals; each row's intervals sorted by start.
  function timelineRows(unroll) {
    var E = TL.events, n = E.ci.length, offsets = {}, rows = {}, list = [];
    function runsOf(p) {  // [[offset ns, trip]] of the children of event p (trace.trip_offsets)
      if (p < 0) return [[0, 0]];
      if (offsets[p]) return offsets[p];
      var outer = runsOf(E.parent[p]), trips = TL.trips[String(p)] || 1;
      var k = eventKind(p) === 1 ? trips : 1, period = (E.end[p] - E.start[p]) / k, out = [];
      outer.forEach(function (o) { for (var t = 0; t < k; t++) out.push([o[0] + t * period, t]); });
      return (offsets[p] = out);
    }
    var total = 0;
    for (var i = 0; i < n; i++) total += E.parent[i] < 0 ? 1 : runsOf(E.parent[i]).length;
    var folded = !unroll || total > TL.unroll_limit;
    if (TL.rows && TL.rows_in_start_order && (folded || total === n)) return {rows: rowsInOrder(E), folded: folded, total: total};
    for (var j = 0; j < n; j++) {
      var key = E.lane[j] + ":" + E.depth[j], row = rows[key];
      if (!row) { row = rows[key] = {lane: E.lane[j], depth: E.depth[j], s: [], e: [], id: [], trip: []}; list.push(row); }
      var runs = folded || E.parent[j] < 0 ? [[0, 0]] : runsOf(E.parent[j]);
      for (var k2 = 0; k2 < runs.length; k2++) { row.s.push(E.start[j] + runs[k2][0]); row.e.push(E.end[j] + runs[k2][0]); row.id.push(j); row.trip.push(runs[k2][1]); }
    }
    list.forEach(function (row) {  // sort by start (bodies unrolled interleave with nothing else on their row)
      var order = row.s.map(function (_, k) { return k; }).sort(function (a, b) { return row.s[a] - row.s[b]; });
      row.s = Float64Array.from(order, function (k) { return row.s[k]; });
      row.e = Float64Array.from(order, function (k) { return row.e[k]; });
      row.id = Int32Array.from(order, function (k) { return row.id[k]; });
      row.trip = Int32Array.from(order, function (k) { return row.trip[k]; });
      // the largest end so far, for bisection on intervals that started before the view
      row.maxEnd = new Float64Array(row.e.length);
      var m = -Infinity;
      for (var q = 0; q < row.e.length; q++) { m = Math.max(m, row.e[q]); row.maxEnd[q] = m; }
    });
    list.sort(function (a, b) { return a.lane - b.lane || a.depth - b.depth; });
    return {rows: list, folded: folded, total: total};
  }
  // Note [Timeline rows] (report/timeline.py): the rows as Python lists them, each filled in one
  // pass in event order, which is start order within a row; no string key, no sort.
  function rowsInOrder(E) {
    var n = E.ci.length, at = {}, count = TL.rows.map(function () { return 0; }), of = new Int32Array(n);
    TL.rows.forEach(function (ld, k) { at[ld[0] * 65536 + ld[1]] = k; });
    for (var i = 0; i < n; i++) count[of[i] = at[E.lane[i] * 65536 + E.depth[i]]]++;
    var list = TL.rows.map(function (ld, k) {
      return {lane: ld[0], depth: ld[1], s: new Float64Array(count[k]), e: new Float64Array(count[k]), id: new Int32Array(count[k]),
        trip: new Int32Array(count[k]), maxEnd: new Float64Array(count[k]), n: 0};
    });
    for (var j = 0; j < n; j++) {
      var row = list[of[j]], q = row.n++;
      row.s[q] = E.start[j]; row.e[q] = E.end[j]; row.id[q] = j;
      row.maxEnd[q] = q ? Math.max(row.maxEnd[q - 1], E.end[j]) : E.end[j];  // for bisection on intervals begun before the view
    }
    return list;
  }

  function buildTimeline(s) {
    var card = el("div", {cls: "card"}), bar = el("div", {cls: "toolbar"});
    s.appendChild(card);
    if (!TL) { card.appendChild(el("h2", {text: "Timeline"})); card.appendChild(statusNote(section("timeline"), "The timeline")); return; }
    var mode = el("select", {id: "timeline-loops"}, el("option", {value: "unrolled", text: "loops unrolled"}), el("option", {value: "folded", text: "loops folded (first trip)"}));
    mode.value = param("timeline", "loops") === "folded" ? "folded" : "unrolled";
    mode.addEventListener("change", function () { setParam("timeline", "loops", mode.value === "folded" ? "folded" : null); layoutRows(mode.value !== "folded"); draw(); });
    bar.appendChild(mode);
    bar.appendChild(el("button", {cls: "btn", text: "−", title: "zoom out", on: {click: function () { zoomBy(1.6); }}}));
    bar.appendChild(el("button", {cls: "btn", text: "+", title: "zoom in", on: {click: function () { zoomBy(1 / 1.6); }}}));
    bar.appendChild(el("button", {cls: "btn", id: "timeline-fit", text: "whole step", on: {click: function () { TV.t0 = 0; TV.t1 = TL.total_ns * 1.01; draw(); }}}));
    var readout = el("span", {cls: "muted mono", id: "timeline-readout"});
    bar.appendChild(readout);
    card.appendChild(bar);
    var legend = el("div", {cls: "legend", id: "timeline-legend"});
    card.appendChild(legend);
    var wrap = el("div", {cls: "timeline-wrap"});
    var canvas = el("canvas", {id: "timeline-canvas", tabindex: "0"}), overview = el("canvas", {id: "timeline-overview", title: "the whole step: click to centre the view there, drag to choose a range"});
    var side = el("div", {cls: "card details", id: "timeline-details"}, el("p", {cls: "muted", text: "Click an interval for its details. Wheel or +/− to zoom, drag to pan, W/S/A/D as in a trace viewer."}));
    wrap.appendChild(el("div", null, overview, canvas)); wrap.appendChild(side);
    card.appendChild(wrap);
    card.appendChild(el("p", {cls: "muted", id: "timeline-note"}));
    TV.canvas = canvas; TV.overview = overview; TV.side = side; TV.readout = readout; TV.t0 = 0; TV.t1 = TL.total_ns * 1.01;
    layoutRows(mode.value !== "folded");
    var present = {};  // the legend lists the categories this step has
    for (var e = 0; e < TL.events.ci.length; e++) present[eventCategory(e)] = 1;
    Object.keys(CAT_COLOUR).forEach(function (k) {
      if (present[k]) legend.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:" + CAT_COLOUR[k]}), k));
    });
    if (TL.events.depth.some(function (d) { return d > 0; })) legend.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:#d9dce6"}), "loop or call (its body below)"));
    if (Object.keys(TL.exposed).length) legend.appendChild(el("span", {cls: "lg"}, el("i", {cls: "exposed"}), "communication the compute stream waits for"));
    timelineInput(canvas);
    overviewInput(overview);
    window.addEventListener("resize", function () { if (currentTab === "timeline") draw(); });
    tabs.timeline.onactive = function () { requestAnimationFrame(draw); };
    requestAnimationFrame(draw);
  }
  function layoutRows(unroll) {
    var L = timelineRows(unroll);
    TV.rows = L.rows; TV.folded = L.folded;
    var note = document.getElementById("timeline-note");
    if (note) note.textContent = L.rows.length + " rows, " + L.total + " intervals when unrolled" +
      (L.folded && unroll ? "; more than " + TL.unroll_limit + ", so loops stay folded: each body shows its first trip" : "") +
      ". Times are the estimate's (" + (TIM ? TIM.hardware : "") + "), the same `hloscope estimate --trace` writes for Perfetto.";
  }
  var ROW_H = 26, LANE_GAP = 10, AXIS_H = 24, LABEL_W = 118;
  function rowY(k) {  // each lane starts a little lower than the rows before it
    var y = AXIS_H, lane = -1;
    for (var i = 0; i <= k; i++) { if (TV.rows[i].lane !== lane) { y += LANE_GAP; lane = TV.rows[i].lane; } if (i < k) y += ROW_H; }
    return y;
  }
  function sizeCanvas() {
    var c = TV.canvas, dpr = window.devicePixelRatio || 1, w = c.parentNode.parentNode.clientWidth - 330;
    w = Math.max(400, w);
    var h = rowY(TV.rows.length - 1) + ROW_H + 16;
    c.style.width = w + "px"; c.style.height = h + "px";
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    return [w, h, dpr];
  }
  function draw() {
    if (!TV.canvas || !TV.rows) return;
    var started = performance.now();
    var sz = sizeCanvas(), w = sz[0], h = sz[1], ctx = TV.canvas.getContext("2d");
    ctx.setTransform(sz[2], 0, 0, sz[2], 0, 0);
    ctx.clearRect(0, 0, w, h);
    var ink = cssVar("--ink") || "#1f2430", muted = cssVar("--muted") || "#6b7385", line = cssVar("--line") || "#e3e6ee";
    var x0 = LABEL_W, span = TV.t1 - TV.t0, scale = (w - x0 - 8) / span;
    function X(t) { return x0 + (t - TV.t0) * scale; }
    // axis
    ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = muted; ctx.strokeStyle = line; ctx.lineWidth = 1;
    var step = niceStep(span, 8);
    for (var t = Math.ceil(TV.t0 / step) * step; t <= TV.t1; t += step) {
      var xx = Math.round(X(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(xx, AXIS_H - 6); ctx.lineTo(xx, h); ctx.stroke();
      ctx.fillText(fmtTime(t * 1e-9), xx + 3, AXIS_H - 9);
    }
    var laneNames = TL.lanes, drawn = 0, lastLane = -1;
    TV.rows.forEach(function (row, k) {
      var y = rowY(k);
      if (row.lane !== lastLane) {
        lastLane = row.lane;
        ctx.fillStyle = ink; ctx.font = "600 12px system-ui, sans-serif";
        ctx.fillText(laneNames[row.lane], 8, y + 15);
      } else { ctx.fillStyle = muted; ctx.font = "11px system-ui, sans-serif"; ctx.fillText("  depth " + row.depth, 8, y + 15); }
      ctx.save();
      ctx.beginPath(); ctx.rect(x0, y, w - x0, ROW_H); ctx.clip();
      drawn += drawRow(ctx, row, y, X, scale);
      ctx.restore();
    });
    drawOverview(w, ink, line);
    // the view's range, and how long this frame took (the interaction budget is 100 ms)
    TV.readout.textContent = fmtTime(TV.t0 * 1e-9) + " – " + fmtTime(TV.t1 * 1e-9) + " · " + drawn + " marks";
    TV.lastFrame = performance.now() - started;
  }
  // The whole step in one strip: each lane's outermost intervals, one mark per pixel column,
  // and the part the view shows.
  var OV_H = 30;
  function drawOverview(w, ink, line) {
    var c = TV.overview, dpr = window.devicePixelRatio || 1;
    c.style.width = w + "px"; c.style.height = OV_H + "px";
    if (c.width !== Math.round(w * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(OV_H * dpr); TV.ovCache = null; }
    var ctx = c.getContext("2d"), total = TL.total_ns * 1.01, x0 = LABEL_W, scale = (w - x0 - 8) / total;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    if (!TV.ovCache || TV.ovCache.rows !== TV.rows) {
      ctx.clearRect(0, 0, w, OV_H);
      ctx.fillStyle = line; ctx.fillRect(x0, 0, w - x0 - 8, OV_H);
      var tops = TV.rows.filter(function (r) { return r.depth === 0; }), h = (OV_H - 4) / Math.max(1, tops.length);
      tops.forEach(function (row, k) {
        var last = -1;
        for (var q = 0; q < row.s.length; q++) {
          var px = Math.floor(x0 + row.s[q] * scale), raw = (row.e[q] - row.s[q]) * scale, pw = Math.max(1, raw);
          if (raw < 1 && px === last) continue;
          last = px;
          ctx.fillStyle = eventColour(row.id[q]);
          ctx.fillRect(px, 2 + k * h, pw, Math.max(1, h - 1));
        }
      });
      ctx.fillStyle = ink; ctx.font = "10.5px system-ui, sans-serif"; ctx.fillText("whole step", 8, 19);
      TV.ovCache = {rows: TV.rows, image: ctx.getImageData(0, 0, c.width, c.height)};
    } else ctx.putImageData(TV.ovCache.image, 0, 0);
    ctx.strokeStyle = cssVar("--peak") || "#d6336c"; ctx.lineWidth = 1.5;
    var a = x0 + Math.max(0, TV.t0) * scale, b = x0 + Math.min(total, TV.t1) * scale;
    ctx.strokeRect(a, 1, Math.max(2, b - a), OV_H - 2);
  }
  function overviewInput(c) {
    var drag = null;
    function at(ev) { var r = c.getBoundingClientRect(); return (ev.clientX - r.left - LABEL_W) / (r.width - LABEL_W - 8) * TL.total_ns * 1.01; }
    c.addEventListener("mousedown", function (ev) { drag = {t: at(ev)}; });
    window.addEventListener("mouseup", function (ev) {
      if (!drag) return;
      var t = at(ev), a = Math.min(drag.t, t), b = Math.max(drag.t, t);
      drag = null;
      if ((b - a) / (TL.total_ns * 1.01) > 0.005) { TV.t0 = a; TV.t1 = b; }
      else { var span = TV.t1 - TV.t0; TV.t0 = t - span / 2; TV.t1 = t + span / 2; }
      clampView(); draw();
    });
  }
  function drawRow(ctx, row, y, X, scale) {
    var E = TL.events, n = row.s.length, lo = 0, hi = n;
    // first interval whose running maximum end reaches the view
    while (lo < hi) { var mid = (lo + hi) >> 1; if (row.maxEnd[mid] < TV.t0) lo = mid + 1; else hi = mid; }
    var px = -1, pxColour = null, marks = 0, hiLite = TV.selected;
    ctx.font = "11px system-ui, sans-serif";
    for (var k = lo; k < n && row.s[k] <= TV.t1; k++) {
      if (row.e[k] < TV.t0) continue;
      var id = row.id[k], ci = E.ci[id], ii = E.ii[id], a = X(row.s[k]), b = X(row.e[k]), wpx = b - a;
      var colour = eventColour(id);
      if (wpx < 1) {  // merge sub-pixel intervals per pixel column (Note [Timeline drawing])
        var col = Math.floor(a);
        if (col === px) continue;
        px = col; pxColour = colour; ctx.fillStyle = pxColour; ctx.fillRect(col, y + 3, 1, ROW_H - 6); marks++;
        if (TL.exposed[String(id)]) { ctx.fillStyle = "#8f1239"; ctx.fillRect(col, y + ROW_H - 8, 1, 5); }
        continue;
      }
      ctx.fillStyle = colour;
      ctx.fillRect(a, y + 2, Math.max(1, wpx - 0.5), ROW_H - 4); marks++;
      var ex = TL.exposed[String(id)];
      if (ex) {  // the part the compute stream waits for, as a darker band along the bottom
        // its own row's time: secondsOf(name) would build the name index over every row
        var own = TIM ? comps[ci].seconds : null, frac = Math.min(1, ex / ((own && own[ii] != null ? own[ii] : null) || ex));
        ctx.fillStyle = "#8f1239"; ctx.fillRect(a, y + ROW_H - 8, Math.max(1, wpx * frac), 5);
      }
      if (hiLite && hiLite[0] === id && hiLite[1] === row.trip[k]) { ctx.strokeStyle = "#111"; ctx.lineWidth = 2; ctx.strokeRect(a + 1, y + 2, Math.max(1, wpx - 2), ROW_H - 4); }
      if (wpx > 40) {
        var r = comps[ci].instructions[ii], label = r[C.name] + (CONTROL[r[C.opcode]] && TL.trips[String(id)] ? " ×" + TL.trips[String(id)] : "");
        var ink = inkOn(colour);
        ctx.fillStyle = ink[0];
        ctx.fillText(fitText(ctx, label, wpx - 6), Math.max(a, LABEL_W) + 3, y + 15);
      }
    }
    return marks;
  }
  function fitText(ctx, s, w) {
    if (ctx.measureText(s).width <= w) return s;
    var lo = 0, hi = s.length;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (ctx.measureText(s.slice(0, mid) + "…").width <= w) lo = mid; else hi = mid - 1; }
    return lo > 0 ? s.slice(0, lo) + "…" : "";
  }
  function zoomBy(f, at) {
    var c = at == null ? (TV.t0 + TV.t1) / 2 : at, span = Math.max(1e-3, (TV.t1 - TV.t0) * f);
    var frac = (c - TV.t0) / (TV.t1 - TV.t0);
    TV.t0 = c - frac * span; TV.t1 = TV.t0 + span;
    clampView(); draw();
  }
  function clampView() {
    var total = TL.total_ns * 1.01, span = Math.min(TV.t1 - TV.t0, total * 1.2);
    if (TV.t0 < -total * 0.1) TV.t0 = -total * 0.1;
    TV.t1 = TV.t0 + span;
  }
  function timeAt(ev) {
    var r = TV.canvas.getBoundingClientRect(), w = r.width;
    return TV.t0 + (ev.clientX - r.left - LABEL_W) / (w - LABEL_W - 8) * (TV.t1 - TV.t0);
  }
  function eventAt(ev) {  // [row, index] under the pointer, or null
    var r = TV.canvas.getBoundingClientRect(), y = ev.clientY - r.top, t = timeAt(ev);
    var slack = (TV.t1 - TV.t0) / r.width * 2;
    for (var k = 0; k < TV.rows.length; k++) {
      var ry = rowY(k);
      if (y < ry || y > ry + ROW_H) continue;
      var row = TV.rows[k], best = -1;
      for (var q = 0; q < row.s.length && row.s[q] <= t + slack; q++) if (row.e[q] >= t - slack) best = q;
      return best >= 0 ? [row, best] : null;
    }
    return null;
  }
  function timelineInput(c) {
    var drag = null;
    c.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) { var dt = (ev.deltaX || ev.deltaY) / c.clientWidth * (TV.t1 - TV.t0); TV.t0 += dt; TV.t1 += dt; clampView(); draw(); return; }
      zoomBy(ev.deltaY > 0 ? 1.25 : 0.8, timeAt(ev));
    }, {passive: false});
    c.addEventListener("mousedown", function (ev) { drag = {x: ev.clientX, t0: TV.t0, t1: TV.t1, moved: false}; });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      var dt = -dx / (c.clientWidth - LABEL_W) * (drag.t1 - drag.t0);
      TV.t0 = drag.t0 + dt; TV.t1 = drag.t1 + dt; clampView(); draw();
    });
    window.addEventListener("mouseup", function (ev) {
      if (drag && !drag.moved && ev.target === c) pickEvent(eventAt(ev));
      drag = null;
    });
    c.addEventListener("keydown", function (ev) {
      var k = ev.key.toLowerCase(), span = TV.t1 - TV.t0;
      if (k === "w") zoomBy(0.8); else if (k === "s") zoomBy(1.25);
      else if (k === "a") { TV.t0 -= span * 0.15; TV.t1 -= span * 0.15; clampView(); draw(); }
      else if (k === "d") { TV.t0 += span * 0.15; TV.t1 += span * 0.15; clampView(); draw(); }
    });
  }
  function pickEvent(hit) {
    var box = TV.side;
    box.textContent = "";
    if (!hit) { TV.selected = null; draw(); box.appendChild(el("p", {cls: "muted", text: "Nothing there."})); return; }
    var row = hit[0], q = hit[1], id = row.id[q], E = TL.events, ci = E.ci[id], ii = E.ii[id], r = comps[ci].instructions[ii];
    TV.selected = [id, row.trip[q]];
    draw();
    box.appendChild(el("h2", {cls: "mono", text: r[C.name]}));
    var dl = el("dl");
    function item(k, v) { if (v == null || v === "") return; dl.appendChild(el("dt", {text: k})); dl.appendChild(v instanceof Node ? el("dd", null, v) : el("dd", {cls: "mono", text: String(v)})); }
    item("opcode", r[C.opcode]); item("lane", TL.lanes[row.lane]); item("computation", comps[ci].name);
    item("starts at", fmtTime(row.s[q] * 1e-9)); item("lasts", fmtTime((row.e[q] - row.s[q]) * 1e-9));
    if (E.parent[id] >= 0) {
      var p = E.parent[id], pr = comps[E.ci[p]].instructions[E.ii[p]];
      item("inside", pr[C.name] + (TL.trips[String(p)] ? ", trip " + (TV.folded ? "1 (folded)" : row.trip[q] + 1) + " of " + TL.trips[String(p)] : ""));
    }
    var all = secondsOf(r[C.name]);
    if (all != null) item("every run in a step", fmtTime(all) + " (" + fmtPct(shareOf(all)) + " of the step)");
    var ex = TL.exposed[String(id)];
    if (ex) item("compute waits for", fmtTime(ex) + " of it a step");
    item("category", categoryOf(ci, ii)); item("shape", r[C.shape]); item("op_name", r[C.op_name] ? breakableSpan(r[C.op_name], "mono") : null);
    box.appendChild(dl);
    box.appendChild(el("div", {cls: "toolbar"},
      el("button", {cls: "btn", text: "show in graph", on: {click: function () { focusInstruction(ci, ii); }}}),
      el("button", {cls: "btn", text: "show text", on: {click: function () { showText(ci, ii); }}})));
    selectInstruction(r[C.name]);
  }
  window.hloscopeTimeline = {
    view: function () { return {t0: TV.t0, t1: TV.t1, rows: TV.rows ? TV.rows.map(function (r) { return [TL.lanes[r.lane], r.depth, r.s.length]; }) : [], folded: TV.folded, frame_ms: TV.lastFrame}; },
    zoom: function (f) { var t = performance.now(); zoomBy(f); return performance.now() - t; },
    // [x, y] in page coordinates of the middle of the first interval of an instruction
    where: function (name) {
      if (!TV.rows) return null;
      for (var k = 0; k < TV.rows.length; k++) {
        var row = TV.rows[k];
        for (var q = 0; q < row.s.length; q++) {
          var id = row.id[q], r = comps[TL.events.ci[id]].instructions[TL.events.ii[id]];
          if (r[C.name] !== name) continue;
          var rect = TV.canvas.getBoundingClientRect(), w = rect.width, scale = (w - LABEL_W - 8) / (TV.t1 - TV.t0);
          var a = LABEL_W + (row.s[q] - TV.t0) * scale, b = LABEL_W + (row.e[q] - TV.t0) * scale;
          return [rect.left + (Math.max(a, LABEL_W) + Math.min(b, w)) / 2, rect.top + rowY(k) + ROW_H / 2];
        }
      }
      return null;
    },
    show: function (t0, t1) { TV.t0 = t0; TV.t1 = t1; draw(); }
  };
