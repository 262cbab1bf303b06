/* hloscope report page, part 1 of 6: data, helpers, tables, tabs, header.
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 */
  var STARTED = performance.now();
  var D = JSON.parse(document.getElementById("hloscope-data").textContent);
  var PARSED = performance.now();
  // Note [Compact memory rows] (report/compact.py): long lists come as columns; the rest of the
  // page reads them as the analysis wrote them, one object per row.
  function unpackColumns(t) {
    if (!t || Array.isArray(t) || !t.columns) return t;
    var keys = t.columns, vals = t.values, n = keys.length ? vals[0].length : 0, out = new Array(n), ix = t.index;
    for (var i = 0; i < n; i++) {
      var o = {};
      if (ix) o[ix] = i;  // a column that only counted its rows
      for (var k = 0; k < keys.length; k++) o[keys[k]] = vals[k][i];
      out[i] = o;
    }
    return out;
  }
  // Note [Rows from columns]
  // A long list that comes in columns stays in columns: a table of it (table() below) sorts row
  // numbers by a key read from a column and makes an object only for each row it builds. At 10x
  // Llama the Collectives tab made an object of each of its 16,470 rows, twice, and its first
  // show waited 140 ms, most of it for those objects and their garbage. rows.row(i) is the
  // object unpackColumns would have made for row i; finish(o) adds what the tab derives.
  function columnRows(t, finish) {
    var keys = t.columns, vals = t.values, ix = t.index, col = {};
    keys.forEach(function (k, j) { col[k] = vals[j]; });
    var out = {length: keys.length ? vals[0].length : 0, made: 0, column: function (k) { return col[k] || null; },
      row: function (i) {
        var o = {};
        out.made++;
        if (ix) o[ix] = i;
        for (var k = 0; k < keys.length; k++) o[keys[k]] = vals[k][i];
        return finish ? finish(o) : o;
      }};
    return out;
  }
  // Unpacked when first read (the Memory tab), not at start-up: 230,000 steps at 10x Llama.
  var unpacked = {};
  function memoryRows(key) {
    var mem = D.memory && D.memory.data;
    if (!mem) return [];
    if (!unpacked[key]) { unpacked[key] = true; mem[key] = unpackColumns(mem[key]); }
    return mem[key] || [];
  }
  var SVGNS = "http://www.w3.org/2000/svg";
  var C = {};
  D.columns.forEach(function (c, i) { C[c] = i; });
  // Note [Lazy page data] (report/html.py): the long lists are blocks of their own, each parsed
  // when something first reads it; a computation's rows are one line of the rows block.
  function lazyProp(obj, key, load) {
    function own(v) { Object.defineProperty(obj, key, {value: v, writable: true, configurable: true, enumerable: true}); return v; }
    Object.defineProperty(obj, key, {configurable: true, enumerable: true, get: function () { return own(load()); }, set: own});
  }
  function block(id) { var e = document.getElementById(id); return e ? decodeSteps(decodeStrings(decodeEvents(JSON.parse(e.textContent)))) : null; }
  // A column of few distinct strings comes as them and each row's 0 (none) or 1 + an index.
  function decodeStrings(t) {
    if (!t || !t.columns || !Array.isArray(t.values)) return t;
    t.values.forEach(function (c, k) {
      if (!c || Array.isArray(c) || !c.strings) return;
      var s = c.strings, at = c.at, out = new Array(at.length);
      for (var i = 0; i < at.length; i++) out[i] = at[i] ? s[at[i] - 1] : null;
      t.values[k] = out;
    });
    return t;
  }
  // The buffers at the memory peak come in columns (Note [Page encoding]); read as objects.
  var peakMem = D.memory && D.memory.data;
  if (peakMem && peakMem.peak_buffers && peakMem.peak_buffers.columns) peakMem.peak_buffers = unpackColumns(decodeStrings(peakMem.peak_buffers));
  // The memory curve's columns come as differences (Note [Page encoding]); summed back in place.
  // An instruction column then holds row positions (rowName), noted in ordinals.
  function decodeSteps(t) {
    if (!t || !t.codec || typeof t.codec !== "object" || !t.columns) return t;
    t.ordinals = {};
    Object.keys(t.codec).forEach(function (key) {
      var xs = t.values[t.columns.indexOf(key)], total = 0;
      for (var i = 0; i < xs.length; i++) { total += xs[i]; xs[i] = total; }
      if (t.codec[key] === "row-deltas") t.ordinals[key] = true;
    });
    delete t.codec;
    return t;
  }
  // Note [Page encoding] (report/html.py): the timeline's intervals come as integer picoseconds
  // and differences; back to nanoseconds (k / 1000 is the very number Python rounded to).
  function decodeEvents(ev) {
    if (!ev || ev.codec !== "ps-deltas") return ev;
    ["ci", "ii", "start"].forEach(function (key) {
      var xs = ev[key], total = 0;
      for (var i = 0; i < xs.length; i++) { total += xs[i]; xs[i] = total; }
    });
    var st = ev.start, en = ev.end;
    for (var i = 0; i < st.length; i++) { en[i] = (st[i] + en[i]) / 1000; st[i] = st[i] / 1000; }
    delete ev.codec;
    return ev;
  }
  (D.lazy || []).forEach(function (l) {
    var d = D[l[0]] && D[l[0]].data;
    if (d) lazyProp(d, l[1], function () { return block(l[2]); });
  });
  var rowText = null, rowAt = null;
  function rowLine(ci) {  // computation ci's line of the rows block, parsed
    if (rowText === null) {
      var e = document.getElementById("hloscope-rows");
      rowText = e ? e.textContent : "";
      rowAt = [0];
      for (var at = rowText.indexOf("\n"); at >= 0; at = rowText.indexOf("\n", at + 1)) rowAt.push(at + 1);
      rowAt.push(rowText.length + 1);
    }
    return JSON.parse(rowText.slice(rowAt[ci], rowAt[ci + 1] - 1));
  }
  // Note [Compact instruction text] (report/compact.py): a row's text may come as [layout, rest]
  // around what the row already says, and its family as 0; both are put back here, and the
  // shape, opcode, op_name and source looked up (Note [Page encoding] in report/html.py),
  // before anything reads the row.
  function decodeRows(rows) {
    var fam = D.families || {}, shapes = D.shapes, opcodes = D.opcodes, texts = D.texts, strings = D.strings;
    var ct = C.text, cf = C.family, cn = C.name, cs = C.shape, co = C.opcode, cp = C.operands, on = C.op_name, cw = C.source;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (shapes) {
        r[cs] = shapes[r[cs]]; r[co] = opcodes[r[co]];
        if (typeof r[on] === "number") r[on] = r[on] ? strings[r[on] - 1] : null;
        if (typeof r[cw] === "number") r[cw] = r[cw] ? strings[r[cw] - 1] : null;
        if (typeof r[ct] === "number") r[ct] = texts[r[ct]];
      }
      if (r[cf] === 0) r[cf] = fam[r[co]];
    }
    for (i = 0; i < rows.length; i++) {
      var t = rows[i][ct];
      if (typeof t === "string") continue;
      r = rows[i];
      var ops = r[cp], names = new Array(ops.length);
      for (var k = 0; k < ops.length; k++) names[k] = rows[ops[k]][cn];
      r[ct] = r[cn] + " = " + r[cs] + t[0] + " " + r[co] + "(" + names.join(", ") + t[1];
    }
    return rows;
  }
  var ROW_KEYS = D.row_keys || [], undecoded = 0;
  var CompRows = {};  // each computation's rows and per-row figures: decoded on first read
  ROW_KEYS.forEach(function (key) {
    Object.defineProperty(CompRows, key, {get: function () { decodeComp(this); return this[key]; }});
  });
  function decodeComp(c) {
    var got = rowLine(c.index);
    ROW_KEYS.forEach(function (key, k) {
      Object.defineProperty(c, key, {value: k === 0 ? decodeRows(got[0]) : (got[k] == null ? undefined : got[k]), writable: true, configurable: true, enumerable: true});
    });
    undecoded--;
  }
  var heads = D.computations, headKeys = heads.columns;  // the heads may come as columns (Note [Page encoding])
  if (headKeys) heads = heads.values.length ? heads.values[0].map(function (_, ci) { return ci; }) : [];
  var comps = D.row_keys ? heads.map(function (h, ci) {
    var c = Object.create(CompRows);
    if (headKeys) for (var j = 0; j < headKeys.length; j++) c[headKeys[j]] = D.computations.values[j][ci];
    else for (var k in h) c[k] = h[k];
    c.index = ci;
    undecoded++;
    return c;
  }) : D.computations.map(function (c) { decodeRows(c.instructions); return c; });
  D.computations = comps;
  // Note [Work in slices]
  // ---------------------
  // What the page does on its own (the rows nobody has read yet, the graph's search index) runs
  // in slices of SLICE_MS, each its own task, so a click waits at most one slice: at 10x Llama
  // the search index alone was a 240 ms task, and a click landing in it waited that long
  // before its handler ran. step(until) works until performance.now() passes until and says
  // whether it is done; one computation's rows (23,000 rows, about 25 ms at 10x) are the
  // largest piece that cannot be cut.
  var SLICE_MS = 8;
  function inSlices(step) {
    function run() { if (!step(performance.now() + SLICE_MS)) setTimeout(run, 0); }
    setTimeout(run, 0);
  }
  // While nobody clicks, the rest of the rows are parsed, so what reads every computation
  // (search, the callers of a computation) finds them ready.
  function decodeInSlices() {
    var next = 0, nextBlock = 0, lazy = D.lazy || [];
    inSlices(function (until) {
      while (next < comps.length && performance.now() < until) {
        if (!Object.prototype.hasOwnProperty.call(comps[next], "instructions")) decodeComp(comps[next]);
        next++;
      }
      // Then the name index, in the same slices (indexed only grows: nameIndex() may have
      // finished it meanwhile).
      while (next >= comps.length && indexed < comps.length && performance.now() < until) indexComp(indexed++);
      // Then the long lists' blocks, one a slice (the timeline's intervals, the largest, about
      // 30 ms at 10x Llama): a tab shown later finds them parsed.
      var done = next >= comps.length && indexed >= comps.length;
      if (done && nextBlock < lazy.length && performance.now() < until) {
        var l = lazy[nextBlock++], d = D[l[0]] && D[l[0]].data;
        if (d) void d[l[1]];  // the getter parses it (lazyProp), once
      }
      return done && nextBlock >= lazy.length;
    });
  }
  // How many rows a computation has, without decoding them (its head says).
  function rowCount(c) { return c.count != null ? c.count : c.instructions.length; }
  // The data as the page reads it (rows decoded), for tests and for anyone at the console.
  window.hloscopeData = D;
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

  // op_name parts: "jit(f)/layer_3/attention/dot" -> [jit(f), layer_3, attention, dot]. A "/"
  // inside parentheses is no boundary: XLA writes a fusion of several ops as
  // "jit(f)/(transpose(jvp(GPT))/block1/up/dot_general:...)".
  function opNameParts(o) {
    var out = [], depth = 0, at = 0;
    for (var k = 0; k < o.length; k++) {
      var ch = o.charCodeAt(k);
      if (ch === 40) depth++; else if (ch === 41) depth = Math.max(0, depth - 1);
      else if (ch === 47 && depth === 0) { out.push(o.slice(at, k)); at = k + 1; }
    }
    out.push(o.slice(at));
    return out;
  }

  // ---- instruction lookup ----------------------------------------------------------------------
  // name -> ci * ROW_SPAN + ii, built on first use. A Map, not an object: an object with
  // 318,000 string keys (the 10x Llama copy) goes to dictionary mode and took 175 ms to fill, a
  // Map of numbers takes a fraction of it and leaves no [ci, ii] pair per row to collect.
  // The background slices (decodeInSlices) fill it computation by computation once the rows
  // are read, so the first search or name lookup does not pay for it (about 280 ms at 10x).
  var byName = new Map(), indexed = 0, ROW_SPAN = 1 << 24;
  function indexComp(ci) {
    var rows = comps[ci].instructions, cn = C.name;
    for (var ii = 0; ii < rows.length; ii++) if (!byName.has(rows[ii][cn])) byName.set(rows[ii][cn], ci * ROW_SPAN + ii);
  }
  function nameIndex() {
    while (indexed < comps.length) indexComp(indexed++);
    return byName;
  }
  function instAt(name) {  // [computation index, row index] of an instruction, or null
    var k = nameIndex().get(name);
    return k == null ? null : [Math.floor(k / ROW_SPAN), k % ROW_SPAN];
  }
  // The name of row k of all computations' rows in order (Note [Page encoding]): decodes only
  // that row's computation.
  var rowStarts = null;
  function rowName(k) {
    if (k == null || k < 0) return null;
    if (!rowStarts) {
      rowStarts = [0];
      comps.forEach(function (c) { rowStarts.push(rowStarts[rowStarts.length - 1] + rowCount(c)); });
    }
    var lo = 0, hi = comps.length - 1;  // the last computation starting at or before k
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (rowStarts[mid] <= k) lo = mid; else hi = mid - 1; }
    var r = comps[lo].instructions[k - rowStarts[lo]];
    return r ? r[C.name] : null;
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
  // cols: [{key, label, num, fmt(row) -> string|Node, val(row) -> sortable, at(i) -> sortable}];
  // rows: objects, or columnRows (Note [Rows from columns]), which a column sorts by at(i), else
  // by its key's column, else by val of row(i).
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
    var lazy = !Array.isArray(rows), n = rows.length;
    function rowAt(i) { return lazy ? rows.row(i) : rows[i]; }
    function keysOf(c) {  // each row's sort key, read once (not in every comparison)
      var get = c.val || function (r) { return r[c.key]; }, column = lazy && !c.val ? rows.column(c.key) : null, ks = new Array(n);
      for (var i = 0; i < n; i++) ks[i] = c.at && lazy ? c.at(i) : column ? column[i] : get(rowAt(i));
      return ks;
    }
    function draw() {
      var order = new Array(n);
      for (var i = 0; i < n; i++) order[i] = i;
      if (state.col >= 0) {
        // The same comparisons on the same keys as sorting the rows themselves, so the same order.
        var ks = keysOf(cols[state.col]);
        order.sort(function (a, b) {
          var x = ks[a], y = ks[b];
          if (x == null) return 1; if (y == null) return -1;
          return (x < y ? -1 : x > y ? 1 : 0) * state.dir;
        });
      }
      Array.prototype.forEach.call(hr.children, function (th, i) {
        th.classList.remove("sorted-asc", "sorted-desc");
        if (i === state.col) th.classList.add(state.dir > 0 ? "sorted-asc" : "sorted-desc");
      });
      tbody.textContent = "";
      // Only the first rows are built (a big module's 500-row tables took most of a second);
      // the last row shows more on a click.
      var limit = state.limit || opts.limit || 150;
      order.slice(0, limit).map(rowAt).forEach(function (r) {
        var tr = el("tr");
        cols.forEach(function (c) {
          var v = c.fmt ? c.fmt(r) : r[c.key];
          var td = el("td", {cls: (c.num ? "num" : "") + (c.cls ? " " + c.cls : "")});
          if (v instanceof Node) td.appendChild(v);
          else if (c.cls && / ?wrap\b/.test(c.cls) && v != null) td.appendChild(breakable(v));
          else td.textContent = v == null ? "" : String(v);
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
      if (n > limit) tbody.appendChild(el("tr", {cls: "more"}, el("td", {colspan: cols.length},
        el("span", {cls: "link", text: "… " + (n - limit) + " more rows: show " + Math.min(500, n - limit) + " more",
          on: {click: function () { state.limit = limit + 500; draw(); }}}))));
      // for tests: the rows the table has and the row objects made so far
      t.setAttribute("data-rows", n); t.setAttribute("data-made", lazy ? rows.made : n);
    }
    draw();
    return el("div", {cls: "scroll"}, t);
  }
  function instLink(name) {
    return el("span", {cls: "link mono inst", text: name, on: {click: function () { jumpTo(name); }}});
  }

  // ---- header and tabs -------------------------------------------------------------------------
  // Note [Shareable links]: the URL hash holds the tab, the selected instruction and the state
  // of the tab's view ("#memory&space=1&t=33", "#graph&i=fusion.9"), so a link to the page
  // reopens the same view. Each tab keeps its own parameters; a malformed or unknown value
  // never stops the page: it is ignored and the page says so.
  var tabs = {}, currentTab = null, currentInst = null, tabParams = {};
  function setHash() {
    var h = "#" + currentTab + (currentInst ? "&i=" + encodeURIComponent(currentInst) : "");
    var ps = tabParams[currentTab] || {};
    Object.keys(ps).forEach(function (k) { if (ps[k] != null && ps[k] !== "") h += "&" + k + "=" + encodeURIComponent(ps[k]); });
    if (location.hash !== h) history.replaceState(null, "", h);
  }
  function setParam(tab, key, value) {
    (tabParams[tab] = tabParams[tab] || {})[key] = value;
    if (tab === currentTab) setHash();
  }
  function param(tab, key) { var ps = tabParams[tab]; return ps ? ps[key] : undefined; }
  function decodeSafe(s) {
    try { return decodeURIComponent(s); } catch (e) { return null; }
  }
  function parseHash(hash) {  // "#graph&i=x&t=3" -> {tab, params}, undecodable values dropped
    var parts = hash.replace(/^#/, "").split("&"), out = {tab: decodeSafe(parts[0]) || "", params: {}, bad: []};
    parts.slice(1).forEach(function (kv) {
      var at = kv.indexOf("="), k = at < 0 ? kv : kv.slice(0, at), v = at < 0 ? "" : decodeSafe(kv.slice(at + 1));
      if (v == null) out.bad.push(kv); else out.params[k] = v;
    });
    return out;
  }
  // A short message at the top of the page (a link that names nothing, a search without hits).
  function flash(text) {
    var box = document.getElementById("flash");
    if (!box) { box = el("div", {id: "flash", cls: "flash", role: "status"}); document.querySelector("main").prepend(box); }
    box.textContent = "";
    box.appendChild(el("span", {text: text}));
    box.appendChild(el("button", {cls: "btn small", text: "×", title: "dismiss", on: {click: function () { box.remove(); }}}));
  }
  function showTab(name) {
    Object.keys(tabs).forEach(function (k) {
      tabs[k].section.classList.toggle("active", k === name);
      tabs[k].button.classList.toggle("active", k === name);
    });
    if (currentTab !== name) { currentTab = name; currentInst = null; }
    if (tabs[name].onshow) { var f = tabs[name].onshow; tabs[name].onshow = null; f(); }
    if (tabs[name].onactive) tabs[name].onactive();
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
  // Long op_names and paths break after "/" (and ":", "," or a space), never inside a word: each
  // piece between those is one unbreakable run (a hyphen or "_" inside it is no break).
  function breakable(text) {
    var f = document.createDocumentFragment(), parts = String(text == null ? "" : text).split(/(?<=[\/:, ])/);
    if (parts.length === 1) { f.appendChild(document.createTextNode(parts[0])); return f; }
    parts.forEach(function (p, i) {
      if (i) f.appendChild(document.createElement("wbr"));
      // a piece longer than a column could hold may still break inside (no overflow)
      f.appendChild(p.length > 36 ? document.createTextNode(p) : el("span", {cls: "nb", text: p}));
    });
    return f;
  }
  function breakableSpan(text, cls) { var s = el("span", cls ? {cls: cls} : null); s.appendChild(breakable(text)); return s; }
  // Text on a coloured box: dark ink on light fills, white on dark ones (WCAG relative luminance).
  function luminance(hex) {
    var m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
    if (!m) return 1;
    return [m[1], m[2], m[3]].reduce(function (a, h, i) {
      var c = parseInt(h, 16) / 255;
      c = c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
      return a + c * [0.2126, 0.7152, 0.0722][i];
    }, 0);
  }
  // Black or white, whichever contrasts more: at the crossover (luminance 0.179) both reach
  // 4.58:1, so every fill keeps WCAG's 4.5:1 (a greyer ink would not).
  function inkOn(fill) { return luminance(fill) > 0.179 ? ["#000000", "#000000"] : ["#ffffff", "#ffffff"]; }
  // A theme colour, read once (getComputedStyle forces a style pass each call): again only when
  // the browser switches between light and dark.
  var cssCache = {};
  function cssVar(name) {
    if (!(name in cssCache)) cssCache[name] = getComputedStyle(document.body).getPropertyValue(name).trim();
    return cssCache[name];
  }
  if (window.matchMedia) matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () { cssCache = {}; });

  // ---- estimated time per instruction ----------------------------------------------------------
  var TIM = section("timing").data;
  function secondsOf(name) {  // through the name index: no second table over every row
    var at = TIM ? instAt(name) : null, s = at ? comps[at[0]].seconds : null;
    return s && s[at[1]] != null ? s[at[1]] : null;
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
    var at = instAt(name);
    if (!at) return -1;
    var r = comps[at[0]].instructions[at[1]], m = /\bbody=%?([\w.\-]+)/.exec(r[C.text]);
    return m && compIndex[m[1]] != null ? compIndex[m[1]] : (r[C.called].length ? r[C.called][r[C.called].length - 1] : -1);
  }
  function compLink(ci, label) {
    var a = el("span", {cls: "link mono", on: {click: function () { showComputation(ci); }}});
    a.appendChild(breakable(label || comps[ci].name));
    return a;
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
    var mem = section("memory").data, col = section("collectives").data, grid = gridOf();
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
    // hloscope's live-range peak under its own name, XLA's peak_memory_in_bytes beside it
    // (Note [peak_memory_in_bytes] in analysis/memory/xla_peak.py).
    if (mem) fig(fmtBytes(mem.peak_bytes), "live-range peak", "at schedule step " + mem.peak_time +
      (mem.xla_peak_memory ? "; " + mem.xla_peak_memory.label + ": " + (mem.xla_peak_memory.bytes == null ? "not derivable" : fmtBytes(mem.xla_peak_memory.bytes)) : ""), "fig-peak");
    if (sum) fig(fmtBytes(sum.parameter_bytes), "parameters");
    // The analysis's total (payload × runs, summed), not a sum over the collectives block,
    // which start-up would have to parse (Note [Joined in Python] in report/joined.py).
    if (col && col.totals && col.totals.instructions) fig(fmtBytes(col.totals.payload_bytes), "collective payload per step", null, "fig-collectives");
  }
