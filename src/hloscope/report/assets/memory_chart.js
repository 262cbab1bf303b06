/* hloscope report page: the memory curve (zoom, brush, exact steps) and the heap view.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 *
 * Note [Steps on the curve]
 * -------------------------
 * Step t holds its bytes from x(t) to x(t + 1): the view is a window [v0, v1) of steps and a
 * pixel column covers the steps in its own slice of it. Where one pixel holds many steps
 * (Llama's 31,000 steps on 1,200 pixels) the column is drawn at, and a click there picks, the
 * largest of them, so the peak is always under the pointer, whatever the zoom; the peak's
 * marker sits in the middle of its own step and clicking it picks exactly that step.
 */
  var MEM_VIEW = {};
  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw || 1))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  function memoryChart(series, mem, readout, onpick) {
    var W = Math.max(600, Math.round((document.querySelector("main").clientWidth || 1200) - 80)), H = 300, L = 78, R = 20, T = 24, B = 34;
    var PW = W - L - R, svg = sv("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, id: "memory-chart"});
    // series: columns (Note [Series as columns] in memory.js)
    var first = series.t[0], last = series.t[series.length - 1], SB = series.b;
    var maxB = 1, top = 0;
    for (var i = 0; i < series.length; i++) { if (SB[i] > maxB) maxB = SB[i]; if (SB[i] > SB[top]) top = i; }
    var view = {v0: first, v1: last + 1}, peak = pointOf(series, mem.peak_time != null && seriesIndex(series, mem.peak_time) >= 0 ? seriesIndex(series, mem.peak_time) : top);
    // The analysis names the peak's instruction (the same as its step's): no row to decode for the label.
    if (peak && mem.peak_instruction && peak.time === mem.peak_time) peak.instruction = mem.peak_instruction;
    function at(t) { return pointOf(series, seriesIndex(series, t)); }
    function x(t) { return L + PW * (t - view.v0) / (view.v1 - view.v0); }
    function y(b) { return T + (H - T - B) * (1 - b / maxB); }
    function stepRange(px0, px1) {  // steps whose plateaus meet pixels [px0, px1)
      var span = view.v1 - view.v0;
      return [Math.max(first, Math.floor(view.v0 + (px0 - L) / PW * span)), Math.min(last, Math.ceil(view.v0 + (px1 - L) / PW * span) - 1)];
    }
    function largest(a, b) {  // the step with the most bytes in [a, b]
      var best = -1;
      for (var t = Math.max(first, a); t <= Math.min(last, b); t++) { var k = seriesIndex(series, t); if (k >= 0 && (best < 0 || SB[k] > SB[best])) best = k; }
      return best < 0 ? null : pointOf(series, best);
    }
    var ax = sv("g", {"class": "axis"}), area = sv("path", {"class": "area"}), marker = sv("circle", {r: 5, "class": "peak"});
    var label = sv("text", {"class": "peak-label"}), cursor = sv("line", {"class": "cursor", y1: T, y2: H - B, x1: -10, x2: -10});
    var pin = sv("line", {"class": "cursor pinned", y1: T, y2: H - B, x1: -10, x2: -10});
    var brush = sv("rect", {"class": "brush", y: T, height: H - T - B, x: -10, width: 0});
    var hit = sv("rect", {x: L, y: T, width: PW, height: H - T - B, "class": "hit"});
    var clip = sv("clipPath", {id: "memory-clip"}); clip.appendChild(sv("rect", {x: L, y: 0, width: PW, height: H}));
    var defs = sv("defs"); defs.appendChild(clip); svg.appendChild(defs);
    area.setAttribute("clip-path", "url(#memory-clip)");
    [ax, area, cursor, pin, brush, marker, label, hit].forEach(function (e) { svg.appendChild(e); });
    var picked = null;
    function draw() {
      ax.textContent = "";
      var fifth = maxB / 5, unit = fifth >= 1073741824 ? 1073741824 : fifth >= 1048576 ? 1048576 : fifth >= 1024 ? 1024 : 1;
      var bstep = niceStep(maxB / unit, 5) * unit;
      for (var b = 0; b <= maxB + 1e-9; b += bstep) {
        ax.appendChild(sv("line", {x1: L, x2: W - R, y1: y(b), y2: y(b)}));
        ax.appendChild(sv("text", {x: L - 6, y: y(b) + 4, "text-anchor": "end", text: fmtBytes(b)}));
      }
      var step = Math.max(1, niceStep(view.v1 - view.v0, 10));
      for (var t = Math.ceil(view.v0 / step) * step; t < view.v1; t += step) {
        ax.appendChild(sv("line", {x1: x(t + 0.5), x2: x(t + 0.5), y1: H - B, y2: H - B + 4, "class": "tick"}));
        ax.appendChild(sv("text", {x: x(t + 0.5), y: H - B + 16, "text-anchor": "middle", text: String(t)}));
      }
      ax.appendChild(sv("text", {x: W - R, y: H - 4, "text-anchor": "end", text: "schedule step" + (view.v0 > first || view.v1 < last + 1 ? " (zoomed: double-click or Esc for all)" : "")}));
      // the curve: exact plateaus when steps are wider than a pixel, else each column's largest step
      var d = "M" + L + "," + y(0), perPx = (view.v1 - view.v0) / PW;
      if (perPx <= 1) {
        var a = Math.max(first, Math.floor(view.v0)), z = Math.min(last, Math.ceil(view.v1));
        for (var s = a; s <= z; s++) { var k = seriesIndex(series, s); if (k < 0) continue; d += "L" + x(s).toFixed(1) + "," + y(SB[k]).toFixed(1) + "L" + x(s + 1).toFixed(1) + "," + y(SB[k]).toFixed(1); }
      } else {
        for (var c = 0; c < PW; c++) {
          var r = stepRange(L + c, L + c + 1), q = largest(r[0], r[1]);
          if (q) d += "L" + (L + c) + "," + y(q.bytes).toFixed(1) + "L" + (L + c + 1) + "," + y(q.bytes).toFixed(1);
        }
      }
      area.setAttribute("d", d + "L" + (W - R) + "," + y(0) + "Z");
      var px = x(peak.time + 0.5), inView = peak.time >= view.v0 && peak.time < view.v1;
      marker.setAttribute("cx", inView ? px : -20); marker.setAttribute("cy", y(peak.bytes));
      marker.setAttribute("data-bytes", peak.bytes); marker.setAttribute("data-time", peak.time);
      var lx = px + 8, anchor = "start";
      if (lx > W - 260) { lx = px - 8; anchor = "end"; }
      label.setAttribute("x", inView ? lx : -999); label.setAttribute("y", Math.max(14, y(peak.bytes) - 6)); label.setAttribute("text-anchor", anchor);
      label.textContent = "peak " + fmtBytes(peak.bytes) + " at step " + peak.time + (peak.instruction ? " (" + peak.instruction + ")" : "");
      hit.setAttribute("data-t0", view.v0); hit.setAttribute("data-t1", view.v1);
      if (picked) { var pxx = x(picked.time + 0.5); pin.setAttribute("x1", pxx); pin.setAttribute("x2", pxx); }
      if (MEM_VIEW.heap) MEM_VIEW.heap.draw(view);
    }
    function pointAt(clientX) {  // the step under the pointer (Note [Steps on the curve])
      var rect = svg.getBoundingClientRect(), px = (clientX - rect.left) * W / rect.width;
      if ((view.v1 - view.v0) / PW <= 1) { var t = Math.floor(view.v0 + (px - L) / PW * (view.v1 - view.v0)); return at(Math.max(first, Math.min(last, t))); }
      var c = Math.floor(px), r = stepRange(c, c + 1);
      return largest(r[0], r[1]) || at(Math.max(first, Math.min(last, r[0])));
    }
    function pick(p) {
      if (!p) return;
      picked = p;
      var pxx = x(p.time + 0.5); pin.setAttribute("x1", pxx); pin.setAttribute("x2", pxx);
      onpick(p);
    }
    function zoomTo(a, b) {
      var span = Math.max(4, b - a), mid = (a + b) / 2;
      view.v0 = Math.max(first, mid - span / 2); view.v1 = Math.min(last + 1, view.v0 + span); view.v0 = Math.max(first, view.v1 - span);
      draw();
    }
    var drag = null;
    hit.addEventListener("mousemove", function (ev) {
      var p = pointAt(ev.clientX);
      if (!p) return;
      var pxx = x(p.time + 0.5);
      cursor.setAttribute("x1", pxx); cursor.setAttribute("x2", pxx);
      readout.textContent = "step " + p.time + " · " + fmtBytes(p.bytes) + " live" + (p.instruction ? " · " + p.instruction : "") + (p.time === peak.time ? " · the peak" : "");
    });
    hit.addEventListener("mousedown", function (ev) { var r = svg.getBoundingClientRect(); drag = {x: (ev.clientX - r.left) * W / r.width}; });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * W / r.width;
      brush.setAttribute("x", Math.min(drag.x, px)); brush.setAttribute("width", Math.abs(px - drag.x));
    });
    window.addEventListener("mouseup", function (ev) {
      if (!drag) return;
      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * W / r.width, d0 = drag.x;
      drag = null; brush.setAttribute("width", 0);
      if (Math.abs(px - d0) > 4) {  // brushed: zoom to the range
        var span = view.v1 - view.v0;
        zoomTo(view.v0 + (Math.min(px, d0) - L) / PW * span, view.v0 + (Math.max(px, d0) - L) / PW * span);
      } else if (ev.target === hit) pick(pointAt(ev.clientX));
    });
    hit.addEventListener("dblclick", function () { view.v0 = first; view.v1 = last + 1; draw(); });
    hit.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = svg.getBoundingClientRect(), px = (ev.clientX - r.left) * W / r.width, span = view.v1 - view.v0;
      var at = view.v0 + (px - L) / PW * span, f = ev.deltaY > 0 ? 1.25 : 0.8, ns = Math.min(last + 1 - first, Math.max(4, span * f));
      var frac = (at - view.v0) / span;
      view.v0 = Math.max(first, at - frac * ns); view.v1 = Math.min(last + 1, view.v0 + ns); view.v0 = Math.max(first, view.v1 - ns);
      draw();
    }, {passive: false});
    marker.addEventListener("click", function () { pick(peak); });
    svg.addEventListener("keydown", function (ev) { if (ev.key === "Escape") { view.v0 = first; view.v1 = last + 1; draw(); } });
    MEM_VIEW.chart = {pick: function (t) { pick(at(t)); }, zoom: zoomTo, view: view, peak: peak, draw: draw};
    draw();
    return el("div", {cls: "chart-wrap"}, svg);
  }

  // ---- the heap: each buffer a box at its offset, over its live range -----------------------
  // Allocations of one memory space are laid end to end in index order (parameters first, as
  // XLA numbers them); a buffer's box spans its live steps across and its bytes up from its
  // allocation's start plus its offset. Gaps inside the temp block at a step are its
  // fragmentation then.
  var KIND_COLOUR = {"parameter": "#7ea6f2", "maybe-live-out": "#5fb8ab", "preallocated-temp": "#edb65c", "temp": "#edb65c",
    "constant": "#b3bccb", "thread-local": "#a593de"};
  // Allocations [a, b) of the memory section as columns (index, size, kind): 85,000 of them at
  // 10x Llama, never an object each (Note [Rows from columns] in page.js).
  function allocationColumns(t, a, b) {
    if (!t) return {index: [], size: [], kind: [], length: 0};
    if (Array.isArray(t)) {
      t = t.slice(a, b);
      return {index: t.map(function (x) { return x.index; }), size: t.map(function (x) { return x.size; }), kind: t.map(function (x) { return x.kind; }), length: t.length};
    }
    function col(k) { return t.values[t.columns.indexOf(k)].slice(a, b); }
    var out = {index: col("index"), size: col("size"), kind: col("kind")};
    out.length = out.index.length;
    return out;
  }
  function heapView(sp, mem, buffers, onpick) {
    var box = el("div", {cls: "heap"}), bar = el("div", {cls: "toolbar legend"});
    // One slice: the allocations come grouped by memory space, in index order (group_allocations
    // in report/joined.py); filtering 85,000 of them took 72 ms of the 10x Llama heap view.
    var span = (mem.allocation_spaces || {})[String(sp.space)] || [0, 0], allocs = allocationColumns(mem.allocations, span[0], span[1]);
    var present = {};
    for (var j = 0; j < allocs.length; j++) present[allocs.kind[j]] = 1;
    var only = el("select", {id: "heap-allocations"}, el("option", {value: "all", text: "every allocation of S(" + sp.space + ")"}),
      el("option", {value: "temp", text: "temporaries only (the heap XLA packs)"}));
    bar.appendChild(el("b", {text: "Heap"})); bar.appendChild(only);
    Object.keys(KIND_COLOUR).forEach(function (k) {
      if (k === "temp" || !present[k]) return;
      bar.appendChild(el("span", {cls: "lg"}, el("i", {style: "background:" + KIND_COLOUR[k]}), k.replace("maybe-live-out", "output").replace("preallocated-temp", "temporaries")));
    });
    var tip = el("span", {cls: "muted mono", id: "heap-readout", text: "Offset × step: each box a buffer, from its allocation's start plus its offset, over its live range. Hover for one, click to list the step."});
    box.appendChild(bar); box.appendChild(tip);
    var canvas = el("canvas", {id: "heap-canvas"});
    box.appendChild(canvas);
    var layout = null;
    function place() {
      var temps = only.value === "temp", keep = [], base = [], y = 0;  // base: by allocation index
      for (var j = 0; j < allocs.length; j++) {  // in index order already
        if (temps && !/temp/.test(allocs.kind[j])) continue;
        keep.push(j); base[allocs.index[j]] = y; y += allocs.size[j];
      }
      layout = {base: base, total: y || 1, allocs: keep, boxes: buffers.filter(function (b) { return base[b.allocation] != null; })};
    }
    only.addEventListener("change", function () { place(); draw(MEM_VIEW.chart ? MEM_VIEW.chart.view : null); });
    place();
    var L = 78, R = 20, H = 260, lastView = null;
    function draw(view) {
      view = view || lastView || {v0: 0, v1: (mem.schedule_end_time || 1)};
      lastView = view;
      var dpr = window.devicePixelRatio || 1, w = Math.max(600, Math.round((document.querySelector("main").clientWidth || 1200) - 80));
      canvas.style.width = w + "px"; canvas.style.height = H + "px";
      if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(H * dpr); }
      var ctx = canvas.getContext("2d"), PW = w - L - R, span = view.v1 - view.v0;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, w, H);
      function X(t) { return L + PW * (t - view.v0) / span; }
      function Y(off) { return H - 6 - (H - 12) * off / layout.total; }
      ctx.font = "10.5px system-ui, sans-serif"; ctx.fillStyle = cssVar("--muted") || "#6b7385"; ctx.strokeStyle = cssVar("--line") || "#e3e6ee";
      // Allocation boundaries as one path, one line per pixel row (the 10x Llama copy has 84,000
      // allocations: a stroke each took 200 ms); labelled when tall enough.
      var lastRow = null;
      ctx.beginPath();
      layout.allocs.forEach(function (j) {
        var ix = allocs.index[j], size = allocs.size[j], y0 = Y(layout.base[ix]), y1 = Y(layout.base[ix] + size), row = Math.round(y0);
        if (row !== lastRow) { ctx.moveTo(L, y0 + 0.5); ctx.lineTo(w - R, y0 + 0.5); lastRow = row; }
        if (y0 - y1 > 13) ctx.fillText(fmtBytes(size) + " " + allocs.kind[j].replace("maybe-live-out", "output").replace("preallocated-temp", "temps"), 4, y1 + 11);
      });
      ctx.stroke();
      var drawn = 0, byColour = {};
      layout.boxes.forEach(function (b) {  // one fill colour at a time: 20,000 boxes stay a few ms
        if (b.end + 1 < view.v0 || b.start > view.v1) return;
        var c = KIND_COLOUR[allocKind(b.allocation)] || "#b5bcc9";
        (byColour[c] = byColour[c] || []).push(b);
      });
      // Opaque fills (blending 20,000 rectangles costs the software rasteriser seconds), a hair
      // of gap between neighbours; boxes under a third of a pixel tall are left out (dust). A box
      // under a pixel wide is drawn one pixel wide, so such boxes of one colour that land on the
      // same pixel column and rows are one fill (at 10x Llama, 200,000 boxes took 200 ms a draw).
      Object.keys(byColour).forEach(function (c) {
        ctx.fillStyle = c;
        var thin = new Set();
        byColour[c].forEach(function (b) {
          var y0 = Y(layout.base[b.allocation] + b.offset + (b.bytes || b.size || 0)), y1 = Y(layout.base[b.allocation] + b.offset);
          if (y1 - y0 < 0.33) return;
          var x0 = Math.max(L, X(b.start)), x1 = Math.min(w - R, X(b.end + 1));
          drawn++;
          if (x1 - x0 < 1.5) {
            // a number, not a string: no garbage per box (quarter pixels; y under 2^12 of them)
            var key = (Math.round(x0 * 4) * 4096 + Math.round(y0 * 4)) * 4096 + Math.round(y1 * 4);
            if (thin.has(key)) return;
            thin.add(key);
          }
          ctx.fillRect(x0, y0, Math.max(1, x1 - x0 - 0.5), Math.max(1, y1 - y0 - 0.3));
        });
      });
      var sel = MEM_VIEW.heapSel;
      if (sel && layout.base[sel.allocation] != null) {
        ctx.strokeStyle = cssVar("--ink") || "#111"; ctx.lineWidth = 1.5;
        ctx.strokeRect(X(sel.start), Y(layout.base[sel.allocation] + sel.offset + (sel.bytes || 0)), X(sel.end + 1) - X(sel.start), Math.max(1, Y(layout.base[sel.allocation] + sel.offset) - Y(layout.base[sel.allocation] + sel.offset + (sel.bytes || 0))));
      }
      if (MEM_VIEW.picked != null) { ctx.strokeStyle = cssVar("--peak") || "#d6336c"; var px = X(MEM_VIEW.picked + 0.5); ctx.beginPath(); ctx.moveTo(px, 0); ctx.lineTo(px, H); ctx.stroke(); }
      canvas.setAttribute("data-boxes", drawn);
      layout.X = X; layout.Y = Y; layout.w = w;
    }
    var kinds = [];
    for (j = 0; j < allocs.length; j++) kinds[allocs.index[j]] = allocs.kind[j];
    function allocKind(i) { return kinds[i]; }
    function at(ev) {  // the buffer under the pointer
      var r = canvas.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top, best = null;
      layout.boxes.forEach(function (b) {
        var x0 = layout.X(b.start), x1 = layout.X(b.end + 1), y0 = layout.Y(layout.base[b.allocation] + b.offset + (b.bytes || 0)), y1 = layout.Y(layout.base[b.allocation] + b.offset);
        if (mx >= x0 && mx <= Math.max(x1, x0 + 1) && my >= y0 - 1 && my <= y1 + 1 && (!best || (b.bytes || 0) < (best.bytes || 0))) best = b;
      });
      return best;
    }
    canvas.addEventListener("mousemove", function (ev) {
      var b = at(ev);
      tip.textContent = b ? bufName(b) + " · " + fmtBytes(b.bytes) + " at offset " + fmtBytes(b.offset) + " of allocation " + b.allocation + " (" + kinds[b.allocation] + ") · live " + b.start + "–" + b.end + (b.op_name ? " · " + b.op_name : "") : "";
    });
    canvas.addEventListener("click", function (ev) {
      var b = at(ev);
      MEM_VIEW.heapSel = b;
      if (b) { var t = Math.max(b.start, Math.min(b.end, Math.floor(lastView.v0 + (ev.clientX - canvas.getBoundingClientRect().left - L) / (layout.w - L - R) * (lastView.v1 - lastView.v0)))); onpick(t, b); }
      draw();
    });
    MEM_VIEW.heap = {draw: draw};
    requestAnimationFrame(function () { draw(MEM_VIEW.chart ? MEM_VIEW.chart.view : null); });
    return box;
  }
