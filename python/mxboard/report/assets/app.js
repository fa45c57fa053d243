/* mxboard's report: the dashboards of one logdir, drawn from the JSON block #data with uPlot.
   Every name from the logdir goes into the page as text (textContent), never as HTML; only the
   text plugin's markdown, sanitized by TensorBoard's own renderer when the report was made, is
   set as HTML. Charts are drawn when they come into view. `#selftest` in the URL writes what
   the page drew into the element #selftest (the tests read it). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var app = document.getElementById("app");
  var state = {smoothing: 0.6, log: false, x: "step"};
  var charts = [];  // {tag, box, plot, series}
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
      var walls = unpack(entry.wall, Float32Array), rel = new Float64Array(walls.length),
          abs = new Float64Array(walls.length);
      for (var i = 0; i < walls.length; i++) { rel[i] = walls[i]; abs[i] = entry.start + walls[i]; }
      entry.decoded = {step: unpack(entry.step, Float64Array), value: Array.from(unpack(entry.value, Float32Array)),
                       relative: rel, wall: abs};
    }
    return entry.decoded;
  }
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
  [["logdir", meta.logdir], ["runs", meta.runs.length + ": " + meta.runs.join(", ")], ["made", meta.made],
   ["by", "mxboard " + meta.version]].forEach(function (pair) {
    facts.appendChild(el("dt", pair[0])); facts.appendChild(el("dd", pair[1]));
  });
  header.appendChild(facts);
  meta.notes.forEach(function (note) { header.appendChild(el("p", note, "note")); });
  app.appendChild(header);

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
      charts.push({tag: tag, box: box, plot: null});
    });
    slider.addEventListener("input", function () {
      state.smoothing = Number(slider.value); shown.textContent = state.smoothing.toFixed(2); redraw();
    });
    log.addEventListener("change", function () { state.log = log.checked; redraw(); });
    axis.addEventListener("change", function () { state.x = axis.value; redraw(); });
  }

  function table(tag) {
    // [x, raw and smoothed y of each run] over the union of the runs' x values (uPlot.join)
    var entries = data.scalars[tag], tables = [], runs = [];
    entries.forEach(function (entry) {
      var d = decoded(entry);
      var xs = Array.from(d[state.x]);
      var raw = d.value.map(function (v) { return isFinite(v) ? v : null; });
      var smoothed = smooth(d.value, state.smoothing).map(function (v) { return isFinite(v) ? v : null; });
      tables.push([xs, raw, smoothed]);
      runs.push(entry.run);
    });
    return {joined: uPlot.join(tables), runs: runs};
  }

  function draw(chart) {
    var t = table(chart.tag), series = [{label: state.x, value: function (u, v) {
      return state.x === "wall" && v !== null ? new Date(v * 1000).toISOString().replace("T", " ").slice(0, 19) : formatted(v);
    }}];
    t.runs.forEach(function (run, i) {
      var color = COLORS[i % COLORS.length];
      series.push({label: run + " (raw)", stroke: color + "40", width: 1, spanGaps: true, value: function (u, v) { return formatted(v); }});
      series.push({label: run, stroke: color, width: 1.5, spanGaps: true, value: function (u, v) { return formatted(v); }});
    });
    var options = {
      width: Math.max(chart.box.clientWidth - 16, 300), height: 260, series: series,
      scales: {x: {time: state.x === "wall"}, y: {distr: state.log ? 3 : 1}},
      legend: {live: true}, cursor: {focus: {prox: 16}},
    };
    if (chart.plot) chart.plot.destroy();
    chart.plot = new uPlot(options, t.joined, chart.box);
    chart.runs = t.runs;
  }
  function redraw() { charts.forEach(function (c) { if (c.plot) draw(c); }); }

  var seen = "IntersectionObserver" in window ? new IntersectionObserver(function (found) {
    found.forEach(function (entry) {
      if (!entry.isIntersecting) return;
      var chart = charts.filter(function (c) { return c.box === entry.target; })[0];
      if (chart && !chart.plot) draw(chart);
    });
  }, {rootMargin: "400px"}) : null;
  charts.forEach(function (c) { if (seen) seen.observe(c.box); else draw(c); });

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
        var tr = el("tr");
        row.forEach(function (cell) { tr.appendChild(el("td", formatted(cell))); });
        body.appendChild(tr);
      });
    }
    fill();
    hp.appendChild(tbl);
    app.appendChild(hp);
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
    var img = el("img"); img.src = item.src; img.alt = "step " + item.step; holder.appendChild(img);
  });
  steppedSection("text", "Text", data.texts, function (holder, item) {
    var div = el("div", null, "markdown"); div.innerHTML = item.html; holder.appendChild(div);  // sanitized (page.py)
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
                            scales: {x: {time: false}}}, [d.step].concat(bands), box);
        }
        if (seen) {
          var watch = new IntersectionObserver(function (found) {
            if (found.some(function (e) { return e.isIntersecting; }) && !plot) { drawBands(); watch.disconnect(); }
          }, {rootMargin: "400px"});
          watch.observe(box);
        } else drawBands();
      });
    });
    app.appendChild(ds);
  }
  if (!tags.length && !data.hparams.rows.length && !dtags.length && !Object.keys(data.images).length &&
      !Object.keys(data.texts).length) {
    app.appendChild(el("p", "Nothing to show: no scalars, hparams, images, text or histograms were found in " + meta.logdir, "empty"));
  }

  // -- what was drawn, for the tests ----------------------------------------------------------
  var opened = performance.now();  // since the navigation began: parsing the page included
  if (location.hash === "#selftest") setTimeout(selftest, 100);  // once uPlot has laid its charts out
  function selftest() {
    charts.forEach(function (c) { if (!c.plot) draw(c); });
    var result = {opened_ms: opened, resources: performance.getEntriesByType("resource").length,
                  charts: {}, cursor: null, smoothed: {}};
    charts.forEach(function (c) { result.charts[c.tag] = c.runs; });
    if (charts.length) {
      var first = charts[0], plot = first.plot, k = Math.floor(plot.data[0].length / 2);
      plot.setCursor({left: plot.valToPos(plot.data[0][k], "x"), top: 10});
      var values = Array.prototype.map.call(plot.root.querySelectorAll(".u-legend .u-value"),
                                            function (n) { return n.textContent; });
      result.cursor = {tag: first.tag, x: plot.data[0][k], legend: values,
                       labels: plot.series.map(function (s) { return s.label; })};
      Object.keys(data.scalars).forEach(function (tag) {
        result.smoothed[tag] = {};
        data.scalars[tag].forEach(function (entry) {
          result.smoothed[tag][entry.run] = smooth(decoded(entry).value, 0.6).map(function (v) { return isFinite(v) ? v : String(v); });
        });
      });
    }
    var pre = el("pre", JSON.stringify(result)); pre.id = "selftest";
    document.body.appendChild(pre);
  }
})();
