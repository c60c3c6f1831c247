// The tapegrad tape explorer: the page's whole script (no library, no network). Its data is window.TAPE_DATA,
// written by tapegrad.explorer from a real recording and replay. Steps: 0 (nothing computed yet), 1..n (forward:
// entry s-1 computed), n+1..n+m (backward: the replay reaches steps[s-n-1].entry, freeing it).
(function () {
  "use strict";
  const D = window.TAPE_DATA;
  const SVG = "http://www.w3.org/2000/svg";
  const rows = D.rows, steps = D.steps, n = rows.length, m = steps.length, last = n + m;
  let state = 0;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmtNum(v) {
    if (typeof v !== "number") return String(v);
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    return String(parseFloat(v.toPrecision(6)));
  }
  function fmtValue(v) { return Array.isArray(v) ? fmtNum(v[0]) + (v[1] < 0 ? "" : "+") + fmtNum(v[1]) + "j" : fmtNum(v); }
  function fmtShape(s) { return s === null || s === undefined ? "?" : "(" + s.join(",") + (s.length === 1 ? ",)" : ")"); }
  function fmtBytes(b) {
    if (b === null || b === undefined) return "?";
    const units = ["B", "KiB", "MiB", "GiB"];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i === 0 ? String(b) : b.toFixed(1)) + " " + units[i];
  }
  function nonfinite(s) { return !!s && ((s.nan || 0) + (s.inf || 0)) > 0; }

  // An array in full (nested by its shape, up to two dimensions), or its summary and histogram.
  function showArray(s, cls) {
    const box = el("div", { "class": "array-box" });
    if (!s) { box.appendChild(el("span", { "class": "kv" }, "not kept by the tape")); return box; }
    const head = el("div", { "class": "kv" }, fmtShape(s.shape) + " " + s.dtype + (s.kept ? " (as the tape saved it)" : "") +
      (s.hist ? "   min " + fmtNum(s.min) + "  max " + fmtNum(s.max) + "  mean " + fmtNum(s.mean) + "  std " + fmtNum(s.std) : ""));
    if (nonfinite(s)) head.appendChild(el("span", { "class": "badge" }, (s.nan ? s.nan + " NaN " : "") + (s.inf ? s.inf + " inf" : "")));
    box.appendChild(head);
    if (s.values) {
      let text;
      const v = s.values.map(fmtValue);
      if (s.shape.length === 0) text = v[0];
      else if (s.shape.length === 2) {
        const w = s.shape[1], lines = [];
        for (let i = 0; i < s.shape[0]; i++) lines.push("[" + v.slice(i * w, (i + 1) * w).join(", ") + "]");
        text = "[" + lines.join(",\n ") + "]";
      } else text = "[" + v.join(", ") + "]";
      box.appendChild(el("code", { "class": "array " + (cls || ""), "data-values": JSON.stringify(s.values.map(String)) }, text));
    } else if (s.hist) {
      const W = 240, H = 30, top = Math.max.apply(null, s.hist) || 1, bw = W / s.hist.length;
      const h = svg("svg", { "class": "hist", width: W, height: H + 14, viewBox: "0 0 " + W + " " + (H + 14) });
      s.hist.forEach(function (c, i) {
        const bh = H * c / top;
        const r = svg("rect", { x: i * bw + 1, y: H - bh, width: Math.max(bw - 2, 1), height: bh });
        r.appendChild(svg("title", {}, fmtNum(s.edges[i]) + " .. " + fmtNum(s.edges[i + 1]) + ": " + c));
        h.appendChild(r);
      });
      h.appendChild(svg("text", { x: 0, y: H + 12 }, fmtNum(s.edges[0])));
      h.appendChild(svg("text", { x: W, y: H + 12, "text-anchor": "end" }, fmtNum(s.edges[s.edges.length - 1])));
      box.appendChild(h);
    }
    return box;
  }

  // NaN provenance: an entry made a non-finite value if its output has one and none of its inputs has.
  const leafByName = {};
  D.leaves.forEach(function (l) { leafByName[l.name] = l; });
  function inputValue(inp) {
    if (inp.kind === "entry") return inp.output !== undefined ? rows[inp.entry].outputs[inp.output].value : rows[inp.entry].value;
    if (inp.kind === "leaf") return leafByName[inp.name] ? leafByName[inp.name].value : null;
    return null;
  }
  // An entry of an op with several outputs (eigh, svd, ...) has r.outputs (name, shape, dtype, value each).
  function outputValues(r) { return r.outputs ? r.outputs.map(function (o) { return o.value; }) : [r.value]; }
  function stepAdjoints(s) { return s.adjoints || [s.adjoint]; }
  rows.forEach(function (r) {
    r.nonfinite = outputValues(r).some(nonfinite);
    r.made = r.nonfinite && r.inputs.every(function (inp) { return !nonfinite(inputValue(inp)); });
  });
  let firstBadAdjoint = -1;
  steps.forEach(function (s, j) { if (firstBadAdjoint < 0 && stepAdjoints(s).some(nonfinite)) firstBadAdjoint = j; });
  const stepOf = {};
  steps.forEach(function (s, j) { stepOf[s.entry] = j; });

  function outName(r) { return r.outputs ? r.outputs.map(function (o) { return o.name; }).join(", ") : r.name; }
  function call(r) { return outName(r) + " = " + r.op + "(" + r.inputs.map(function (i) { return i.name; }).join(", ") + ")"; }

  // -- the page's frame ---------------------------------------------------------------------------------------
  const app = document.getElementById("app");
  const header = el("header");
  header.appendChild(el("h1", {}, "Tape explorer: " + D.title));
  const total = D.forward_bytes.length ? D.forward_bytes[D.forward_bytes.length - 1] : 0;
  header.appendChild(el("span", { "class": "note" },
    n + " entries, " + D.leaves.length + " leaves, saved " + fmtBytes(total) + "; " + (D.source || "")));
  app.appendChild(header);
  const controls = el("div", { id: "controls" });
  [["first", "|\u25c0", "start (Home)"], ["prev", "\u25c0", "back one step (\u2190)"],
   ["next", "\u25b6", "one step (\u2192)"], ["end", "\u25b6|", "end (End)"]].forEach(function (b) {
    const btn = el("button", { id: "btn-" + b[0], title: b[2] }, b[1]);
    controls.appendChild(btn);
  });
  const label = el("span", { id: "step-label" });
  controls.appendChild(label);
  if (D.note) controls.appendChild(el("span", { "class": "note" }, "  (" + D.note + ")"));
  app.appendChild(controls);
  const layout = el("div", { id: "layout" });
  app.appendChild(layout);

  // -- the Wengert list -----------------------------------------------------------------------------------------
  const tableBox = el("section", { id: "table-box" });
  tableBox.appendChild(el("h2", {}, "The tape (Wengert list)"));
  const table = el("table", { id: "tape-table" });
  const thead = el("tr");
  ["#", "entry", "inputs", "output", "saved", "source"].forEach(function (h) { thead.appendChild(el("th", {}, h)); });
  table.appendChild(thead);
  const rowEls = rows.map(function (r) {
    const tr = el("tr", { "class": "entry", id: "row-" + r.index, "data-entry": r.index });
    tr.appendChild(el("td", {}, String(r.index)));
    const c = el("td", {}, call(r));
    if (r.made) c.appendChild(el("span", { "class": "badge", title: "this entry made a NaN or infinity from finite inputs" }, "made NaN/inf"));
    tr.appendChild(c);
    tr.appendChild(el("td", {}, r.inputs.map(function (i) {
      const from = i.kind === "entry" ? (i.output !== undefined ? rows[i.entry].outputs[i.output] : rows[i.entry]) : i;
      const sh = from.shape, dt = from.dtype;
      return fmtShape(sh) + (dt ? " " + dt : "");
    }).join(", ")));
    const outs = r.outputs || [r];
    tr.appendChild(el("td", { "class": "out" }, outs.map(function (o) { return fmtShape(o.shape) + (o.dtype ? " " + o.dtype : ""); }).join(", ")));
    tr.appendChild(el("td", {}, r.saved.length ? r.saved.map(function (s) { return s.name; }).join(", ") +
      " (" + (r.bytes ? fmtBytes(r.bytes) : "kept already") + ")" : "-"));
    tr.appendChild(el("td", { title: r.code || "" }, r.where ? r.where + "  " + (r.code || "") : ""));
    if (r.nonfinite) tr.classList.add("nonfinite");
    tr.addEventListener("click", function () { go(r.index + 1); });
    table.appendChild(tr);
    return tr;
  });
  tableBox.appendChild(table);
  const left = el("div");
  layout.appendChild(left);
  left.appendChild(tableBox);

  // -- the graph, laid out here: layers by longest path from the leaves, orders by barycentres ---------------------
  const right = el("div");
  layout.appendChild(right);
  const graphBox = el("section", { id: "graph-box" });
  graphBox.appendChild(el("h2", {}, "The graph (leaves, then each entry)"));
  right.appendChild(graphBox);
  const nodes = [], byKey = {}, edges = [];
  function addNode(key, kind, labelText, entry) {
    if (byKey[key] !== undefined) return byKey[key];
    byKey[key] = nodes.length;
    nodes.push({ key: key, kind: kind, label: labelText, entry: entry, layer: 0, order: 0, preds: [] });
    return byKey[key];
  }
  rows.forEach(function (r) {
    const me = addNode("e" + r.index, "op", r.name + " " + r.op, r.index);
    r.inputs.forEach(function (inp) {
      let src = null;
      if (inp.kind === "entry") src = byKey["e" + inp.entry];
      else if (inp.kind === "leaf") {
        const leaf = leafByName[inp.name];
        src = addNode("l" + inp.name, leaf && !leaf.requires_grad ? "constant" : "leaf", inp.name);
      }
      else if (inp.kind === "constant") src = addNode("c" + r.index + inp.name, "constant", inp.name);
      if (src === null || src === undefined) return;
      nodes[me].preds.push(src);
      edges.push({ from: src, to: me });
    });
    // re-insert so that an entry comes after the leaves it uses: layers decide the positions anyway
  });
  nodes.forEach(function (nd) {
    nd.layer = nd.preds.length ? 1 + Math.max.apply(null, nd.preds.map(function (p) { return nodes[p].layer; })) : 0;
  });
  // Leaves and constants sit one layer before their first consumer.
  nodes.forEach(function (nd, i) {
    if (nd.kind === "op") return;
    let first = Infinity;
    edges.forEach(function (e) { if (e.from === i) first = Math.min(first, nodes[e.to].layer); });
    if (first !== Infinity) nd.layer = Math.max(0, first - 1);
  });
  const layers = [];
  nodes.forEach(function (nd, i) { (layers[nd.layer] = layers[nd.layer] || []).push(i); });
  layers.forEach(function (L) { L.forEach(function (i, k) { nodes[i].order = k; }); });
  for (let sweep = 0; sweep < 4; sweep++) {
    layers.forEach(function (L, li) {
      if (li === 0 || !L) return;
      L.forEach(function (i) {
        const ps = nodes[i].preds;
        nodes[i].bary = ps.length ? ps.reduce(function (a, p) { return a + nodes[p].order; }, 0) / ps.length : nodes[i].order;
      });
      L.sort(function (a, b) { return nodes[a].bary - nodes[b].bary; });
      L.forEach(function (i, k) { nodes[i].order = k; });
    });
  }
  const DX = 130, DY = 46, BW = 108, BH = 28;
  let maxOrder = 0;
  layers.forEach(function (L) { if (L) maxOrder = Math.max(maxOrder, L.length); });
  const GW = Math.max(1, layers.length) * DX + 20, GH = Math.max(1, maxOrder) * DY + 20;
  const g = svg("svg", { id: "graph", width: GW, height: GH, viewBox: "0 0 " + GW + " " + GH });
  nodes.forEach(function (nd) { nd.x = 10 + nd.layer * DX + BW / 2; nd.y = 10 + nd.order * DY + BH / 2; });
  const edgeEls = edges.map(function (e) {
    const a = nodes[e.from], b = nodes[e.to];
    const x1 = a.x + BW / 2, x2 = b.x - BW / 2, mx = (x1 + x2) / 2;
    const p = svg("path", { "class": "edge", d: "M" + x1 + "," + a.y + " C" + mx + "," + a.y + " " + mx + "," + b.y + " " + x2 + "," + b.y });
    g.appendChild(p);
    return p;
  });
  const nodeEls = nodes.map(function (nd) {
    const grp = svg("g", { "class": "node " + (nd.kind === "op" ? "op" : "leaf" + (nd.kind === "constant" ? " constant" : "")),
      transform: "translate(" + (nd.x - BW / 2) + "," + (nd.y - BH / 2) + ")" });
    if (nd.kind === "op") {
      grp.setAttribute("id", "node-" + nd.entry);
      grp.appendChild(svg("rect", { width: BW, height: BH, rx: 4 }));
      if (rows[nd.entry].nonfinite) grp.classList.add("nonfinite");
      grp.addEventListener("click", function () { go(nd.entry + 1); });
    } else {
      grp.appendChild(svg("ellipse", { cx: BW / 2, cy: BH / 2, rx: BW / 2, ry: BH / 2 }));
    }
    const text = nd.label.length > 16 ? nd.label.slice(0, 15) + "\u2026" : nd.label;
    grp.appendChild(svg("text", { x: BW / 2, y: BH / 2 + 4, "text-anchor": "middle" }, text));
    grp.appendChild(svg("title", {}, nd.kind === "op" ? call(rows[nd.entry]) : nd.label));
    g.appendChild(grp);
    return grp;
  });
  graphBox.appendChild(g);

  // -- the entry at this step ---------------------------------------------------------------------------------------
  const details = el("section", { id: "details" });
  left.appendChild(details);

  // -- memory over the replay ------------------------------------------------------------------------------------------
  const memBox = el("section", { id: "memory-box" });
  memBox.appendChild(el("h2", {}, "Bytes the tape holds over the replay"));
  const legend = el("div", { "class": "legend" });
  legend.innerHTML = '<span><i class="swatch" style="background:#283593"></i>saved values the tape holds</span>' +
    '<span><i class="swatch" style="background:#7986cb"></i>plus gradients in flight</span>';
  if (D.nodegraph) {
    const lab = el("label");
    const box = el("input", { type: "checkbox", id: "nodegraph-toggle" });
    lab.appendChild(box);
    lab.appendChild(document.createTextNode(" the node-graph design, same program"));
    legend.appendChild(lab);
    box.addEventListener("change", drawMemory);
  }
  memBox.appendChild(legend);
  const mem = svg("svg", { id: "memory", viewBox: "0 0 600 200", preserveAspectRatio: "none" });
  memBox.appendChild(mem);
  right.appendChild(memBox);
  // held[s]: bytes the tape holds after step s (s = 0: nothing recorded yet).
  const held = [0].concat(D.forward_bytes, steps.map(function (s) { return s.held; }));
  const flying = [0].concat(D.forward_bytes.map(function () { return 0; }), steps.map(function (s) { return s.inflight; }));
  const ng = D.nodegraph ? [0].concat(D.nodegraph.forward, D.nodegraph.backward) : null;
  function drawMemory() {
    while (mem.firstChild) mem.removeChild(mem.firstChild);
    const showNg = ng && document.getElementById("nodegraph-toggle").checked;
    const series = [held.map(function (h, i) { return (h || 0) + flying[i]; }), held].concat(showNg ? [ng] : []);
    let top = 1;
    series.forEach(function (s) { s.forEach(function (v) { top = Math.max(top, v || 0); }); });
    const L = 60, R = 590, T = 10, B = 180;
    const X = function (i) { return L + (R - L) * i / Math.max(1, last); };
    const Y = function (v) { return B - (B - T) * (v || 0) / top; };
    mem.appendChild(svg("line", { "class": "axis", x1: L, y1: B, x2: R, y2: B }));
    mem.appendChild(svg("line", { "class": "axis", x1: L, y1: T, x2: L, y2: B }));
    mem.appendChild(svg("text", { x: L - 4, y: T + 8, "text-anchor": "end" }, fmtBytes(top)));
    mem.appendChild(svg("text", { x: L - 4, y: B, "text-anchor": "end" }, "0"));
    mem.appendChild(svg("line", { "class": "split", x1: X(n), y1: T, x2: X(n), y2: B }));
    mem.appendChild(svg("text", { x: (L + X(n)) / 2, y: 196, "text-anchor": "middle" }, "forward"));
    if (m) mem.appendChild(svg("text", { x: (X(n) + R) / 2, y: 196, "text-anchor": "middle" }, "backward"));
    const line = function (s, cls) {
      mem.appendChild(svg("polyline", { "class": cls, points: s.map(function (v, i) { return X(i) + "," + Y(v); }).join(" ") }));
    };
    line(series[0], "inflight");
    line(held, "held");
    if (showNg) line(ng, "nodegraph");
    mem.appendChild(svg("line", { "class": "cursor", id: "memory-cursor", x1: X(state), y1: T, x2: X(state), y2: B }));
  }

  // -- the compiled program, line to line ----------------------------------------------------------------------------------
  let progEls = [];
  if (D.program) {
    const progBox = el("section", { id: "program-box" });
    progBox.appendChild(el("h2", {}, "The compiled program (highlighted: the lines of this step's entry)"));
    const prog = el("div", { id: "program" });
    progEls = D.program.map(function (line, i) {
      const d = el("div", { "class": "line", id: "prog-" + i }, line.text);
      const target = line.entry !== null ? line.entry + 1 : (line.grad_of !== null && stepOf[line.grad_of] !== undefined ? n + 1 + stepOf[line.grad_of] : null);
      if (line.grad_of !== null) d.classList.add("grad");
      if (target !== null) {
        d.classList.add("linked");
        d.addEventListener("click", function () { go(target); });
      }
      prog.appendChild(d);
      return d;
    });
    progBox.appendChild(prog);
    right.appendChild(progBox);
  }

  // -- one step ----------------------------------------------------------------------------------------------------------
  function describe() {
    while (details.firstChild) details.removeChild(details.firstChild);
    if (state === 0) {
      details.appendChild(el("h2", {}, "Before the replay"));
      details.appendChild(el("p", {}, "Step with \u25b6 or \u2192: forward entry by entry, then backward entry by entry."));
      D.leaves.forEach(function (l) {
        details.appendChild(el("div", { "class": "kv" }, "leaf " + l.name + (l.requires_grad ? " (needs a gradient)" : "")));
        details.appendChild(showArray(l.value, "leaf-value"));
      });
      return;
    }
    const back = state > n;
    const s = back ? steps[state - n - 1] : null;
    const r = rows[back ? s.entry : state - 1];
    details.appendChild(el("h2", { id: "details-title" }, (back ? "Backward: " : "Forward: ") + "[" + r.index + "] " + call(r)));
    if (r.where) details.appendChild(el("div", { "class": "kv" }, r.where + "  " + (r.code || "")));
    r.inputs.forEach(function (inp) {
      details.appendChild(el("div", { "class": "kv" }, "input " + inp.name + (inp.kind === "leaf" ? " (leaf)" : inp.kind === "constant" ? " (constant)" : "")));
      if (inp.kind !== "constant") details.appendChild(showArray(inputValue(inp)));
    });
    (r.outputs || [r]).forEach(function (o, i) {
      details.appendChild(el("div", { "class": "kv" }, "value " + o.name));
      const v = showArray(o.value, "entry-value");
      if (i === 0) v.id = "value-now";
      details.appendChild(v);
    });
    if (r.made) details.appendChild(el("div", { "class": "nonfinite-text" }, "this entry made a NaN or infinity from finite inputs"));
    if (back) {
      (r.outputs || [r]).forEach(function (o, i) {
        const adj = s.adjoints ? s.adjoints[i] : s.adjoint;
        details.appendChild(el("div", { "class": "kv" }, "adjoint \u1e21" + o.name + " (the gradient of the output with respect to " + o.name + ")" + (adj ? "" : ": none, nothing used it")));
        if (!adj) return;
        const a = showArray(adj, "adjoint");
        if (!document.getElementById("adjoint-now")) a.id = "adjoint-now";  // the first adjoint shown
        details.appendChild(a);
      });
      if (state - n - 1 === firstBadAdjoint) details.appendChild(el("div", { "class": "nonfinite-text" }, "the first non-finite adjoint of the replay: made by the rules of the entries that use " + r.name));
      details.appendChild(el("div", { "class": "kv", id: "held-now" }, "the tape holds " + fmtBytes(s.held) + " once this entry is freed; gradients in flight " + fmtBytes(s.inflight)));
      if (state === last) {
        D.leaves.forEach(function (l) {
          if (!l.adjoint) return;
          details.appendChild(el("div", { "class": "kv" }, "gradient of leaf " + l.name));
          details.appendChild(showArray(l.adjoint, "leaf-grad"));
        });
      }
    }
  }
  function go(s) {
    state = Math.max(0, Math.min(last, s));
    const back = state > n;
    const current = state === 0 ? -1 : back ? steps[state - n - 1].entry : state - 1;
    const freed = {};
    if (back) for (let j = 0; j <= state - n - 1; j++) freed[steps[j].entry] = true;
    if (back) rows.forEach(function (r) { if (r.index > current) freed[r.index] = true; });  // the replay frees them all
    rows.forEach(function (r, i) {
      const tr = rowEls[i];
      tr.classList.toggle("current", i === current);
      tr.classList.toggle("pending", !back && i >= state);
      tr.classList.toggle("done", back || i < state);
      tr.classList.toggle("freed", !!freed[i] && i !== current);
    });
    nodes.forEach(function (nd, i) {
      if (nd.kind !== "op") return;
      const e = nodeEls[i];
      e.classList.toggle("current", nd.entry === current);
      e.classList.toggle("done", back || nd.entry < state);
      e.classList.toggle("freed", !!freed[nd.entry] && nd.entry !== current);
    });
    edges.forEach(function (e, i) { edgeEls[i].classList.toggle("active", nodes[e.to].entry === current); });
    progEls.forEach(function (d, i) {
      const line = D.program[i];
      d.classList.toggle("current", current >= 0 && (back ? line.grad_of === current : line.entry === current));
    });
    label.textContent = state === 0 ? "step 0 of " + last + ": nothing computed yet"
      : (back ? "backward " + (state - n) + "/" + m : "forward " + state + "/" + n) + ": " + call(rows[current]);
    describe();
    drawMemory();
    if (current >= 0) {  // keep the row in view, scrolling its box only
      const tr = rowEls[current];
      if (tr.offsetTop < tableBox.scrollTop + 30 || tr.offsetTop > tableBox.scrollTop + tableBox.clientHeight - 30) {
        tableBox.scrollTop = Math.max(0, tr.offsetTop - tableBox.clientHeight / 2);
      }
    }
  }
  document.getElementById("btn-first").addEventListener("click", function () { go(0); });
  document.getElementById("btn-prev").addEventListener("click", function () { go(state - 1); });
  document.getElementById("btn-next").addEventListener("click", function () { go(state + 1); });
  document.getElementById("btn-end").addEventListener("click", function () { go(last); });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "ArrowRight" || ev.key === "j") { go(state + 1); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft" || ev.key === "k") { go(state - 1); ev.preventDefault(); }
    else if (ev.key === "Home") { go(0); ev.preventDefault(); }
    else if (ev.key === "End") { go(last); ev.preventDefault(); }
  });
  window.explorer = { go: go, state: function () { return state; }, last: last, forward: n, backward: m };
  go(0);
})();
