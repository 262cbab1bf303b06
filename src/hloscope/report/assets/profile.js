/* hloscope report page: the op profile (XProf's, estimated) and what to fix first.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 * Every figure here is analysis/profile.py's (OpProfile.to_json), as `hloscope profile` prints it.
 */
  var PROF = section("profile").data;
  var BOUND_COLOUR = {compute: "#3b6fd8", memory: "#2f9e8f", communication: "#d6336c", launch: "#e59f2b", control: "#8a6fd1"};
  function boundChip(b) {
    var c = el("span", {cls: "bound", text: b || ""});
    if (BOUND_COLOUR[b]) c.style.borderColor = BOUND_COLOUR[b];
    return c;
  }
  function utilBar(x, colour) {  // a fraction of a peak, as a bar and a percentage
    if (x == null) return el("span", {cls: "muted", text: "–"});
    var b = el("span", {cls: "share"}), bar = el("span", {cls: "bar", style: "width:56px"});
    bar.appendChild(el("i", {style: "width:" + Math.min(100, 100 * x).toFixed(1) + "%;background:" + colour}));
    b.appendChild(bar); b.appendChild(document.createTextNode(" " + fmtPct(x)));
    return b;
  }
  function rate(x, unit) { return x == null ? "–" : x < 1000 ? x.toFixed(0) + " " + unit : fmtNum(x) + unit; }
  function byteRate(x) { return x == null ? "–" : fmtBytes(x) + "/s"; }
  function instChips(names, max) {
    var box = el("span", {cls: "chips"});
    names.slice(0, max || 8).forEach(function (n) {
      box.appendChild(el("span", {cls: "chip link mono", text: n, title: "show in the graph",
        on: {click: function () { var at = instAt(n); if (at) focusInstruction(at[0], at[1]); }}}));
    });
    if (names.length > (max || 8)) box.appendChild(el("span", {cls: "muted", text: " +" + (names.length - (max || 8)) + " more"}));
    return box;
  }

  // The short list of what to fix first, in words, each with the operations it is about.
  function fixFirst() {
    var card = el("div", {cls: "card", id: "fix-first"}, el("h2", {text: "What to fix first"}));
    if (!PROF) { card.appendChild(statusNote(section("profile"), "The op profile")); return card; }
    if (!PROF.advice.length) { card.appendChild(el("p", {cls: "note", text: "Nothing stands out: no memory-bound, launch-bound or exposed communication time above 1% of the step."})); return card; }
    var ol = el("ol", {cls: "advice"});
    PROF.advice.forEach(function (a) {
      var li = el("li", {"data-kind": a.kind},
        el("div", {cls: "advice-title"}, el("b", {text: a.title}), " ", shareBar(a.share)),
        el("div", {cls: "advice-words", text: a.words}));
      var acts = el("div", {cls: "advice-ops"}, instChips(a.instructions, 6));
      acts.appendChild(el("button", {cls: "btn small", text: "show " + (a.instructions.length > 1 ? "these " + a.instructions.length : "it") + " in the graph",
        on: {click: function () { showInGraph(a.instructions, a.title); }}}));
      li.appendChild(acts);
      ol.appendChild(li);
    });
    card.appendChild(ol);
    return card;
  }

  // Time by category on the overview: one row per category, with what bounds it.
  function categoryCard() {
    var card = el("div", {cls: "card", id: "op-profile"}, el("h2", {text: "Time by category (the op profile)"}));
    if (!PROF) { card.appendChild(statusNote(section("profile"), "The op profile")); return card; }
    card.appendChild(el("p", {cls: "muted"}, "Shares are of the operations' summed time (" + fmtTime(PROF.op_seconds) + "; the step is " + fmtTime(PROF.step_seconds) + "). ",
      el("span", {cls: "link", text: "Open the Profile tab", on: {click: function () { showTab("profile"); }}}), " for opcodes, FLOP/s and bandwidth."));
    card.appendChild(table([
      {key: "key", label: "category"},
      {key: "seconds", label: "est. time", num: true, fmt: function (r) { return fmtTime(r.seconds); }},
      {key: "share", label: "share", fmt: function (r) { return shareBar(r.share); }, val: function (r) { return r.share; }},
      {key: "instructions", label: "operations", num: true},
      {key: "bound", label: "bound by", fmt: function (r) { return boundChip(r.bound); }}], PROF.categories, {sortCol: 1}));
    return card;
  }

  // ---- the Profile tab: categories, opened into opcodes and their slowest instructions -------
  function buildProfile(s) {
    var card = el("div", {cls: "card"}, el("h2", {text: "Op profile"}));
    s.appendChild(card);
    if (!PROF) { card.appendChild(statusNote(section("profile"), "The op profile")); return; }
    card.appendChild(el("p", {cls: "muted", text: "Estimated on " + PROF.hardware + ": step " + fmtTime(PROF.step_seconds) + ", operations " + fmtTime(PROF.op_seconds) +
      " in all (shares are of this), exposed communication " + fmtTime(PROF.exposed_communication_seconds) + ". Peaks: " + fmtNum(PROF.peak_flop_rate) + "FLOP/s (each operation is held to its own type's peak), " +
      fmtBytes(PROF.memory_bandwidth) + "/s of memory bandwidth. Click ▸ to open a row; an instruction's name shows it in the graph."}));
    var bar = el("div", {cls: "toolbar"});
    var views = [["category", "by category"], ["opcode", "by opcode"], ["op_name", "by op_name"]], current = param("profile", "by") || "category";
    var box = el("div");
    views.forEach(function (v) {
      bar.appendChild(el("button", {cls: "btn" + (v[0] === current ? " active" : ""), "data-view": v[0], text: v[1], on: {click: function (ev) {
        Array.prototype.forEach.call(bar.children, function (b) { b.classList.toggle("active", b === ev.target); });
        setParam("profile", "by", v[0]); draw(v[0]);
      }}}));
    });
    card.appendChild(bar); card.appendChild(box);
    function draw(view) {
      box.textContent = "";
      if (view === "op_name") { box.appendChild(opNameProfile()); return; }
      box.appendChild(profileTree(view));
    }
    draw(current);
    s.appendChild(fixFirst());
  }
  function profileTree(view) {
    var cols = ["", "est. time", "share", "ops", "FLOP/s", "of peak FLOP/s", "bandwidth", "of peak bandwidth", "bound by"];
    var hr = el("tr");
    cols.forEach(function (c, i) { hr.appendChild(el("th", {cls: i && i < 8 && i !== 2 && i !== 5 && i !== 7 ? "num" : "", text: i ? c : (view === "category" ? "category / opcode / instruction" : "opcode / instruction")})); });
    var tb = el("tbody"), t = el("table", {cls: "tree", id: "profile-table"}, el("thead", null, hr), tb);
    function row(depth, label, r, kids) {
      var tr = el("tr", {"data-depth": depth}), tog = el("span", {cls: "tog" + (kids ? " link" : ""), text: kids ? "▸ " : "  "});
      var name = el("td", {cls: "mono wrap", style: "padding-left:" + (8 + depth * 16) + "px"}, tog);
      name.appendChild(label instanceof Node ? label : breakable(label));
      tr.appendChild(name);
      tr.appendChild(el("td", {cls: "num", text: fmtTime(r.seconds)}));
      tr.appendChild(el("td", null, shareBar(r.share)));
      tr.appendChild(el("td", {cls: "num", text: r.instructions == null ? "" : String(r.instructions)}));
      tr.appendChild(el("td", {cls: "num", text: rate(r.flop_rate, "FLOP/s")}));
      tr.appendChild(el("td", null, utilBar(r.flop_utilization, "#3b6fd8")));
      tr.appendChild(el("td", {cls: "num", text: byteRate(r.bandwidth)}));
      tr.appendChild(el("td", null, utilBar(r.bandwidth_utilization, "#2f9e8f")));
      tr.appendChild(el("td", null, boundChip(r.bound)));
      var open = null;
      if (kids) tog.addEventListener("click", function () {
        if (open) { open.forEach(function (x) { x.remove(); }); open = null; tog.textContent = "▸ "; return; }
        open = []; tog.textContent = "▾ ";
        var anchor = tr;
        kids().forEach(function (x) { anchor.after(x); anchor = x; open.push(x); });
      });
      return tr;
    }
    function instRows(names, depth) {
      return names.map(function (n) {
        var at = instAt(n), c = at ? comps[at[0]] : null, secs = secondsOf(n);
        var r = {seconds: secs, share: PROF.op_seconds ? secs / PROF.op_seconds : null, instructions: null,
          flop_rate: null, bandwidth: null, flop_utilization: c && c.flop_util ? c.flop_util[at[1]] : null,
          band_utilization: null, bandwidth_utilization: c && c.band_util ? c.band_util[at[1]] : null, bound: boundOf(n)};
        var label = el("span", {cls: "link mono", text: n, title: "show in the graph", on: {click: function () { if (at) focusInstruction(at[0], at[1]); }}});
        return row(depth, label, r, null);
      });
    }
    function opRows(cat, depth) {
      return PROF.opcodes.filter(function (o) { return cat == null || o.category === cat; }).map(function (o) {
        return row(depth, o.key, o, function () { return instRows(o.top, depth + 1); });
      });
    }
    var rows = view === "category" ? PROF.categories.map(function (c) { return row(0, c.key, c, function () { return opRows(c.key, 1); }); }) : opRows(null, 0);
    rows.forEach(function (x) { tb.appendChild(x); });
    return el("div", {cls: "scroll tall"}, t);
  }
  var boundByName = null;
  function boundOf(name) {
    if (!boundByName) { boundByName = {}; ((TIM && TIM.per_instruction) || []).forEach(function (r) { boundByName[r.name] = r.bound; }); }
    return boundByName[name] || "";
  }

  // XLA's op profile by op_name: time rolled up by op_name prefix (jit(f)/layer_3/attention/dot).
  function opNameProfile() {
    var card = el("div", {id: "op-name-profile"});
    var root = {name: "", seconds: 0, count: 0, kids: {}}, named = 0;
    comps.forEach(function (c) {
      if (!c.seconds) return;
      c.instructions.forEach(function (r, i) {
        var t = c.seconds[i];
        if (!t || CONTROL[r[C.opcode]]) return;
        if (r[C.op_name]) named++;
        var path = r[C.op_name] ? opNameParts(String(r[C.op_name])) : ["(no op_name)"], node = root;
        root.seconds += t; root.count++;
        path.forEach(function (p) {
          node = node.kids[p] || (node.kids[p] = {name: p, seconds: 0, count: 0, kids: {}});
          node.seconds += t; node.count++;
        });
      });
    });
    var total = TIM.total_seconds || root.seconds || 1;
    if (!named) card.appendChild(el("p", {cls: "note", text: "No instruction of this module has an op_name (XLA keeps them only when the program was traced with metadata), so this view has one row; the category and opcode views do not need them."}));
    card.appendChild(el("p", {cls: "muted", text: "Operations' times (loop trips included) summed by each prefix of their op_name; click ▸ to open a level. Shares are of the step time (" + fmtTime(TIM.total_seconds) + "), and overlapping operations can make them add to more."}));
    var tb = el("tbody"), t = el("table", {cls: "tree"}, el("thead", null, el("tr", null, el("th", {text: "op_name"}), el("th", {cls: "num", text: "est. time"}), el("th", {text: "share"}), el("th", {cls: "num", text: "operations"}))), tb);
    function kidsOf(n) { return Object.keys(n.kids).map(function (k) { return n.kids[k]; }).sort(function (a, b) { return b.seconds - a.seconds; }); }
    function rowsOf(n, depth, after) {
      var out = [];
      kidsOf(n).slice(0, 50).forEach(function (k) {
        var has = Object.keys(k.kids).length > 0, tr = el("tr", {"data-depth": depth});
        var tog = el("span", {cls: "tog", text: has ? "▸ " : "  "});
        var nameCell = el("td", {cls: "mono wrap", style: "padding-left:" + (8 + depth * 16) + "px"}, tog);
        nameCell.appendChild(breakable(k.name));
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
    card.appendChild(el("div", {cls: "scroll tall"}, t));
    return card;
  }
