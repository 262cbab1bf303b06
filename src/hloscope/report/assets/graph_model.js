/* hloscope report page: the whole-program graph's model (what is grouped in what).
 *
 * report/html.py inlines the parts in order inside one function scope (PARTS there), so they
 * share their names; every string from the module (names, op_name, source, text) comes from an
 * untrusted file, so the DOM is built with textContent and attributes only, never markup.
 *
 * Note [Program tree]
 * -------------------
 * The Graph tab shows the whole module as one tree of boxes, as Model Explorer shows a model:
 *
 *   entry computation (the root, always open)
 *     op_name namespace          jit(f)/layer_3/attention, one level at a time, or where a
 *       ...                      computation has no op_names, automatic groups: the
 *     instruction                schedule cut after each dot, convolution, collective or
 *     while / call / fusion ...  custom call, and those segments cut again into blocks at
 *       body: computation        a repeating anchor (a layer's first matmul) or evenly
 *         ...                    (kind "auto")
 *
 * Nodes are "instance" (a computation where a call runs it; the root is the entry's),
 * "ns" (a namespace), "auto" (an automatic group), "op" (an instruction) and "call" (an
 * instruction that opens into the computations it runs: while, call, conditional, fusion,
 * async work). A call with one computation holds its instructions itself; a while holds a
 * body and a condition instance. Children are made when a node is first opened, so a closed
 * 30,000-instruction module costs one node per top-level group.
 *
 * Edges are drawn between the children of each open node: an operand edge between two
 * instructions of one instance joins the two children that hold them (Model Explorer's edges
 * between layers). They are computed once per node; what is open below only changes where
 * they end (on a box instead of a node).
 */
  var GM = {byId: {}, root: null, grouping: "auto", seq: 0};
  var OPENABLE = {"while": 1, "call": 1, "conditional": 1, "fusion": 1, "async-start": 1};
  var ANCHOR_FAMILIES = {"linear algebra": 1, "collective": 1, "custom": 1, "control flow": 1};
  var SMALL_COMPUTATION = 40, MAX_CHILDREN = 80, SEGMENT_MAX = 48;

  function gmNode(kind, parent, props) {
    var n = {id: null, kind: kind, parent: parent, kids: null, expanded: false, dirty: true, label: "", sub: ""};
    for (var k in props) n[k] = props[k];
    n.id = (parent ? parent.id + "/" : "") + (props.key != null ? props.key : kind + (GM.seq++));
    GM.byId[n.id] = n;
    return n;
  }
  // The instance (computation where it runs) a node belongs to: its own for an instance-like node.
  function instanceOf(n) { while (n && !n.inst) n = n.parent; return n; }
  function isOpen(n) { return n.expanded && (n.kind !== "op"); }
  function openable(r) { return OPENABLE[r[C.opcode]] && r[C.called].some(function (c) { return c >= 0; }); }

  // ---- building ------------------------------------------------------------------------------
  function buildProgram(grouping) {
    GM.byId = {}; GM.seq = 0; GM.grouping = grouping;
    var entry = comps.findIndex(function (c) { return c.is_entry; });
    GM.root = gmNode("instance", null, {key: "E", ci: entry, inst: true, label: "ENTRY " + comps[entry].name, expanded: true});
    GM.root.leafOf = {};
    return GM.root;
  }
  // Children of a node, made on first use.
  function kidsOf(n) {
    if (n.kids) return n.kids;
    if (n.kind === "instance") groupInstance(n);
    else if (n.kind === "call") {
      var r = comps[n.ci].instructions[n.ii], called = r[C.called].filter(function (c) { return c >= 0; });
      if (called.length === 1) { n.inst = true; n.cci = called[0]; n.leafOf = {}; groupInstance(n); }
      else {
        var roles = roleNames(r, called);
        n.kids = called.map(function (c, k) {
          var inst = gmNode("instance", n, {key: "c" + k, ci: c, inst: true, label: roles[k] + ": " + comps[c].name});
          inst.leafOf = {};
          return inst;
        });
      }
    }
    return n.kids || [];
  }
  function roleNames(r, called) {  // "body"/"condition" for a while, "branch k" for a conditional
    var t = r[C.text];
    return called.map(function (c, k) {
      var nm = comps[c].name;
      if (r[C.opcode] === "while") return t.indexOf("body=" + nm) >= 0 || t.indexOf("body=%" + nm) >= 0 ? "body" : "condition";
      if (r[C.opcode] === "conditional") return "branch " + k;
      return "calls";
    });
  }
  function compOf(inst) { return inst.cci != null ? inst.cci : inst.ci; }
  function leafNode(owner, inst, ii) {
    var ci = compOf(inst), r = comps[ci].instructions[ii];
    var n = gmNode(openable(r) ? "call" : "op", owner, {key: "i" + ii, ci: ci, ii: ii});
    inst.leafOf[ii] = n;
    return n;
  }

  // A computation's instructions, grouped (Note [Program tree]).
  function groupInstance(inst) {
    var ci = compOf(inst), rows = comps[ci].instructions, all = rows.map(function (r, i) { return i; });
    var named = 0;
    rows.forEach(function (r) { if (r[C.op_name]) named++; });
    if (rows.length <= SMALL_COMPUTATION || GM.grouping === "none") inst.kids = all.map(function (ii) { return leafNode(inst, inst, ii); });
    else if (GM.grouping === "kind") kindGroups(inst, rows);
    else if (GM.grouping !== "auto-only" && named >= 0.15 * rows.length) namespaceGroups(inst, rows);
    else autoGroups(inst, inst, all, 0);
    tidy(inst, inst);
  }
  // By kind of op: one group per op-profile category (matmul, fusion kinds, collectives, data
  // movement...; the opcode family where the estimate gave none), in schedule order inside.
  function kindGroups(inst, rows) {
    var ci = compOf(inst), cats = comps[ci].category, by = {}, order = [];
    rows.forEach(function (r, ii) {
      var k = r[C.opcode] === "parameter" ? "parameters" : cats && cats[ii] >= 0 && CATS[cats[ii]] ? CATS[cats[ii]] : r[C.family];
      if (!by[k]) { by[k] = []; order.push(k); }
      by[k].push(ii);
    });
    inst.kids = order.map(function (k) {
      var members = by[k];
      if (members.length === 1) return leafNode(inst, inst, members[0]);
      var g = gmNode("auto", inst, {key: "k:" + k, label: k, first: members[0], members: members, sub: members.length + " instructions"});
      g.build = function () { autoGroups(g, inst, members, 1, true); };
      return g;
    });
  }
  // One op_name part as a label: whitespace collapsed ("while[ body_nconsts=3\n  ...]" is one line).
  function partLabel(p) { return p.replace(/\s+/g, " ").replace(/\[ /g, "[").replace(/ \]/g, "]"); }

  // op_name namespaces: a trie of op_name prefixes without the prefix every instruction shares.
  // An instruction without op_name (XLA's get-tuple-elements, copies, loops) joins the namespace
  // its users share, else its operands'; parameters stay apart.
  function namespaceGroups(inst, rows) {
    var paths = rows.map(function (r) { if (!r[C.op_name]) return null; var p = opNameParts(String(r[C.op_name])); p.pop(); return p; });
    var users = usersOf(compOf(inst));
    function prefix(ps) {
      var out = null;
      ps.forEach(function (p) {
        if (out == null) { out = p.slice(); return; }
        var k = 0;
        while (k < out.length && k < p.length && out[k] === p[k]) k++;
        out.length = k;
      });
      return out;
    }
    for (var i = rows.length - 1; i >= 0; i--) {
      if (paths[i] || rows[i][C.opcode] === "parameter" || !users[i].length) continue;
      var up = users[i].map(function (u) { return paths[u]; });
      if (up.every(Boolean)) paths[i] = prefix(up);
    }
    rows.forEach(function (r, ii) {
      if (paths[ii] || r[C.opcode] === "parameter") return;
      var ins = r[C.operands].filter(function (o) { return o >= 0 && paths[o]; }).map(function (o) { return paths[o]; });
      if (ins.length) paths[ii] = prefix(ins);
    });
    // The prefix most instructions share ("jit(f)") is dropped from those that have it; a few
    // without it ("reduce_sum" alone) do not keep it on all the others.
    var nonEmpty = paths.filter(function (p) { return p && p.length; }), common = prefix(nonEmpty) || [];
    if (!common.length && nonEmpty.length) {
      var firsts = {};
      nonEmpty.forEach(function (p) { firsts[p[0]] = (firsts[p[0]] || 0) + 1; });
      var top = Object.keys(firsts).sort(function (a, b) { return firsts[b] - firsts[a]; })[0];
      if (firsts[top] >= 0.8 * nonEmpty.length) common = prefix(nonEmpty.filter(function (p) { return p[0] === top; }));
    }
    function starts(p) { for (var k = 0; k < common.length; k++) if (p[k] !== common[k]) return false; return true; }
    var trie = {name: "", kids: {}, order: [], leaves: []}, params = [];
    rows.forEach(function (r, ii) {
      var p = paths[ii];
      if (r[C.opcode] === "parameter") { params.push(ii); return; }  // parameters together, named or not
      var t = trie;
      for (var k = p && starts(p) ? common.length : 0; p && k < p.length; k++) {
        var nm = p[k];
        if (!t.kids[nm]) { t.kids[nm] = {name: nm, kids: {}, order: [], leaves: []}; t.order.push(nm); }
        t = t.kids[nm];
      }
      t.leaves.push(ii);
    });
    function make(t, owner, prefixParts) {  // trie node -> children of owner, in schedule order
      var out = [];
      t.order.forEach(function (nm) {
        var sub = t.kids[nm], label = [partLabel(nm)];
        while (sub.order.length === 1 && !sub.leaves.length) { sub = sub.kids[sub.order[0]]; label.push(partLabel(sub.name)); }
        var members = trieMembers(sub);
        if (members.length === 1) { out.push({ii: members[0]}); return; }
        out.push({trie: sub, label: label.join("/"), full: prefixParts.concat(label), members: members});
      });
      t.leaves.forEach(function (ii) { out.push({ii: ii}); });
      out.sort(function (a, b) { return (a.ii != null ? a.ii : a.members[0]) - (b.ii != null ? b.ii : b.members[0]); });
      return out.map(function (o) {
        if (o.ii != null) return leafNode(owner, inst, o.ii);
        var g = gmNode("ns", owner, {key: "n:" + o.label, label: keepTail(o.label), path: o.full.join("/"), members: o.members, first: o.members[0]});
        g.build = function () { g.kids = make(o.trie, g, o.full); tidy(g, inst); };
        return g;
      });
    }
    var kids = make(trie, inst, common.map(partLabel));
    if (params.length > 8) {
      var pg = gmNode("auto", inst, {key: "params", label: "parameters", first: params[0], members: params, sub: params.length + " parameters"});
      pg.build = function () { autoGroups(pg, inst, params, 1, true); };
      kids.unshift(pg);
    } else kids = params.map(function (ii) { return leafNode(inst, inst, ii); }).concat(kids);
    inst.kids = kids;
    if (common.length) inst.sub = "op_name prefix " + keepTail(common.map(partLabel).join("/"));
  }
  function trieMembers(t) {
    var out = t.leaves.slice();
    t.order.forEach(function (k) { out = out.concat(trieMembers(t.kids[k])); });
    return out.sort(function (a, b) { return a - b; });
  }
  function firstIndex(n) {
    if (n.ii != null) return n.ii;
    if (n.first != null) return n.first;
    if (n.members && n.members.length) return n.members[0];
    if (n.kids && n.kids.length) return firstIndex(n.kids[0]);
    return Infinity;
  }
  // A namespace's label keeps its end, the part that tells siblings apart (…/scan/while/body).
  function keepTail(s, max) {
    max = max || 38;
    if (s.length <= max) return s;
    var parts = opNameParts(s), out = parts.pop();
    while (parts.length && out.length + parts[parts.length - 1].length + 1 <= max - 2) out = parts.pop() + "/" + out;
    if (out.length > max - 2) out = out.slice(out.length - max + 2);
    return "…/" + out;
  }

  // Automatic groups: segments of the schedule, each ending at an anchor, then blocks of them.
  function isAnchor(r) { return ANCHOR_FAMILIES[r[C.family]] || (r[C.opcode] === "fusion" && /convolution|dot|gemm/.test(r[C.text])); }
  function autoGroups(owner, inst, members, level, flat) {
    var ci = compOf(inst), rows = comps[ci].instructions;
    if (members.length <= MAX_CHILDREN) { owner.kids = members.map(function (ii) { return leafNode(owner, inst, ii); }); return; }
    if (flat) {  // a plain list (parameters): even parts in order
      owner.kids = chunks(members, Math.ceil(members.length / Math.ceil(members.length / 40))).map(function (part, k) {
        var g = gmNode("auto", owner, {key: "p" + k, label: rows[part[0]][C.name] + " … " + rows[part[part.length - 1]][C.name], first: part[0], members: part, sub: part.length + " instructions"});
        g.build = function () { g.kids = part.map(function (ii) { return leafNode(g, inst, ii); }); };
        return g;
      });
      return;
    }
    var kids = [], rest = members;
    if (level === 0) {
      var params = members.filter(function (ii) { return rows[ii][C.opcode] === "parameter"; });
      if (params.length > 8) {
        rest = members.filter(function (ii) { return rows[ii][C.opcode] !== "parameter"; });
        var pg = gmNode("auto", owner, {key: "params", label: "parameters", first: params[0], members: params, sub: params.length + " parameters"});
        pg.build = function () { autoGroups(pg, inst, params, 1, true); };
        kids.push(pg);
      }
    }
    owner.kids = kids.concat(segmentGroups(owner, inst, rest.map(function (ii) { return {ii: ii}; })));
  }
  // Cut an ordered list of units (instructions {ii}, or made nodes {node}) into segments, each
  // up to and including an anchor, and those into blocks: the groups that hold them.
  function segmentGroups(owner, inst, units) {
    var rows = comps[compOf(inst)].instructions, segs = [], cur = [];
    units.forEach(function (u) {
      cur.push(u);
      var anchor = u.node ? u.node.kind !== "op" : isAnchor(rows[u.ii]);
      if (anchor || cur.length >= SEGMENT_MAX) { segs.push(cur); cur = []; }
    });
    if (cur.length) segs.push(cur);
    var bs = blocks(segs.map(function (sg) { return {members: sg, anchor: sg[sg.length - 1]}; }), rows);
    // Short segments stay open in their parent (no box around two nodes) while it stays small.
    var total = bs.length;
    if (bs.length <= MAX_CHILDREN) {
      var order = bs.map(function (b, k) { return k; }).filter(function (k) { return !bs[k].blocks && bs[k].units.length === 1; })
        .sort(function (a, b) { return bs[a].units[0].members.length - bs[b].units[0].members.length; });
      order.forEach(function (k) {
        var n = bs[k].units[0].members.length;
        if (n <= 4 && total + n - 1 <= MAX_CHILDREN) { bs[k].inline = true; total += n - 1; }
      });
    }
    var out = [];
    bs.forEach(function (b, k) {
      if (!b.inline) { out.push(autoNode(owner, inst, b, k, bs.length)); return; }
      b.units[0].members.forEach(function (u) { out.push(u.node ? adopt(u.node, owner) : leafNode(owner, inst, u.ii)); });
    });
    return out;
  }
  function chunks(list, size) { var out = []; for (var k = 0; k < list.length; k += size) out.push(list.slice(k, k + size)); return out; }
  // Cut segments into blocks at each occurrence of a repeating anchor, a layer's first matmul:
  // the opcode-and-shape that repeats most evenly across most of the schedule (6 to 200 times).
  // A block much bigger than the others (the optimizer after 64 layers) is cut again inside;
  // with no repeat, blocks are even. Returns [{units, label}] or, when there are many,
  // [{blocks}] of them.
  function blocks(units, rows) {
    if (units.length <= MAX_CHILDREN && !(units.length >= 8 && repeatingAnchor(units, rows))) return units.map(function (u) { return {units: [u]}; });
    var out = cutBlocks(units, rows, 0);
    if (out.length > MAX_CHILDREN) {  // blocks of blocks
      var size = Math.ceil(out.length / Math.ceil(out.length / 32));
      return chunks(out, size).map(function (part) {
        var a = /(\d+) of (\d+)$/.exec(part[0].label) || /(\d+) of (\d+)$/.exec(part[1] ? part[1].label : ""), b = /(\d+) of (\d+)$/.exec(part[part.length - 1].label);
        var what = /^part/.test(part[part.length - 1].label) ? "parts " : "blocks ";
        return {blocks: part, label: a && b ? what + a[1] + "–" + b[1] + " of " + b[2] : part[0].label + " …"};
      });
    }
    return out;
  }
  function repeatingAnchor(units, rows) {
    var sig = {}, best = null, bestScore = 0, n = units.length;
    units.forEach(function (u, k) {
      if (u.anchor.node || !isAnchor(rows[u.anchor.ii])) return;
      var r = rows[u.anchor.ii];
      if (r[C.family] === "control flow") return;
      var s = r[C.opcode] + " " + r[C.shape];
      (sig[s] = sig[s] || []).push(k);
    });
    Object.keys(sig).forEach(function (s) {
      var at = sig[s], c = at.length;
      if (c < 6 || c > 200) return;
      var gaps = [], mean = 0, v = 0;
      for (var k = 1; k < c; k++) { gaps.push(at[k] - at[k - 1]); mean += at[k] - at[k - 1]; }
      mean /= gaps.length;
      gaps.forEach(function (g) { v += (g - mean) * (g - mean); });
      var cv = Math.sqrt(v / gaps.length) / (mean || 1), score = ((at[c - 1] - at[0]) / n) / (1 + cv);
      if (score > bestScore) { bestScore = score; best = at; }
    });
    return bestScore > 0.15 ? best : null;
  }
  function cutBlocks(units, rows, depth) {
    var at = depth < 3 ? repeatingAnchor(units, rows) : null, cuts, out = [];
    if (at) cuts = at.slice();
    else {
      var per = Math.ceil(units.length / Math.min(40, Math.ceil(units.length / 20)));
      cuts = [];
      for (var k = per; k < units.length; k += per) cuts.push(k);
    }
    var lead = cuts[0] !== 0;
    if (lead) cuts.unshift(0);
    cuts.forEach(function (c, k) {
      var part = units.slice(c, k + 1 < cuts.length ? cuts[k + 1] : units.length), n = cuts.length - (lead ? 1 : 0);
      var label = !at ? "part " + (k + 1) + " of " + cuts.length : lead && k === 0 ? "before block 1" : "block " + (k + (lead ? 0 : 1)) + " of " + n;
      out.push({units: part, label: label});
    });
    // a block far bigger than the typical one is cut again inside (the optimizer after the layers)
    var sizes = out.map(function (b) { return b.units.length; }).sort(function (a, b) { return a - b; }), median = sizes[sizes.length >> 1];
    out.forEach(function (b) {
      if (b.units.length > Math.max(3 * median, MAX_CHILDREN)) {
        var inner = cutBlocks(b.units, rows, depth + 1);
        if (inner.length > 1) { b.blocks = inner; b.units = null; }
      }
    });
    return out;
  }
  function unitMembers(u) { return u.node ? memberIndices(u.node) : [u.ii]; }
  function autoNode(owner, inst, b, k, n) {
    var rows = comps[compOf(inst)].instructions, units = flatUnits(b);
    if (units.length === 1) return units[0].node ? adopt(units[0].node, owner) : leafNode(owner, inst, units[0].ii);
    var members = [].concat.apply([], units.map(unitMembers)).sort(function (a, c) { return a - c; });
    var first = members[0], last = members[members.length - 1], label = b.label;
    if (!label && b.units && b.units.length === 1) { var a = b.units[0].anchor; label = a.node ? a.node.label : rows[a.ii][C.name]; }
    var g = gmNode("auto", owner, {key: "a" + k, label: label, sub: composition(rows, members), first: first, members: members,
      range: rows[first][C.name] + " … " + rows[last][C.name]});
    g.build = function () {
      if (b.blocks) g.kids = b.blocks.map(function (bb, j) { return autoNode(g, inst, bb, j, b.blocks.length); });
      else if (b.units.length > MAX_CHILDREN) g.kids = segmentGroupsOf(g, inst, b.units);
      else if (b.units.length === 1) g.kids = units.map(function (u) { return u.node ? adopt(u.node, g) : leafNode(g, inst, u.ii); });
      else g.kids = b.units.map(function (u, j) { return autoNode(g, inst, {units: [u]}, j, b.units.length); });
    };
    return g;
  }
  function flatUnits(b) {
    if (b.blocks) return [].concat.apply([], b.blocks.map(flatUnits));
    return [].concat.apply([], b.units.map(function (u) { return u.members; }));
  }
  function segmentGroupsOf(g, inst, segs) {  // a block of too many segments: even parts of them
    var rows = comps[compOf(inst)].instructions;
    return cutBlocks(segs, rows, 3).map(function (b, j, all) { return autoNode(g, inst, b, j, all.length); });
  }
  function composition(rows, members) {  // "3 dot · 2 all-reduce · 40 elementwise": what a group does
    var by = {}, heavy = {};
    members.forEach(function (ii) {
      var r = rows[ii], f = r[C.family], k = ANCHOR_FAMILIES[f] ? r[C.opcode] : f.replace("elementwise ", "");
      by[k] = (by[k] || 0) + 1;
      if (ANCHOR_FAMILIES[f]) heavy[k] = 1;
    });
    return Object.keys(by).sort(function (a, b) { return (heavy[b] ? 1e6 : 0) + by[b] - (heavy[a] ? 1e6 : 0) - by[a]; })
      .slice(0, 3).map(function (k) { return by[k] + " " + k; }).join(" · ");
  }
  // A node with more than MAX_CHILDREN children. Its namespaces stay; the runs of loose
  // instructions between them (XLA's copies and bitcasts without op_name) become schedule
  // segments. Only when that is still too many is everything cut into segments and blocks, as
  // where there are no op_names.
  function tidy(owner, inst) {
    var kids = owner.kids;
    if (!kids || kids.length <= MAX_CHILDREN) return;
    var lead = kids[0] && kids[0].key === "params" ? [kids.shift()] : [];
    function unit(k) {
      if (k.kind !== "op" && k.kind !== "call") return {node: k};
      delete GM.byId[k.id];  // made again where it lands
      return {ii: k.ii};
    }
    var groups = kids.filter(function (k) { return k.kind !== "op" && k.kind !== "call"; });
    var out = lead.slice();
    if (groups.length && groups.length <= MAX_CHILDREN / 2) {
      var run = [];
      var flush = function () {
        if (run.length >= 5) out = out.concat(segmentGroups(owner, inst, run.map(unit)));
        else run.forEach(function (k) { out.push(k); });
        run = [];
      };
      kids.forEach(function (k) { if (k.kind === "op" || k.kind === "call") run.push(k); else { flush(); out.push(k); } });
      flush();
      if (out.length <= MAX_CHILDREN) { owner.kids = out; owner.kids.forEach(function (k) { if (k.parent !== owner) adopt(k, owner); }); return; }
      out = lead.slice();
      kids = owner.kids.slice(lead.length);
    }
    owner.kids = out.concat(segmentGroups(owner, inst, kids.map(unit)));
    owner.kids.forEach(function (k) { if (k.parent !== owner) adopt(k, owner); });
  }
  function adopt(n, g) {  // a made node moves under g; ids follow the tree
    if (n.parent === g) return n;
    delete GM.byId[n.id];
    n.parent = g;
    n.id = g.id + "/" + n.id.slice(n.id.lastIndexOf("/") + 1);
    GM.byId[n.id] = n;
    (n.kids || []).forEach(function (k) { adopt(k, n); });
    return n;
  }
  function ensureKids(n) {
    if (n.kids) return n.kids;
    if (n.build) { n.build(); n.build = null; return n.kids || []; }
    return kidsOf(n);
  }

  // ---- figures per node (summed over what it holds) -----------------------------------------
  // Each node's instruction count, seconds, bytes and utilisation, over its leaves (a call's
  // own figures include its bodies: the estimate charges a loop its trips × body).
  function nodeFigures(n) {
    if (n.fig) return n.fig;
    var f = {count: 0, seconds: 0, bytes: 0, utilSec: 0, timedSec: 0, peakBytes: 0};
    function leaf(ci, ii) {
      var c = comps[ci];
      f.count++;
      var s = c.seconds ? c.seconds[ii] : null;
      if (s) { f.seconds += s; if (c.flop_util && c.flop_util[ii] != null) { f.utilSec += c.flop_util[ii] * s; f.timedSec += s; } }
      var b = c.bytes ? c.bytes[ii] : null;
      if (b) f.bytes += b;
      var pk = peakBytesOf(c.instructions[ii][C.name]);
      if (pk) f.peakBytes += pk;
    }
    if (n.kind === "op" || n.kind === "call") leaf(n.ci, n.ii);
    else {
      var inst = instanceOf(n), rows = comps[compOf(inst)].instructions;
      memberIndices(n).forEach(function (ii) { leaf(compOf(inst), ii); });
      if (!rows) f.count = 0;
    }
    return (n.fig = f);
  }
  // The instruction indices a group holds in its instance (building nothing).
  function memberIndices(n) {
    if (n.kind === "op" || n.kind === "call") return [n.ii];
    if (n.kind === "instance") return comps[compOf(n)].instructions.map(function (r, i) { return i; });
    if (n.members) return n.members;
    var out = [];
    ensureKids(n).forEach(function (k) { out = out.concat(memberIndices(k)); });
    return (n.members = out);
  }
  // Whether a group holds instruction ii of its instance.
  function holds(n, ii) {
    if (n.kind === "op" || n.kind === "call") return n.ii === ii;
    if (!n.memberSet) { n.memberSet = {}; memberIndices(n).forEach(function (k) { n.memberSet[k] = 1; }); }
    return !!n.memberSet[ii];
  }
  var peakByName = null;
  function peakBytesOf(name) {
    if (!peakByName) {
      peakByName = {};
      var mem = section("memory").data;
      ((mem && mem.peak_buffers) || []).forEach(function (b) { peakByName[bufInst(b)] = (peakByName[bufInst(b)] || 0) + (Number(pick(b, "bytes", "size")) || 0); });
    }
    return peakByName[name] || 0;
  }

  // ---- edges between the children of an open node (Note [Program tree]) ---------------------
  function edgesOf(g) {
    if (g.edges) return g.edges;
    if (g.kind === "call" && !g.inst) return (g.edges = []);  // a while's body and condition: separate computations
    var inst = instanceOf(g), kids = ensureKids(g), rows = comps[compOf(inst)].instructions;
    var childOf = {};  // instruction index -> index of g's child holding it
    kids.forEach(function (k, j) { memberIndices(k).forEach(function (ii) { childOf[ii] = j; }); });
    var seen = {}, out = [];
    kids.forEach(function (k, j) {
      memberIndices(k).forEach(function (ii) {
        rows[ii][C.operands].forEach(function (o) {
          var from = childOf[o];
          if (o < 0 || from == null || from === j) return;
          var key = from * 100003 + j;
          if (seen[key] != null) { out[seen[key]].n++; return; }
          seen[key] = out.length;
          out.push({from: from, to: j, shape: rows[o][C.shape], n: 1});
        });
      });
    });
    return (g.edges = out);
  }
