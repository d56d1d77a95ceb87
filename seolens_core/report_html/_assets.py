"""The report's inline stylesheet and script (no CDN, no network: the page's CSP forbids fetching anything).

The script only reads the JSON data block and builds table rows with DOM APIs (`textContent`,
`setAttribute`), never `innerHTML`; links get an href only for http(s) URLs.
"""

from __future__ import annotations

CSS = """
:root{--fg:#1d2330;--muted:#667085;--line:#e4e7ec;--bg:#f6f7f9;--card:#fff;--accent:#2f6fdb}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
  color:var(--fg);background:var(--bg)}
header{background:#14213d;color:#fff;padding:18px 28px}
header h1{margin:0;font-size:20px;font-weight:600}
header .sub{color:#c9d2e3;font-size:13px;margin-top:4px;word-break:break-all}
main{padding:20px 28px;max-width:1400px;margin:0 auto}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;
  padding:16px 18px;margin-bottom:18px}
h2{font-size:16px;margin:0 0 12px}
h3{font-size:13px;margin:0 0 6px;color:var(--muted);font-weight:600}
.kpis{display:grid;grid-template-columns:repeat(auto-fill,minmax(140px,1fr));gap:10px}
.kpi{border:1px solid var(--line);border-radius:6px;padding:10px 12px}
.kpi .v{font-size:22px;font-weight:600}
.kpi .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.st-COMPLETED .v{color:#1a7f37}.st-FAILED .v{color:#c0392b}.st-CANCELLED .v{color:#b26a00}
.error{color:#c0392b;white-space:pre-wrap;word-break:break-word}
.notice{color:#8a5a00;background:#fff7e0;border:1px solid #f0d48a;border-radius:6px;padding:.5em .8em}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:16px 28px}
.chart-box{min-width:0}
svg.chart{width:100%;height:auto;display:block}
svg .grid{stroke:var(--line);stroke-width:1}
svg text{font-size:11px;fill:var(--muted)}
svg text.value{fill:var(--fg);font-weight:600}
svg text.axis-title{font-size:11px;fill:var(--fg)}
svg text.empty-note{font-size:14px}
.host{margin-top:12px}
.host h3{color:var(--fg);word-break:break-all}
.host .charts{grid-template-columns:repeat(auto-fill,minmax(300px,1fr))}
table.settings th{position:static;cursor:default;width:220px}
.controls{display:flex;gap:10px;align-items:center;margin-bottom:10px;flex-wrap:wrap}
.controls input{flex:1;min-width:220px;padding:7px 10px;border:1px solid #cfd4dc;
  border-radius:6px;font:inherit}
.controls select{padding:7px 8px;border:1px solid #cfd4dc;border-radius:6px;font:inherit}
.count{color:var(--muted);font-size:13px}
.table-wrap{overflow:auto;max-height:720px;border:1px solid var(--line);border-radius:6px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{position:sticky;top:0;background:#f0f2f5;cursor:pointer;user-select:none;white-space:nowrap;font-size:12px}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.url{min-width:260px}td.url a,td.url span{word-break:break-all}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.code{font-family:"DejaVu Sans Mono",ui-monospace,monospace;font-size:12px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.sev{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.sev-critical{background:#c0392b}.sev-warning{background:#d97706}
.sev-notice{background:#2f6fdb}.sev-info{background:#7a8599}
.codes{columns:2 320px;margin:0;padding:0;list-style:none}
table.signals{margin-bottom:12px}table.signals td.code{font-family:monospace;font-size:12px}
.codes li{display:flex;justify-content:space-between;gap:8px;padding:2px 0;
  border-bottom:1px dotted var(--line)}
footer{color:var(--muted);font-size:12px;padding:0 28px 20px;max-width:1400px;margin:0 auto}
"""

JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("seolens-data").textContent);
  var LIMIT = 1000;
  var SEV = {critical: 0, warning: 1, notice: 2, info: 3};

  function safeHref(u) {
    if (typeof u !== "string") { return null; }
    try {
      var p = new URL(u);
      return (p.protocol === "http:" || p.protocol === "https:") ? p.href : null;
    } catch (e) { return null; }
  }

  function cell(col, value) {
    var td = document.createElement("td");
    td.className = col.type;
    if (value === null || value === undefined) { return td; }
    if (col.type === "url") {
      var href = safeHref(value);
      var el = document.createElement(href ? "a" : "span");
      if (href) {
        el.setAttribute("href", href);
        el.setAttribute("target", "_blank");
        el.setAttribute("rel", "noopener noreferrer nofollow");
      }
      el.textContent = String(value);
      td.appendChild(el);
    } else if (col.type === "sev") {
      var s = document.createElement("span");
      s.className = "sev sev-" + (SEV.hasOwnProperty(value) ? value : "info");
      s.textContent = String(value);
      td.appendChild(s);
    } else {
      td.textContent = Array.isArray(value) ? value.join(", ") : String(value);
    }
    return td;
  }

  function compare(col, a, b) {
    var x = a[col.key], y = b[col.key];
    if (col.type === "sev") {
      x = SEV.hasOwnProperty(x) ? SEV[x] : 9; y = SEV.hasOwnProperty(y) ? SEV[y] : 9;
    }
    var xn = (x === null || x === undefined || x === ""), yn = (y === null || y === undefined || y === "");
    if (xn || yn) { return xn === yn ? 0 : (xn ? 1 : -1); }
    if (typeof x === "number" && typeof y === "number") { return x - y; }
    return String(x).localeCompare(String(y));
  }

  function makeTable(root, rows, columns, sortKey) {
    var input = root.querySelector("input.filter");
    var sevSelect = root.querySelector("select.severity");
    var count = root.querySelector(".count");
    var table = root.querySelector("table");
    var thead = table.createTHead();
    var tbody = table.tBodies[0] || table.appendChild(document.createElement("tbody"));
    var haystack = rows.map(function (r) {
      return columns.map(function (c) {
        var v = r[c.key];
        return v === null || v === undefined ? "" : String(v);
      }).join("\\u0001").toLowerCase();
    });
    var state = {key: sortKey, dir: 1};
    var headRow = thead.insertRow();
    var ths = columns.map(function (col) {
      var th = document.createElement("th");
      th.textContent = col.label;
      th.setAttribute("data-key", col.key);
      th.addEventListener("click", function () {
        state.dir = (state.key === col.key) ? -state.dir : 1;
        state.key = col.key;
        render();
      });
      headRow.appendChild(th);
      return th;
    });

    function render() {
      var terms = (input.value || "").toLowerCase().split(/\\s+/).filter(Boolean);
      var sev = sevSelect ? sevSelect.value : "";
      var idx = [];
      for (var i = 0; i < rows.length; i++) {
        if (sev && rows[i].severity !== sev) { continue; }
        var ok = true;
        for (var t = 0; t < terms.length; t++) {
          if (haystack[i].indexOf(terms[t]) < 0) { ok = false; break; }
        }
        if (ok) { idx.push(i); }
      }
      var col = columns.filter(function (c) { return c.key === state.key; })[0];
      if (col) {
        idx.sort(function (a, b) { return state.dir * compare(col, rows[a], rows[b]) || a - b; });
      }
      ths.forEach(function (th) {
        var k = th.getAttribute("data-key");
        if (k === state.key) { th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending"); }
        else { th.removeAttribute("aria-sort"); }
      });
      var frag = document.createDocumentFragment();
      var shown = Math.min(idx.length, LIMIT);
      for (var j = 0; j < shown; j++) {
        var row = rows[idx[j]];
        var tr = document.createElement("tr");
        columns.forEach(function (c) { tr.appendChild(cell(c, row[c.key])); });
        frag.appendChild(tr);
      }
      tbody.textContent = "";
      tbody.appendChild(frag);
      root.setAttribute("data-matching", String(idx.length));
      var capped = shown < idx.length ? " (first " + shown + " shown)" : "";
      var of = idx.length === rows.length ? "" : idx.length + " of ";
      count.textContent = of + rows.length + " rows" + capped;
    }

    input.addEventListener("input", render);
    if (sevSelect) { sevSelect.addEventListener("change", render); }
    render();
  }

  makeTable(document.getElementById("findings"), data.findings, [
    {key: "severity", label: "Severity", type: "sev"},
    {key: "code", label: "Code", type: "code"},
    {key: "url", label: "URL", type: "url"},
    {key: "detail", label: "Detail", type: "text"},
    {key: "related_url", label: "Related URL", type: "url"}
  ], "severity");
  makeTable(document.getElementById("pages"), data.pages, [
    {key: "url", label: "URL", type: "url"},
    {key: "status", label: "Status", type: "num"},
    {key: "outcome", label: "Outcome", type: "text"},
    {key: "indexability", label: "Indexability", type: "text"},
    {key: "depth", label: "Depth", type: "num"},
    {key: "ttfb_ms", label: "TTFB ms", type: "num"},
    {key: "inlinks", label: "Inlinks", type: "num"},
    {key: "title", label: "Title", type: "text"},
    {key: "alerts", label: "Alerts", type: "code"}
  ], "depth");
  document.body.setAttribute("data-ready", "1");
})();
"""
