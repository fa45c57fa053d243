/* mxboard's report: the dashboards of one logdir, drawn from the JSON block #data with uPlot.
   Every name from the logdir goes into the page as text (textContent), never as HTML; only the
   text plugin's markdown, sanitized by TensorBoard's own renderer when the report was made, is
   set as HTML. Charts are drawn when they come into view. `#selftest` in the URL writes what
   the page drew into the element #selftest (the tests read it). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  data.scalars = byTag(data.scalars);
  var app = document.getElementById("app");
  var state = {smoothing: 0.6, log: false, x: "step"};
  var charts = [];  // the Scalars dashboard's: {tag, box, plot, entries: [{label, entry}], runs}
  var customCharts = [];  // the Custom Scalars dashboard's multiline and margin charts
  var drawn = {histograms: {}, pr_curves: {}, parallel: null};  // what was drawn, for #selftest
  var STEP_AXIS = {space: 50, incrs: [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3,
                                      5e4, 1e5, 2e5, 25e4, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 1e9, 1e10]};  // integer steps
  function colorOf(run) {  // one colour per run, the same in every chart
    var i = data.meta.runs.indexOf(run);
    return COLORS[(i < 0 ? 0 : i) % COLORS.length];
  }
  var COLORS = ["#ff7043", "#0077bb", "#009988", "#ee3377", "#33bbee", "#cc3311", "#6a3d9a", "#b15928",
                "#999933", "#555555"];

  function el(name, text, cls) {
    var node = document.createElement(name);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function unpack(b64, Type) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Type(bytes.buffer);
  }
  // The scalar series come as columns (one value a series, or one a drawn point, for every series
  // at once): here each tag gets its runs' entries, {run, points, start, step, value, wall}, whose
  // arrays are views of the columns.
  function byTag(block) {
    var out = {};
    if (!block.runs) return out;
    var run = unpack(block.run, Uint32Array), tag = unpack(block.tag, Uint32Array),
        points = unpack(block.points, Uint32Array), start = unpack(block.start, Float64Array),
        count = unpack(block.count, Uint32Array), step = unpack(block.step, Float64Array),
        value = unpack(block.value, Float32Array), wall = unpack(block.wall, Float32Array);
    for (var i = 0, at = 0; i < run.length; at += count[i], i++) {
      var name = block.tags[tag[i]];
      (out[name] = out[name] || []).push({run: block.runs[run[i]], points: points[i], start: start[i],
                                          step: step.subarray(at, at + count[i]), value: value.subarray(at, at + count[i]),
                                          wall: wall.subarray(at, at + count[i])});
    }
    return out;
  }
  // TensorBoard's smoothing: a debiased exponential moving average; NaN and infinite values, and a
  // constant series, are shown as they are
  function smooth(values, weight) {
    var out = new Array(values.length), last = 0, count = 0, constant = true;
    for (var i = 1; i < values.length; i++) if (values[i] !== values[0]) { constant = false; break; }
    for (var j = 0; j < values.length; j++) {
      var v = values[j];
      if (constant || !isFinite(v)) { out[j] = v; continue; }
      last = last * weight + (1 - weight) * v;
      count++;
      out[j] = last / (weight === 1 ? 1 : 1 - Math.pow(weight, count));
    }
    return out;
  }
  function decoded(entry) {
    if (!entry.decoded) {
      var walls = entry.wall, rel = new Float64Array(walls.length), abs = new Float64Array(walls.length);
      for (var i = 0; i < walls.length; i++) { rel[i] = walls[i]; abs[i] = entry.start + walls[i]; }
      entry.decoded = {step: entry.step, value: Array.from(entry.value), relative: rel, wall: abs};
    }
    return entry.decoded;
  }
  // -- the y axis: each tick's label with the significant digits that tell the ticks apart and
  // read back as the tick, its sign kept, in an exponent below 0.001 and from 1e6 on (uPlot's
  // default axis drew 132,000 as "2,000" in its 50 px, and 3e-4 as 0); the axis as wide as its
  // widest label
  function yLabel(v, digits, exponent) {
    if (v === 0) return "0";
    if (!exponent) return String(Number(v.toPrecision(digits)));
    var parts = v.toExponential(digits - 1).split("e");
    return String(Number(parts[0])) + "e" + Number(parts[1]);
  }
  function yLabels(u, splits) {
    var top = 0, gap = Infinity, labels = [];
    splits.forEach(function (v, i) {
      if (v !== null && isFinite(v)) top = Math.max(top, Math.abs(v));
      if (i && splits[i] !== splits[i - 1]) gap = Math.min(gap, Math.abs(splits[i] - splits[i - 1]));
    });
    var exponent = top !== 0 && (top < 1e-3 || top >= 1e6);
    // the sum of two floats (0.1 + 0.2 - 0.3) is no tick of its own: it is 0
    var ticks = splits.map(function (v) { return v !== null && Math.abs(v) < top * 1e-12 ? 0 : v; });
    for (var digits = 1; digits <= 17; digits++) {
      labels = ticks.map(function (v) { return v === null || !isFinite(v) ? "" : yLabel(v, digits, exponent); });
      var shown = labels.filter(function (label) { return label !== ""; });
      var apart = new Set(shown).size === shown.length, near = labels.every(function (label, i) {
        return label === "" || Math.abs(Number(label) - ticks[i]) <= 1e-9 * Math.max(Math.abs(ticks[i]), gap === Infinity ? 0 : gap);
      });
      if (apart && near) break;
    }
    return labels;
  }
  function yAxisSize(u, values, axisIdx, cycleNum) {
    // uPlot asks again once its ticks are laid out; a third ask keeps the width (its loop ends)
    var axis = u.axes[axisIdx];
    if (cycleNum > 1 && axis._size) return axis._size;
    return Math.ceil(axis.ticks.size + axis.gap + labelWidth(u, axis, values)) + 1;
  }
  function labelWidth(u, axis, values) {  // the widest label's width in CSS pixels
    var widest = 0;
    u.ctx.font = axis.font[0];
    (values || []).forEach(function (label) { if (label) widest = Math.max(widest, u.ctx.measureText(label).width); });
    return widest / uPlot.pxRatio;
  }
  function yAxis() { return {values: yLabels, size: yAxisSize}; }
  var plots = [];  // every uPlot chart drawn, for #selftest: {title, plot}

  function formatted(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v !== "number") return String(v);
    return Number.isInteger(v) && Math.abs(v) < 1e15 ? String(v) : v.toPrecision(7);
  }

  // -- the header ---------------------------------------------------------------------------
  var meta = data.meta;
  var header = el("header");
  header.appendChild(el("h1", "mxboard report"));
  var facts = el("dl");
  [["logdir", meta.logdir], ["runs", null], ["made", meta.made],
   ["by", "mxboard " + meta.version]].forEach(function (pair) {
    facts.appendChild(el("dt", pair[0]));
    facts.appendChild(pair[1] === null ? runGroups() : el("dd", pair[1]));
  });
  function runGroups() {
    // the runs grouped by their top directory (a training's sub-runs under it), each in its colour
    var dd = el("dd", meta.runs.length + " "), groups = {}, order = [];
    dd.id = "runs";
    meta.runs.forEach(function (run) {
      var top = run.split("/")[0];
      if (!(top in groups)) { groups[top] = []; order.push(top); }
      groups[top].push(run);
    });
    order.forEach(function (top) {
      var span = el("span", null, "group"); span.dataset.group = top;
      span.appendChild(el("strong", top));
      var below = groups[top].filter(function (run) { return run !== top; });
      if (below.length) span.appendChild(document.createTextNode(" (" + below.map(function (run) {
        return run.slice(top.length + 1);
      }).join(", ") + ")"));
      dd.appendChild(span);
    });
    return dd;
  }
  header.appendChild(facts);
  meta.notes.forEach(function (note) { header.appendChild(el("p", note, "note")); });
  app.appendChild(header);
  // -- filters: regular expressions over runs and tags, as TensorBoard's ---------------------
  var filters = el("div", null, "controls filters"), runFilter = el("input"), tagFilter = el("input");
  filters.id = "filters";
  [[runFilter, "runs", "run-filter"], [tagFilter, "tags", "tag-filter"]].forEach(function (f) {
    f[0].type = "search"; f[0].id = f[2]; f[0].placeholder = "regular expression"; f[0].spellcheck = false;
    var label = el("label", f[1] + " "); label.appendChild(f[0]); filters.appendChild(label);
    f[0].addEventListener("input", applyFilters);
  });
  function pattern(input) {
    try { input.classList.remove("invalid"); return new RegExp(input.value); }
    catch (e) { input.classList.add("invalid"); return /(?:)/; }
  }
  function runShown(chart, re) {  // each line of a drawn chart shown or hidden by its run
    if (!chart.plot || !chart.entries || !chart.plot.series) return;
    chart.entries.forEach(function (line, i) {
      var show = re.test(line.entry.run);
      [2 * i + 1, 2 * i + 2].forEach(function (k) {
        if (chart.plot.series[k] && chart.plot.series[k].show !== show) chart.plot.setSeries(k, {show: show});
      });
    });
  }
  function applyFilters() {
    var runs = pattern(runFilter), tags = pattern(tagFilter);
    Array.prototype.forEach.call(document.querySelectorAll("section [data-tag]"), function (box) {
      var shown = tags.test(box.dataset.tag) && (box.dataset.run === undefined || runs.test(box.dataset.run));
      box.style.display = shown ? "" : "none";
    });
    charts.concat(customCharts).forEach(function (c) { runShown(c, runs); });
    Array.prototype.forEach.call(document.querySelectorAll("#hparams tr[data-hrun]"), function (tr) {
      tr.style.display = runs.test(tr.dataset.hrun) ? "" : "none";
    });
    if (drawn.parallel) drawParallel();
  }

  if (meta.left_out.length) {
    var lo = el("section"); lo.id = "left-out";
    lo.appendChild(el("h2", "Not in this report"));
    var list = el("ul");
    meta.left_out.forEach(function (item) {
      var li = el("li");
      li.appendChild(el("strong", item.name));
      li.appendChild(document.createTextNode(" (" + (item.runs.length === 1 ? "run " : "runs ") + item.runs.join(", ") +
                                             "): " + item.why + ". Shown by "));
      li.appendChild(el("code", meta.command));
      list.appendChild(li);
    });
    lo.appendChild(list);
    app.appendChild(lo);
  }

  app.appendChild(filters);

  // -- scalars ------------------------------------------------------------------------------
  var tags = Object.keys(data.scalars).sort();
  if (tags.length) {
    var section = el("section"); section.id = "scalars";
    section.appendChild(el("h2", "Scalars"));
    var controls = el("div", null, "controls");
    var slider = el("input"); slider.type = "range"; slider.min = "0"; slider.max = "0.99"; slider.step = "0.01";
    slider.value = String(state.smoothing); slider.id = "smoothing";
    var shown = el("span", state.smoothing.toFixed(2));
    var label = el("label", "Smoothing "); label.appendChild(slider); label.appendChild(shown);
    controls.appendChild(label);
    var log = el("input"); log.type = "checkbox"; log.id = "log";
    var logLabel = el("label"); logLabel.appendChild(log); logLabel.appendChild(document.createTextNode(" log scale (y)"));
    controls.appendChild(logLabel);
    var axis = el("select"); axis.id = "axis";
    [["step", "step"], ["relative", "relative time (s)"], ["wall", "wall time"]].forEach(function (o) {
      var option = el("option", o[1]); option.value = o[0]; axis.appendChild(option);
    });
    var axisLabel = el("label", "x axis "); axisLabel.appendChild(axis);
    controls.appendChild(axisLabel);
    section.appendChild(controls);
    var grid = el("div", null, "grid");
    section.appendChild(grid);
    app.appendChild(section);
    tags.forEach(function (tag) {
      var box = el("div", null, "chart");
      box.dataset.tag = tag;
      box.appendChild(el("h3", tag));
      grid.appendChild(box);
      var chart = {tag: tag, box: box, plot: null, entries: data.scalars[tag].map(function (e) {
        return {label: e.run, entry: e, color: colorOf(e.run)};
      })};
      downloads(box, chart);
      charts.push(chart);
    });
    slider.addEventListener("input", function () {
      state.smoothing = Number(slider.value); shown.textContent = state.smoothing.toFixed(2); redraw();
    });
    log.addEventListener("change", function () { state.log = log.checked; redraw(); });
    axis.addEventListener("change", function () { state.x = axis.value; redraw(); });
  }

  function rowsOf(chart) {
    // the chart's points as the report holds them: run, tag, step, wall time, value
    var rows = [];
    chart.entries.forEach(function (line) {
      var d = decoded(line.entry), tag = line.tag || chart.tag;
      for (var i = 0; i < d.step.length; i++) rows.push([line.entry.run, tag, d.step[i], d.wall[i], d.value[i]]);
    });
    return rows;
  }
  function csvOf(chart) {
    function cell(v) {
      var text = typeof v === "number" ? (isFinite(v) ? String(v) : String(v)) : String(v);
      return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
    }
    return "run,tag,step,wall_time,value\n" + rowsOf(chart).map(function (r) { return r.map(cell).join(","); }).join("\n") + "\n";
  }
  function jsonOf(chart) {
    return JSON.stringify(rowsOf(chart).map(function (r) {
      return {run: r[0], tag: r[1], step: r[2], wall_time: r[3], value: isFinite(r[4]) ? r[4] : String(r[4])};
    }));
  }
  function downloads(box, chart) {
    // CSV and JSON of the chart's points, made in the page (a blob: URL, no request)
    var bar = el("span", null, "downloads");
    [["CSV", "text/csv", csvOf, ".csv"], ["JSON", "application/json", jsonOf, ".json"]].forEach(function (kind) {
      var button = el("button", kind[0]); button.type = "button";
      button.addEventListener("click", function () {
        var url = URL.createObjectURL(new Blob([kind[2](chart)], {type: kind[1]}));
        var a = el("a"); a.href = url; a.download = chart.tag.replace(/[^\w.-]+/g, "_") + kind[3];
        document.body.appendChild(a); a.click(); a.remove();
        setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
      });
      bar.appendChild(button);
    });
    box.firstChild.appendChild(bar);
  }

  function table(chart) {
    // [x, raw and smoothed y of each line] over the union of the lines' x values (uPlot.join)
    var tables = [], runs = [], colors = [];
    chart.entries.forEach(function (line, i) {
      colors.push(line.color || COLORS[i % COLORS.length]);
      var d = decoded(line.entry);
      var xs = Array.from(d[state.x]);
      var raw = d.value.map(function (v) { return isFinite(v) ? v : null; });
      var smoothed = smooth(d.value, state.smoothing).map(function (v) { return isFinite(v) ? v : null; });
      tables.push([xs, raw, smoothed]);
      runs.push(line.label);
    });
    return {joined: uPlot.join(tables), runs: runs, colors: colors};
  }
  function xValue(u, v) {
    return state.x === "wall" && v !== null ? new Date(v * 1000).toISOString().replace("T", " ").slice(0, 19) : formatted(v);
  }
  function xScale(xs) {
    // a series of one point (torch's add_hparams logs each metric once) around its x, not on 0-100
    var scale = {time: state.x === "wall"};
    if (xs && xs.length && xs[0] === xs[xs.length - 1]) scale.range = [xs[0] - 1, xs[0] + 1];
    return scale;
  }
  function xAxis() { return state.x === "step" ? STEP_AXIS : {}; }

  function draw(chart) {
    var t = table(chart), series = [{label: state.x, value: xValue}];
    t.runs.forEach(function (run, i) {
      var color = t.colors[i];
      series.push({label: run + " (raw)", stroke: color + "40", width: 1, spanGaps: true, value: function (u, v) { return formatted(v); }});
      series.push({label: run, stroke: color, width: 1.5, spanGaps: true, value: function (u, v) { return formatted(v); }});
    });
    var options = {
      width: Math.max(chart.box.clientWidth - 16, 300), height: 260, series: series,
      scales: {x: xScale(t.joined[0]), y: {distr: state.log ? 3 : 1}}, axes: [xAxis(), yAxis()],
      legend: {live: true}, cursor: {focus: {prox: 16}},
      hooks: {setSeries: [function (u, i, opts) {  // the legend shows each run once: its raw line follows its smoothed one
        if (i && i % 2 === 0 && opts && "show" in opts && u.series[i - 1].show !== opts.show) {
          u.setSeries(i - 1, {show: opts.show});
        }
      }]},
    };
    if (chart.plot) chart.plot.destroy();
    chart.plot = new uPlot(options, t.joined, chart.box);
    plots.push({title: chart.tag, plot: chart.plot});
    chart.plot.root.classList.add("paired");
    chart.runs = t.runs; chart.colors = t.colors;
    if (runFilter.value) runShown(chart, pattern(runFilter));
  }
  function redraw() {
    charts.forEach(function (c) { if (c.plot) draw(c); });
    customCharts.forEach(function (c) { if (c.plot) c.draw(c); });
  }

  var seen = "IntersectionObserver" in window ? new IntersectionObserver(function (found) {
    found.forEach(function (entry) {
      if (!entry.isIntersecting) return;
      var chart = charts.concat(customCharts).filter(function (c) { return c.box === entry.target; })[0];
      if (chart && !chart.plot) (chart.draw || draw)(chart);
    });
  }, {rootMargin: "400px"}) : null;
  charts.forEach(function (c) { if (seen) seen.observe(c.box); else draw(c); });
  function whenSeen(box, drawIt) {  // draws `box` once it comes into view
    if (!seen) { drawIt(); return; }
    var watch = new IntersectionObserver(function (found) {
      if (found.some(function (e) { return e.isIntersecting; })) { watch.disconnect(); drawIt(); }
    }, {rootMargin: "400px"});
    watch.observe(box);
  }

  // -- hparams ------------------------------------------------------------------------------
  if (data.hparams.rows.length) {
    var hp = el("section"); hp.id = "hparams";
    hp.appendChild(el("h2", "HParams"));
    var tbl = el("table"), head = el("tr"), body = el("tbody"), sortedBy = {column: 0, down: false};
    data.hparams.columns.forEach(function (name, i) {
      var th = el("th", name);
      if (i >= data.hparams.columns.length - data.hparams.metrics) th.className = "metric";
      th.addEventListener("click", function () {
        sortedBy = {column: i, down: sortedBy.column === i ? !sortedBy.down : false}; fill();
      });
      head.appendChild(th);
    });
    var thead = el("thead"); thead.appendChild(head); tbl.appendChild(thead); tbl.appendChild(body);
    function fill() {
      var rows = data.hparams.rows.slice().sort(function (a, b) {
        var x = a[sortedBy.column], y = b[sortedBy.column];
        var order = x === y ? 0 : x === null ? 1 : y === null ? -1 : x < y ? -1 : 1;
        return sortedBy.down ? -order : order;
      });
      body.textContent = "";
      rows.forEach(function (row) {
        var tr = el("tr"); tr.dataset.hrun = row[0];
        row.forEach(function (cell) { tr.appendChild(el("td", formatted(cell))); });
        body.appendChild(tr);
      });
      applyFilters();
    }
    hp.appendChild(tbl);
    var parallel = el("div", null, "chart parallel"); parallel.id = "parallel";
    parallel.appendChild(el("h3", "parallel coordinates (one line per run; the runs filter greys the others)"));
    hp.appendChild(parallel);
    app.appendChild(hp);
    fill();
    whenSeen(parallel, drawParallel);
  }
  function drawParallel() {
    // one vertical axis per hyper-parameter or metric (numbers on a linear scale, anything else as
    // categories in sorted order), each run a polyline through its values, in its colour
    var box = document.getElementById("parallel");
    if (!box) return;
    Array.prototype.forEach.call(box.querySelectorAll("canvas, .axes"), function (n) { n.remove(); });
    var names = data.hparams.columns.slice(1), rows = data.hparams.rows, runs = pattern(runFilter);
    var width = Math.max(box.clientWidth - 16, 420), height = 280, top = 24, bottom = 28, side = 50;
    var ctx = canvas(box, width, height), scales = [], step = names.length > 1 ? (width - 2 * side) / (names.length - 1) : 0;
    names.forEach(function (name, j) {
      var values = rows.map(function (r) { return r[j + 1]; }).filter(function (v) { return v !== null && v !== undefined; });
      var numeric = values.every(function (v) { return typeof v === "number"; });
      var scale = numeric ? {lo: Math.min.apply(null, values), hi: Math.max.apply(null, values)}
                          : {cats: values.map(String).filter(function (v, i, a) { return a.indexOf(v) === i; }).sort()};
      scale.at = function (v) {
        if (v === null || v === undefined) return null;
        var f = numeric ? (scale.hi > scale.lo ? (v - scale.lo) / (scale.hi - scale.lo) : 0.5)
                        : (scale.cats.length > 1 ? scale.cats.indexOf(String(v)) / (scale.cats.length - 1) : 0.5);
        return top + (1 - f) * (height - top - bottom);
      };
      scale.x = side + j * step;
      scales.push(scale);
      ctx.strokeStyle = "#9e9e9e"; ctx.beginPath(); ctx.moveTo(scale.x, top); ctx.lineTo(scale.x, height - bottom); ctx.stroke();
      ctx.fillStyle = "#424242";
      var label = name.length > 18 ? name.slice(0, 17) + "\u2026" : name;
      ctx.fillText(label, scale.x - ctx.measureText(label).width / 2, height - 10);
      var hiText = numeric ? formatted(scale.hi) : scale.cats[scale.cats.length - 1] || "";
      var loText = numeric ? formatted(scale.lo) : scale.cats[0] || "";
      [[hiText, top - 6], [loText, height - bottom + 12]].forEach(function (tick) {
        var text = String(tick[0]).slice(0, 14), w = ctx.measureText(text).width;
        ctx.fillText(text, j === names.length - 1 && names.length > 1 ? scale.x - w - 3 : scale.x + 3, tick[1]);
      });
    });
    drawn.parallel = {axes: names, lines: {}};
    rows.forEach(function (row) {
      var shown = runs.test(row[0]);
      ctx.strokeStyle = shown ? colorOf(row[0]) : "#e0e0e0"; ctx.lineWidth = shown ? 1.5 : 1;
      ctx.beginPath();
      var pen = false;
      scales.forEach(function (scale, j) {
        var y = scale.at(row[j + 1]);
        if (y === null) { pen = false; return; }
        if (pen) ctx.lineTo(scale.x, y); else ctx.moveTo(scale.x, y);
        pen = true;
      });
      ctx.stroke();
      drawn.parallel.lines[row[0]] = {shown: shown, values: row.slice(1)};
    });
  }

  // -- images -------------------------------------------------------------------------------
  function steppedSection(id, title, byTag, show) {
    var tagsHere = Object.keys(byTag).sort();
    if (!tagsHere.length) return;
    var sec = el("section"); sec.id = id;
    sec.appendChild(el("h2", title));
    tagsHere.forEach(function (tag) {
      Object.keys(byTag[tag]).sort().forEach(function (run) {
        var items = byTag[tag][run], card = el("div", null, "card");
        card.dataset.tag = tag; card.dataset.run = run;
        card.appendChild(el("h3", tag)); card.appendChild(el("p", run, "run"));
        var stepLabel = el("p", "", "step"), holder = el("div");
        var range = el("input"); range.type = "range"; range.min = "0"; range.max = String(items.length - 1);
        range.value = String(items.length - 1);
        function at(i) { stepLabel.textContent = "step " + items[i].step; holder.textContent = ""; show(holder, items[i]); }
        range.addEventListener("input", function () { at(Number(range.value)); });
        card.appendChild(stepLabel); card.appendChild(holder);
        if (items.length > 1) card.appendChild(range);
        at(items.length - 1);
        sec.appendChild(card);
      });
    });
    app.appendChild(sec);
  }
  steppedSection("images", "Images", data.images, function (holder, item) {
    var img = el("img"); img.alt = "step " + item.step; img.className = "zoomable";
    img.addEventListener("load", function () {  // small images drawn at a whole multiple, pixel for pixel
      var fit = Math.max(1, Math.floor(Math.min(256, 460) / Math.max(img.naturalWidth, 1)));
      img.dataset.scale = String(Math.min(fit, Math.floor(460 / Math.max(img.naturalWidth, 1))) || 1);
      img.style.width = img.naturalWidth * Number(img.dataset.scale) + "px";
    });
    img.addEventListener("click", function () {  // zoom: twice as large, up to the card's width, then back
      var scale = Number(img.dataset.scale || 1), bigger = scale * 2;
      if (img.naturalWidth * bigger > 460) bigger = Math.max(1, Math.floor(256 / Math.max(img.naturalWidth, 1)));
      img.dataset.scale = String(bigger); img.style.width = img.naturalWidth * bigger + "px";
    });
    img.src = item.src; holder.appendChild(img);
  });
  steppedSection("text", "Text", data.texts, function (holder, item) {
    // TensorBoard's text plugin's HTML (sanitized by it when the report was made), shown as its
    // dashboard shows it: a paragraph keeps its line breaks and spaces (tf-markdown-view's
    // `#markdown p {white-space: break-spaces}`), so that logged JSON reads line by line
    var div = el("div", null, "markdown"); div.innerHTML = item.html; holder.appendChild(div);
    Array.prototype.forEach.call(div.querySelectorAll("p"), function (p) { p.style.whiteSpace = "break-spaces"; });
  });

  // -- distributions ------------------------------------------------------------------------
  var dtags = Object.keys(data.distributions).sort();
  if (dtags.length) {
    var ds = el("section"); ds.id = "distributions";
    ds.appendChild(el("h2", "Distributions"));
    dtags.forEach(function (tag) {
      Object.keys(data.distributions[tag]).sort().forEach(function (run) {
        var d = data.distributions[tag][run], box = el("div", null, "chart");
        box.dataset.tag = tag; box.dataset.run = run;
        box.appendChild(el("h3", tag)); box.appendChild(el("p", run, "run"));
        ds.appendChild(box);
        var bands = d.bands.map(function (b) { return b.map(function (v) { return typeof v === "number" ? v : null; }); });
        var series = [{label: "step"}], names = ["min", "-1.5σ", "-1σ", "-0.5σ", "median", "+0.5σ", "+1σ", "+1.5σ", "max"];
        names.forEach(function (n, i) {
          series.push({label: n, stroke: i === 4 ? "#ff7043" : "#ff704360", width: i === 4 ? 1.5 : 0.5,
                       points: {show: false}, value: function (u, v) { return formatted(v); }});
        });
        var fills = [];  // the bands, as the Distributions dashboard draws them: darker toward the median
        for (var i = 0; i < 4; i++) fills.push({series: [9 - i, i + 1], fill: "rgba(255,112,67," + (0.12 + 0.08 * i) + ")"});
        var plot = null;
        function drawBands() {
          plot = new uPlot({width: Math.max(box.clientWidth - 16, 300), height: 220, series: series, bands: fills,
                            scales: {x: Object.assign(xScale(d.step), {time: false})}, axes: [STEP_AXIS, yAxis()]},
                           [d.step].concat(bands), box);
          plots.push({title: tag + " (" + run + ")", plot: plot});
        }
        whenSeen(box, function () { if (!plot) drawBands(); });
      });
    });
    app.appendChild(ds);
  }

  // -- histograms: TensorBoard's offset view ----------------------------------------------------
  function canvas(box, width, height) {
    var c = el("canvas"), ratio = window.devicePixelRatio || 1;
    c.width = width * ratio; c.height = height * ratio; c.style.width = width + "px"; c.style.height = height + "px";
    box.appendChild(c);
    var ctx = c.getContext("2d"); ctx.scale(ratio, ratio); ctx.font = "11px system-ui, sans-serif";
    return ctx;
  }
  var htags = Object.keys(data.histograms).sort(), histogramBoxes = [];
  if (htags.length) {
    var hs = el("section"); hs.id = "histograms";
    hs.appendChild(el("h2", "Histograms"));
    var modeBar = el("div", null, "controls"), mode = el("select"); mode.id = "histogram-mode";
    [["offset", "offset (the steps one behind the other)"], ["overlay", "overlay (the steps on one baseline)"]]
      .forEach(function (o) { var option = el("option", o[1]); option.value = o[0]; mode.appendChild(option); });
    var modeLabel = el("label", "mode "); modeLabel.appendChild(mode); modeBar.appendChild(modeLabel);
    hs.appendChild(modeBar);
    mode.addEventListener("change", function () {
      histogramBoxes.forEach(function (h) { if (h.drawn) offsetView(h.box, h.items); });
    });
    var hgrid = el("div", null, "grid"); hs.appendChild(hgrid);
    htags.forEach(function (tag) {
      drawn.histograms[tag] = {};
      Object.keys(data.histograms[tag]).sort().forEach(function (run) {
        // a tag and run's histograms: {lo, hi, items: [{step, counts}]}
        var items = data.histograms[tag][run], box = el("div", null, "chart histogram");
        box.dataset.tag = tag; box.dataset.run = run;
        box.appendChild(el("h3", tag)); box.appendChild(el("p", run, "run"));
        hgrid.appendChild(box);
        drawn.histograms[tag][run] = items;
        var entry = {box: box, items: items, drawn: false};
        histogramBoxes.push(entry);
        whenSeen(box, function () { entry.drawn = true; offsetView(box, items); });
      });
    });
    app.appendChild(hs);
  }
  function offsetView(box, unit) {
    // each histogram is a filled outline of its bins' counts over x, the first step at the back
    // (top), the last in front (bottom), as TensorBoard's offset view draws them; page.py rebinned
    // each into equal bins over the range [unit.lo, unit.hi], counts preserved
    var overlay = document.getElementById("histogram-mode").value === "overlay", items = unit.items;
    Array.prototype.forEach.call(box.querySelectorAll("canvas"), function (c) { c.remove(); });
    box.dataset.mode = overlay ? "overlay" : "offset";
    var width = Math.max(box.clientWidth - 16, 300), height = 280, left = 8, right = 56, top = 8, bottom = 22;
    var ctx = canvas(box, width, height), lo = unit.lo, hi = unit.hi, peak = 0;
    var bins = items.map(function (h) {
      var binWidth = (hi - lo) / h.counts.length;
      return h.counts.map(function (c, i) { return [lo + i * binWidth, lo + (i + 1) * binWidth, typeof c === "number" ? c : 0]; });
    });
    bins.forEach(function (b) { b.forEach(function (c) { peak = Math.max(peak, c[2]); }); });
    var plotW = width - left - right, ridge = (height - top - bottom) * (overlay ? 1 : 0.35);
    var offsetH = height - top - bottom - ridge, n = items.length;
    function X(v) { return left + (v - lo) / (hi - lo) * plotW; }
    items.forEach(function (h, i) {
      var base = overlay ? height - bottom : top + ridge + (n > 1 ? i / (n - 1) : 1) * offsetH;
      var shade = n > 1 ? i / (n - 1) : 1;
      ctx.beginPath(); ctx.moveTo(X(lo), base);
      bins[i].forEach(function (b) {
        var y = base - (peak > 0 ? b[2] / peak * ridge : 0);
        ctx.lineTo(X((b[0] + b[1]) / 2), y);
      });
      ctx.lineTo(X(hi), base); ctx.closePath();
      if (!overlay) { ctx.fillStyle = "rgba(255,255,255,0.9)"; ctx.fill(); }
      ctx.strokeStyle = "rgba(255,112,67," + (0.35 + 0.65 * shade) + ")"; ctx.lineWidth = 1; ctx.stroke();
      if (!overlay && (i === 0 || i === n - 1)) {
        ctx.fillStyle = "#616161"; ctx.fillText("step " + h.step, width - right + 4, base);
      }
    });
    ctx.fillStyle = "#616161";
    ctx.fillText(formatted(lo), left, height - 6);
    var hiText = formatted(hi); ctx.fillText(hiText, left + plotW - ctx.measureText(hiText).width, height - 6);
  }

  // -- audio --------------------------------------------------------------------------------
  steppedSection("audio", "Audio", data.audio, function (holder, item) {
    var player = el("audio"); player.controls = true; player.preload = "metadata"; player.src = item.src;
    holder.appendChild(player);
    if (item.label) holder.appendChild(el("p", item.label, "label"));  // as text: a label is the user's
  });

  // -- PR curves: precision over recall, a step slider per run ----------------------------------
  var ptags = Object.keys(data.pr_curves).sort();
  if (ptags.length) {
    var ps = el("section"); ps.id = "pr_curves";
    ps.appendChild(el("h2", "PR Curves"));
    var pgrid = el("div", null, "grid"); ps.appendChild(pgrid);
    ptags.forEach(function (tag) {
      var box = el("div", null, "chart pr"), runsHere = Object.keys(data.pr_curves[tag]).sort(), at = {};
      box.dataset.tag = tag; box.appendChild(el("h3", tag));
      var holder = el("div"); box.appendChild(holder);
      drawn.pr_curves[tag] = {};
      runsHere.forEach(function (run, i) {
        var items = data.pr_curves[tag][run];
        at[run] = items.length - 1;
        var row = el("div", null, "prrun"), swatch = el("span", "■ " + run, "run");
        swatch.style.color = colorOf(run);
        var stepLabel = el("span", "", "step");
        row.appendChild(swatch); row.appendChild(stepLabel);
        if (items.length > 1) {
          var range = el("input"); range.type = "range"; range.min = "0"; range.max = String(items.length - 1);
          range.value = String(items.length - 1);
          range.addEventListener("input", function () { at[run] = Number(range.value); drawPr(); });
          row.appendChild(range);
        }
        row.stepLabel = stepLabel;
        box.appendChild(row);
        at[run + "\u0000row"] = row;
      });
      pgrid.appendChild(box);
      function drawPr() {
        holder.textContent = "";
        var width = Math.max(box.clientWidth - 16, 300), height = 260, left = 36, bottom = 24, top = 8, right = 8;
        var ctx = canvas(holder, width, height), w = width - left - right, h = height - top - bottom;
        ctx.strokeStyle = "#bdbdbd"; ctx.strokeRect(left, top, w, h);
        ctx.fillStyle = "#616161";
        ctx.fillText("recall", left + w / 2 - 14, height - 6);
        ctx.fillText("1", left - 10, top + 8); ctx.fillText("0", left - 10, top + h);
        ctx.fillText("precision", 2, top + h / 2);
        runsHere.forEach(function (run, i) {
          var item = data.pr_curves[tag][run][at[run]];
          at[run + "\u0000row"].stepLabel.textContent = " step " + item.step + " ";
          drawn.pr_curves[tag][run] = {step: item.step, precision: item.precision, recall: item.recall};
          ctx.beginPath();
          item.recall.forEach(function (r, k) {
            var p = item.precision[k];
            if (typeof r !== "number" || typeof p !== "number") return;
            var x = left + r * w, y = top + (1 - p) * h;
            if (k === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
          });
          ctx.strokeStyle = colorOf(run); ctx.lineWidth = 1.5; ctx.stroke();
        });
      }
      whenSeen(box, drawPr);
      box.drawPr = drawPr;
    });
    app.appendChild(ps);
  }

  // -- custom scalars: the user's layout --------------------------------------------------------
  if (data.custom_scalars.length) {
    var cs = el("section"); cs.id = "custom_scalars";
    cs.appendChild(el("h2", "Custom Scalars"));
    data.custom_scalars.forEach(function (category) {
      var details = el("details"); details.open = !category.closed;
      details.appendChild(el("summary", category.title));
      var cgrid = el("div", null, "grid"); details.appendChild(cgrid);
      category.charts.forEach(function (chart) {
        var box = el("div", null, "chart custom"); box.dataset.title = chart.title;
        box.appendChild(el("h3", chart.title));
        cgrid.appendChild(box);
        var custom = {tag: chart.title, box: box, plot: null};
        if (chart.tags) {
          custom.entries = [];
          chart.tags.forEach(function (tag) {
            (data.scalars[tag] || []).forEach(function (e) { custom.entries.push({label: e.run + ": " + tag, entry: e, tag: tag}); });
          });
          custom.draw = draw;
        } else {
          custom.margin = chart.margin; custom.draw = drawMargin;
        }
        if (custom.entries && !custom.entries.length) box.appendChild(el("p", "no scalar tag matches " + chart.tags, "run"));
        customCharts.push(custom);
        if (seen) seen.observe(box); else custom.draw(custom);
      });
      cs.appendChild(details);
    });
    app.appendChild(cs);
  }
  function drawMargin(chart) {
    // each run's value line, with the band between its lower and upper tags filled
    var tables = [], series = [{label: state.x, value: xValue}], bands = [], runs = [];
    chart.margin.forEach(function (m) {
      var byRun = {};
      [["value", m.value], ["lower", m.lower], ["upper", m.upper]].forEach(function (pair) {
        (data.scalars[pair[1]] || []).forEach(function (e) { (byRun[e.run] = byRun[e.run] || {})[pair[0]] = e; });
      });
      Object.keys(byRun).sort().forEach(function (run) {
        var parts = byRun[run];
        if (!parts.value) return;
        var color = COLORS[runs.length % COLORS.length], first = series.length;
        runs.push(run + ": " + m.value);
        ["value", "lower", "upper"].forEach(function (part) {
          var e = parts[part];
          if (!e) return;
          var d = decoded(e);
          tables.push([Array.from(d[state.x]), d.value.map(function (v) { return isFinite(v) ? v : null; })]);
          series.push({label: run + ": " + (part === "value" ? m.value : part), stroke: part === "value" ? color : color + "60",
                       width: part === "value" ? 1.5 : 0.5, spanGaps: true, value: function (u, v) { return formatted(v); }});
        });
        if (parts.lower && parts.upper) bands.push({series: [first + 2, first + 1], fill: color + "30"});
      });
    });
    if (chart.plot) chart.plot.destroy();
    if (!tables.length) { chart.box.appendChild(el("p", "no run has these tags", "run")); chart.plot = {destroy: function () {}}; return; }
    var joined = uPlot.join(tables);
    chart.plot = new uPlot({width: Math.max(chart.box.clientWidth - 16, 300), height: 260, series: series, bands: bands,
                            scales: {x: xScale(joined[0])}, axes: [xAxis(), yAxis()]}, joined, chart.box);
    plots.push({title: chart.tag, plot: chart.plot});
    chart.runs = runs;
  }

  if (!tags.length && !data.hparams.rows.length && !dtags.length && !Object.keys(data.images).length &&
      !Object.keys(data.texts).length && !htags.length && !ptags.length && !Object.keys(data.audio).length &&
      !data.custom_scalars.length) {
    app.appendChild(el("p", "Nothing to show: no scalars, hparams, images, audio, text, histograms or PR curves " +
                            "were found in " + meta.logdir, "empty"));
  }

  // -- what was drawn, for the tests ----------------------------------------------------------
  var opened = performance.now();  // since the navigation began: parsing the page included
  if (location.hash === "#selftest") setTimeout(selftest, 100);  // once uPlot has laid its charts out
  function selftest() {
    // what the observer has not drawn yet is drawn now; uPlot sets a new chart's scales in a
    // microtask, so what was drawn is read a task later (read at once, a busy page had none)
    charts.forEach(function (c) { if (!c.plot) draw(c); });
    customCharts.forEach(function (c) { if (!c.plot) c.draw(c); });
    setTimeout(measured, 0);
  }
  function measured() {
    var result = {opened_ms: opened, resources: performance.getEntriesByType("resource").length,
                  charts: {}, cursor: null, smoothed: {}};
    charts.forEach(function (c) { result.charts[c.tag] = c.runs; });
    if (charts.length) {
      var first = charts[0], plot = first.plot, k = Math.floor(plot.data[0].length / 2);
      plot.setCursor({left: plot.valToPos(plot.data[0][k], "x"), top: 10});
      var values = Array.prototype.map.call(plot.root.querySelectorAll(".u-legend .u-value"),
                                            function (n) { return n.textContent; });
      var landed = plot.cursor.idx === null || plot.cursor.idx === undefined ? k : plot.cursor.idx;  // a busy layout
      result.cursor = {tag: first.tag, x: plot.data[0][landed], legend: values,
                       labels: plot.series.map(function (s) { return s.label; })};
      Object.keys(data.scalars).forEach(function (tag) {
        result.smoothed[tag] = {};
        data.scalars[tag].forEach(function (entry) {
          result.smoothed[tag][entry.run] = smooth(decoded(entry).value, 0.6).map(function (v) { return isFinite(v) ? v : String(v); });
        });
      });
    }
    Array.prototype.forEach.call(document.querySelectorAll("#pr_curves .chart"), function (box) { box.drawPr(); });
    result.xranges = {};
    charts.forEach(function (c) { if (c.plot) result.xranges[c.tag] = [c.plot.scales.x.min, c.plot.scales.x.max]; });
    result.colors = {};
    charts.forEach(function (c) {
      result.colors[c.tag] = {};
      (c.runs || []).forEach(function (run, i) { result.colors[c.tag][run] = c.colors[i]; });
    });
    if (charts.length) { result.csv = csvOf(charts[0]); result.json = JSON.parse(jsonOf(charts[0])); }
    result.images = Array.prototype.map.call(document.querySelectorAll("#images img"), function (img) {
      return {natural: img.naturalWidth, width: img.getBoundingClientRect().width};
    });
    result.legend_rows = charts.length && charts[0].plot ? Array.prototype.filter.call(
      charts[0].plot.root.querySelectorAll(".u-legend .u-series"),
      function (row) { return getComputedStyle(row).display !== "none"; }).length : 0;
    if (document.getElementById("parallel") && !drawn.parallel) drawParallel();
    result.parallel = drawn.parallel && JSON.parse(JSON.stringify(drawn.parallel));
    runFilter.value = "^lr0\\.1$"; tagFilter.value = "^loss$";
    runFilter.dispatchEvent(new Event("input"));
    result.filtered_parallel = drawn.parallel && JSON.parse(JSON.stringify(drawn.parallel));
    result.filtered_hparams = Array.prototype.filter.call(document.querySelectorAll("#hparams tr[data-hrun]"),
      function (tr) { return tr.style.display !== "none"; }).map(function (tr) { return tr.dataset.hrun; });
    result.filtered = {charts: charts.filter(function (c) { return c.box.style.display !== "none"; }).map(function (c) { return c.tag; }),
                       cards: Array.prototype.filter.call(document.querySelectorAll("section .card"), function (card) {
                         return card.style.display !== "none"; }).length,
                       lines: {}};
    charts.forEach(function (c) {
      result.filtered.lines[c.tag] = c.plot.series.filter(function (series, k) { return k > 0 && series.show; })
                                                  .map(function (series) { return series.label; });
    });
    runFilter.value = ""; tagFilter.value = ""; runFilter.dispatchEvent(new Event("input"));
    result.histograms = drawn.histograms;
    result.texts = Array.prototype.map.call(document.querySelectorAll("#text .card"), function (card) {
      // each paragraph's white-space and the lines it is drawn in (its text's line boxes)
      var div = card.querySelector(".markdown"), range = document.createRange();
      return {tag: card.dataset.tag, run: card.dataset.run, html: div.innerHTML,
              paragraphs: Array.prototype.map.call(div.querySelectorAll("p"), function (p) {
                range.selectNodeContents(p);
                var tops = {};
                Array.prototype.forEach.call(range.getClientRects(), function (r) { if (r.width > 0) tops[Math.round(r.top)] = 1; });
                return {white_space: getComputedStyle(p).whiteSpace, lines: Object.keys(tops).length};
              })};
    });
    var modeSelect = document.getElementById("histogram-mode");
    if (modeSelect) {
      histogramBoxes.forEach(function (h) { if (!h.drawn) { h.drawn = true; offsetView(h.box, h.items); } });
      modeSelect.value = "overlay"; modeSelect.dispatchEvent(new Event("change"));
      result.histogram_modes = histogramBoxes.map(function (h) { return h.box.dataset.mode + ":" + h.box.querySelectorAll("canvas").length; });
      modeSelect.value = "offset"; modeSelect.dispatchEvent(new Event("change"));
    } result.pr_curves = JSON.parse(JSON.stringify(drawn.pr_curves));
    Array.prototype.forEach.call(document.querySelectorAll("#pr_curves input[type=range]"), function (range) {
      range.value = "0"; range.dispatchEvent(new Event("input"));  // each run's slider to its first step
    });
    result.pr_first = drawn.pr_curves;
    result.custom = customCharts.map(function (c) { return {title: c.tag, lines: c.runs || []}; });
    result.custom_values = {};
    customCharts.forEach(function (c) {
      if (c.entries) result.custom_values[c.tag] = c.entries.map(function (line) { return [line.label, decoded(line.entry).value]; });
    });
    var players = Array.prototype.slice.call(document.querySelectorAll("#audio audio"));
    Promise.all(players.map(function (a) {
      return new Promise(function (done) {
        if (a.readyState >= 1 || a.error) { done(); return; }
        a.addEventListener("loadedmetadata", done); a.addEventListener("error", done);
        setTimeout(done, 3000);
      });
    })).then(function () {
      result.audio = players.map(function (a) {
        var card = a.closest(".card");
        return {tag: card.dataset.tag, run: card.dataset.run, src: a.src, duration: a.duration,
                error: a.error ? a.error.code : null};
      });
      // each chart's y axis as drawn: its ticks, their labels, its width and the width its widest label needs
      result.yaxes = plots.filter(function (p) { return p.plot.root.isConnected; }).map(function (p) {
        var axis = p.plot.axes[1];
        return {title: p.title, ticks: axis._splits, labels: axis._values, size: axis._size,
                needed: axis.ticks.size + axis.gap + labelWidth(p.plot, axis, axis._values),
                range: [p.plot.scales.y.min, p.plot.scales.y.max]};
      });
      var pre = el("pre", JSON.stringify(result)); pre.id = "selftest";
      document.body.appendChild(pre);
    });
  }
})();
