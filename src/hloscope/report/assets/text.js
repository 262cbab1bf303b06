/* hloscope report page, part 6 of 6: the Text tab and start-up.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
  // ---- instruction text ------------------------------------------------------------------------
  // Note [Virtual text]: an LLM-scale entry computation has 30,000+ lines; building them all
  // froze the browser for seconds. Lines have one fixed height, so the view keeps a spacer of the
  // full height and builds only the ~60 lines in sight, again on each scroll.
  var T = {}, LH = 19;
  function buildText(s) {
    var card = el("div", {cls: "card"}), bar = el("div", {cls: "toolbar"});
    var sel = el("select", {id: "text-computation"});
    // Every computation when there are few; past TEXT_MENU, the entry and the biggest others
    // (the 10x Llama copy has 29,000): any other joins the menu when a link opens it.
    var order = comps.map(function (c, i) { return i; });
    if (order.length > TEXT_MENU) order = order.sort(function (a, b) { return (comps[b].is_entry - comps[a].is_entry) || (comps[a].is_fusion - comps[b].is_fusion) || (rowCount(comps[b]) - rowCount(comps[a])); }).slice(0, TEXT_MENU).sort(function (a, b) { return a - b; });
    order.forEach(function (i) { sel.appendChild(textOption(i)); });
    sel.addEventListener("change", function () { renderText(Number(sel.value), null); });
    bar.appendChild(el("label", {text: "computation"})); bar.appendChild(sel);
    // Only the lines in sight exist (Note [Virtual text]), so the browser's own find cannot
    // see the rest: this box searches every computation's text.
    var find = el("input", {type: "search", id: "text-search", placeholder: "find in the text (Enter: next, Shift+Enter: previous)", size: 36});
    var count = el("span", {cls: "muted", id: "text-search-count"});
    var timer = null;
    find.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { findText(find.value, 0); }, 150); });
    find.addEventListener("keydown", function (ev) {
      if (ev.key !== "Enter") return;
      ev.preventDefault(); clearTimeout(timer);
      if (!T.find || T.find.q !== find.value.trim().toLowerCase()) findText(find.value, 0); else findText(find.value, ev.shiftKey ? -1 : 1);
    });
    bar.appendChild(find); bar.appendChild(count);
    bar.appendChild(el("span", {cls: "muted", text: "Click an operand to jump to it; users are listed at the end of each line."}));
    T.count = count;
    card.appendChild(bar);
    var code = el("div", {cls: "code", id: "text-code"}), spacer = el("div", {cls: "spacer"});
    code.appendChild(spacer);
    code.addEventListener("scroll", function () { if (!T.raf) T.raf = requestAnimationFrame(function () { T.raf = 0; paintText(); }); });
    card.appendChild(code); s.appendChild(card);
    T.sel = sel; T.code = code; T.spacer = spacer;
    if (T.pending) { var p = T.pending; T.pending = null; renderText(p[0], p[1]); }
    else renderText(comps.findIndex(function (c) { return c.is_entry; }), null);
  }
  var TEXT_MENU = 1500;
  function textOption(i) { var c = comps[i]; return el("option", {value: i, text: (c.is_entry ? "ENTRY " : "") + c.name + " (" + rowCount(c) + ")"}); }
  function renderText(ci, hl) {
    if (!T.sel.querySelector("option[value='" + ci + "']")) T.sel.appendChild(textOption(ci));
    T.sel.value = ci; T.ci = ci; T.hl = hl; T.painted = {};
    if (T.find) { T.find.lines = {}; T.find.hits.forEach(function (h) { if (h[0] === ci) T.find.lines[h[1]] = 1; }); }
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
    var found = T.find && T.find.lines[i];
    var line = el("div", {cls: "line" + (i === T.hl ? " hl" : "") + (found ? " found" : ""), id: "L" + ci + "_" + i, style: "top:" + (8 + i * LH) + "px"});
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
  // Every line holding the query, the current computation's first; step moves through them.
  function findText(q, step) {
    q = q.trim().toLowerCase();
    if (q.length < 2) { T.find = null; T.count.textContent = ""; repaintText(); return; }
    if (!T.find || T.find.q !== q) {
      var hits = [], order = [T.ci].concat(comps.map(function (c, i) { return i; }).filter(function (i) { return i !== T.ci; }));
      order.forEach(function (ci) {
        comps[ci].instructions.forEach(function (r, ii) { if (r[C.text].toLowerCase().indexOf(q) >= 0) hits.push([ci, ii]); });
      });
      T.find = {q: q, hits: hits, k: 0, lines: {}};
      hits.forEach(function (h) { if (h[0] === T.ci) T.find.lines[h[1]] = 1; });
    } else if (T.find.hits.length) {
      T.find.k = (T.find.k + step + T.find.hits.length) % T.find.hits.length;
    }
    var f = T.find;
    if (!f.hits.length) { T.count.textContent = "not found"; repaintText(); return; }
    T.count.textContent = (f.k + 1) + " of " + f.hits.length + (f.hits.length > 1 ? " (Enter: next)" : "");
    var h = f.hits[f.k];
    showText(h[0], h[1]);
  }
  function repaintText() {
    Object.keys(T.painted).forEach(function (k) { T.painted[k].remove(); });
    T.painted = {};
    paintText();
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
  var first = "overview";
  if (D.kind === "buffer-assignment") {  // a dump, not a module: its allocations and peak only
    dumpHeader();
    addTab("buffers", "Buffers", buildDump);
    first = "buffers";
  } else {
    header();
    addTab("overview", "Overview", buildOverview);
    addTab("graph", "Graph", buildGraph, true);
    addTab("profile", "Profile", buildProfile, true);
    addTab("timeline", "Timeline", buildTimeline, true);
    addTab("memory", "Memory", buildMemory, true);
    addTab("collectives", "Collectives", buildCollectives, true);
    addTab("cost", "Cost", buildCost, true);
    addTab("text", "Text", buildText, true);
    if (D.numerics) addTab("numerics", "Numerics", buildNumerics, true);  // numerics.js: a run on inputs
  }
  (function restore() {  // Note [Shareable links]
    var h = parseHash(location.hash), tab = tabs[h.tab] ? h.tab : first, inst = h.params.i || null;
    delete h.params.i;
    tabParams[tab] = h.params;
    if (h.bad.length) flash("Part of this link could not be read (" + h.bad.join("&") + "); it was ignored.");
    if (h.tab && !tabs[h.tab]) flash("This report has no “" + h.tab + "” tab; showing " + tabs[tab].button.textContent + ".");
    var at = inst ? instAt(inst) : null;
    if (inst && !at) { flash("This module has no instruction named “" + inst + "”; the link may belong to another report."); inst = null; }
    if (at && tab === "graph") focusInstruction(at[0], at[1]);
    else if (at && tab === "text") showText(at[0], at[1]);
    else { showTab(tab); if (inst) selectInstruction(inst); }
  })();
  // How long start-up took, for benchmarks/report_browser.py: reading the data, building the first tab.
  window.hloscopeStartup = {parse_ms: PARSED - STARTED, build_ms: performance.now() - PARSED};
  document.body.setAttribute("data-ready", "1");
  decodeInSlices();
