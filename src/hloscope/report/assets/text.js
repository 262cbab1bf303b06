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
  var first = "overview";
  if (D.kind === "buffer-assignment") {  // a dump, not a module: its allocations and peak only
    dumpHeader();
    addTab("buffers", "Buffers", buildDump);
    first = "buffers";
  } else {
    header();
    addTab("overview", "Overview", buildOverview);
    addTab("cost", "Cost", buildCost, true);
    addTab("memory", "Memory", buildMemory, true);
    addTab("collectives", "Collectives", buildCollectives, true);
    addTab("graph", "Graph", buildGraph, true);
    addTab("text", "Text", buildText, true);
    if (D.numerics) addTab("numerics", "Numerics", buildNumerics, true);  // numerics.js: a run on inputs
  }
  (function restore() {  // Note [Shareable links]
    var h = location.hash.slice(1).split("&"), tab = tabs[h[0]] ? h[0] : first, inst = null;
    h.slice(1).forEach(function (kv) { if (kv.slice(0, 2) === "i=") inst = decodeURIComponent(kv.slice(2)); });
    var at = inst ? nameIndex()[inst] : null;
    if (at && tab === "graph") focusInstruction(at[0], at[1]);
    else if (at && tab === "text") showText(at[0], at[1]);
    else { showTab(tab); if (inst) selectInstruction(inst); }
  })();
  document.body.setAttribute("data-ready", "1");
