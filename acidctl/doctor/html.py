"""``acidctl doctor --html FILE``: one self-contained HTML report.

Rendered with Jinja2 (autoescaping on); the charts are plotly.js, inlined from the ``plotly``
package (``plotly.offline.get_plotlyjs()``), so the file needs no network access to open. The
page holds: summary tiles, the findings (sortable by clicking a column header), per-table
charts of delta counts and bytes, a per-partition timeline of bases and deltas by write id, and
the compaction history (chart and table).

When every chart has rendered, the page sets ``data-charts-rendered`` on ``<body>`` to the
number of charts; script errors are collected into ``#js-errors`` (tests/doctor/test_html.py
checks both in a headless Chromium).
"""

from __future__ import annotations

import datetime as _dt

from acidctl.units import duration, plural, size

#: partitions with a timeline chart (the ones with the most directories first)
MAX_TIMELINES = 20
#: tables in the per-table charts (most deltas first)
MAX_TABLES = 60
#: history rows in the compaction history
MAX_HISTORY = 2000

_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>acidctl doctor report</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.sub { color: #666; }
.tiles { display: flex; flex-wrap: wrap; gap: 0.8em; margin: 1em 0; }
.tile { border: 1px solid #ddd; border-radius: 6px; padding: 0.6em 1em; min-width: 8em; }
.tile .v { font-size: 1.8em; font-weight: 600; }
.tile.error .v { color: #c0392b; } .tile.warn .v { color: #d68910; } .tile.info .v { color: #2e86c1; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
th, td { border-bottom: 1px solid #eee; padding: 0.3em 0.5em; text-align: left; vertical-align: top; }
th { cursor: pointer; background: #f7f7f7; user-select: none; }
th.sorted-asc::after { content: " \25B2"; } th.sorted-desc::after { content: " \25BC"; }
td.sev-error { color: #c0392b; font-weight: 600; } td.sev-warn { color: #d68910; } td.sev-info { color: #2e86c1; }
code { background: #f4f4f4; padding: 0 0.2em; }
td.name { white-space: nowrap; } /* table/partition names are never wrapped (ds=2026- / 01-01) */
.chart { width: 100%; min-height: 320px; }
#js-errors { color: #c0392b; }
</style>
<script>
window.__jsErrors = [];
window.addEventListener("error", function (e) { window.__jsErrors.push(String(e.message)); });
</script>
<script>{{ plotly_js|safe }}</script>
</head>
<body>
<h1>acidctl doctor</h1>
<div class="sub">Hive {{ report.hive_version }} metastore &middot; generated {{ generated }} &middot;
{{ listings }} in {{ elapsed }}</div>
<div class="tiles">
{% for n, label, cls in tiles %}  <div class="tile {{ cls }}"><div class="v">{{ n }}</div>{{ label }}</div>
{% endfor %}
</div>
{% if report.checks_skipped %}
<div class="skipped" id="checks-skipped"><b>Not checked</b> ({{ report.checks_skipped|map(attribute="needs")|sum(start=[])|unique|sort|join(", ") }} not offered by the
{{ "Thrift API" if report.metastore_source == "thrift" else "metastore" }}):
<ul>{% for c in report.checks_skipped %}<li>{{ c.code }}{% if c.partial %} (partly: {{ c.detail }}){% endif %}: needs {{ c.needs|join(", ") }}</li>{% endfor %}</ul>
</div>
{% endif %}

<h2>Findings ({{ report.findings|length }})</h2>
<table class="sortable" id="findings">
<thead><tr><th data-type="rank">Severity</th><th>Code</th><th>Subject</th><th>Message</th><th>Fix</th></tr></thead>
<tbody>
{% for f in report.findings %}
<tr><td class="sev-{{ f.severity }}" data-sort="{{ {'error': 2, 'warn': 1, 'info': 0}[f.severity] }}">{{ f.severity }}</td>
<td>{{ f.code }}</td><td class="name">{{ f.subject }}</td><td>{{ f.message }}</td>
<td>{% if f.fix %}<code>{{ f.fix }}</code>{% endif %}</td></tr>
{% endfor %}
</tbody>
</table>

<h2>Deltas per table</h2>
<div id="chart-delta-counts" class="chart"></div>
<div id="chart-delta-bytes" class="chart"></div>

<h2>Bases and deltas by write id</h2>
<div class="sub">One timeline per partition (the {{ timelines|length }} with the most directories): each bar spans
the directory's write ids; colour = its role for a fresh reader.</div>
{% for t in timelines %}<div id="chart-timeline-{{ loop.index0 }}" class="chart"></div>
{% endfor %}

<h2>Compaction history ({{ history|length }})</h2>
<div id="chart-history" class="chart"></div>
<table class="sortable" id="history">
<thead><tr><th data-type="num">Id</th><th>Table</th><th>Partition</th><th>Type</th><th>State</th><th data-type="num">Highest write id</th><th>Start</th><th>End</th><th>Error</th></tr></thead>
<tbody>
{% for h in history %}
<tr><td>{{ h.id }}</td><td class="name">{{ h.table }}</td><td class="name">{{ h.partition or "" }}</td><td>{{ h.type }}</td><td>{{ h.state }}</td>
<td>{{ h.highest_write_id if h.highest_write_id is not none else "" }}</td><td>{{ h.start_text }}</td><td>{{ h.end_text }}</td><td>{{ h.error or "" }}</td></tr>
{% endfor %}
</tbody>
</table>
<div id="js-errors"></div>

<script>
(function () {
  var data = {{ charts|tojson }};
  var layoutBase = {margin: {t: 40, l: 60, r: 20, b: 80}, barmode: "stack"};
  var jobs = [];
  function plot(id, traces, layout) {
    var el = document.getElementById(id);
    if (!el) { return; }
    jobs.push(Plotly.newPlot(el, traces, Object.assign({}, layoutBase, layout), {displaylogo: false, responsive: true}));
  }
  plot("chart-delta-counts", data.counts, {title: {text: "Current deltas and delete deltas per table"}});
  plot("chart-delta-bytes", data.bytes, {title: {text: "Bytes of current deltas, delete deltas and bases per table"}});
  data.timelines.forEach(function (t, i) {
    plot("chart-timeline-" + i, t.traces, {title: {text: t.title}, barmode: "overlay",
      xaxis: t.xaxis, yaxis: {automargin: true}, height: Math.max(260, 40 + 22 * t.rows)});
  });
  plot("chart-history", data.history, data.history_layout);
  Promise.all(jobs).then(function () {
    document.body.setAttribute("data-charts-rendered", String(jobs.length));
  }, function (e) { window.__jsErrors.push(String(e)); });

  // Click-to-sort for the two tables: a dozen lines of DOM code; no table library is worth
  // shipping inline for this.
  document.querySelectorAll("table.sortable th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var table = th.closest("table"), body = table.tBodies[0];
      var asc = !th.classList.contains("sorted-asc");
      table.querySelectorAll("th").forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
      th.classList.add(asc ? "sorted-asc" : "sorted-desc");
      var key = function (tr) {
        var td = tr.children[col], v = td.getAttribute("data-sort") || td.textContent;
        return th.dataset.type ? parseFloat(v) || 0 : v.toLowerCase();
      };
      Array.from(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      }).forEach(function (tr) { body.appendChild(tr); });
    });
  });
  setTimeout(function () {
    document.getElementById("js-errors").textContent = window.__jsErrors.join("\n");
  }, 0);
  window.addEventListener("load", function () {
    document.getElementById("js-errors").textContent = window.__jsErrors.join("\n");
  });
})();
</script>
</body>
</html>
"""

#: one colour per directory kind in every chart (the per-table bars and the timelines); aborted
#: has its own, unlike any kind a reader reads
_ROLE_COLOURS = {
    "base": "#1f77b4",
    "delta": "#2ca02c",
    "delete delta": "#d62728",
    "obsolete": "#7f7f7f",
    "aborted": "#ff7f0e",
    "not visible yet": "#9467bd",
    "unusable base": "#8c564b",
    "original": "#17becf",
    "ignored": "#bcbd22",
    "invalid": "#e377c2",
}


def _ts(ms) -> str:
    if not ms:
        return ""
    return _dt.datetime.fromtimestamp(int(ms) / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


#: one colour per compaction state in "Compactions over time" (its legend names them)
_STATE_COLOURS = {
    "initiated": "#9467bd",
    "working": "#17becf",
    "ready for cleaning": "#bcbd22",
    "succeeded": "#1f77b4",
    "failed": "#d62728",
    "did not initiate": "#7f7f7f",
    "refused": "#8c564b",
    "aborted": "#ff7f0e",
}


def _write_id_axis(top: int) -> dict:
    """A write-id axis with integer ticks (write ids are integers: never 0.5), about ten."""
    step, k = 1, 0
    while top / step > 10:  # 1, 2, 5, 10, 20, 50, ...
        k += 1
        step = (1, 2, 5)[k % 3] * 10 ** (k // 3)
    return {"title": {"text": "write id"}, "tick0": 0, "dtick": step, "tickformat": "d"}


def _time_axis(times_ms: list[int]) -> dict:
    """A date axis padded to at least an hour either side, so one compaction is not a dot on an
    axis ticked in fractions of a second."""
    if not times_ms:
        return {"type": "date"}
    lo, hi = min(times_ms), max(times_ms)
    pad = max((hi - lo) // 20, 3600 * 1000)

    def iso(ms: int) -> str:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).isoformat()

    return {"type": "date", "range": [iso(lo - pad), iso(hi + pad)], "tickformat": "%Y-%m-%d %H:%M"}


def chart_data(report: dict, scan) -> tuple[dict, list[dict], list[dict]]:
    """(plotly traces for every chart, timeline descriptors, history rows) — plain data."""
    from acidctl.doctor.findings import STATES, TYPES, history_rows, queue_rows

    wh = scan.warehouse
    per_table: dict[str, dict[str, int]] = {}
    for p in report["partitions"]:
        t = per_table.setdefault(
            p["table"], {"deltas": 0, "delete_deltas": 0, "delta_bytes": 0, "delete_delta_bytes": 0, "base_bytes": 0}
        )
        t["deltas"] += p["delta_count"]
        t["delete_deltas"] += p["delete_delta_count"]
        t["delta_bytes"] += p["delta_bytes"]
        t["delete_delta_bytes"] += p["delete_delta_bytes"]
        t["base_bytes"] += p["base_bytes"]
    top = sorted(per_table.items(), key=lambda kv: -(kv[1]["deltas"] + kv[1]["delete_deltas"]))[:MAX_TABLES]
    names = [k for k, _ in top]

    def bar(name: str, kind: str, values: list[int]) -> dict:
        return {"type": "bar", "name": name, "x": names, "y": values, "marker": {"color": _ROLE_COLOURS[kind]}}

    counts = [
        bar("deltas", "delta", [v["deltas"] for _, v in top]),
        bar("delete deltas", "delete delta", [v["delete_deltas"] for _, v in top]),
    ]
    nbytes = [
        bar(label, kind, [v[key] for _, v in top])
        for label, kind, key in (
            ("delta bytes", "delta", "delta_bytes"),
            ("delete delta bytes", "delete delta", "delete_delta_bytes"),
            ("base bytes", "base", "base_bytes"),
        )
    ]
    timelines = []
    parts = sorted(scan.partitions, key=lambda p: -len(p.dirs))[:MAX_TIMELINES]
    for p in parts:
        dirs = [
            d
            for d in p.dirs
            if d["min_write_id"] is not None and d["max_write_id"] is not None and -1 < d["max_write_id"] < 2**62
        ]
        if not dirs:
            continue
        by_role: dict[str, dict] = {}
        for d in dirs:
            lo = max(int(d["min_write_id"]), 0)
            hi = int(d["max_write_id"])
            tr = by_role.setdefault(
                d["role"],
                {
                    "type": "bar",
                    "orientation": "h",
                    "name": d["role"],
                    "x": [],
                    "base": [],
                    "y": [],
                    "text": [],
                    "marker": {"color": _ROLE_COLOURS.get(d["role"], "#333")},
                },
            )
            tr["base"].append(lo - 0.45 if d["kind"] != "base" else 0)
            tr["x"].append((hi - lo + 0.9) if d["kind"] != "base" else hi + 0.45)
            tr["y"].append(d["name"])
            tr["text"].append(f"{size(d['bytes'])}, {plural(d['files'], 'file')}")
        title = p.spec
        top_wid = max(int(d["max_write_id"]) for d in dirs)
        timelines.append(
            {"title": title, "traces": list(by_role.values()), "rows": len(dirs), "xaxis": _write_id_axis(top_wid)}
        )
    hist = []
    for r in sorted(history_rows(wh) + queue_rows(wh), key=lambda r: -int(r["id"]))[:MAX_HISTORY]:
        hist.append(
            {
                "id": int(r["id"]),
                "table": f"{r['database']}.{r['table']}",
                "partition": r["partition"],
                "type": TYPES.get(r.get("type"), r.get("type")),
                "state": STATES.get(r.get("state"), r.get("state")),
                "highest_write_id": r.get("highest_write_id"),
                "start": r.get("start") or r.get("enqueue_time"),
                "end": r.get("end"),
                "error": r.get("error_message"),
                "start_text": _ts(r.get("start") or r.get("enqueue_time")),
                "end_text": _ts(r.get("end")),
            }
        )
    by_state: dict[str, dict] = {}
    for h in hist:
        if not h["start"]:
            continue
        tr = by_state.setdefault(
            h["state"],
            {
                "type": "scatter",
                "mode": "markers",
                "name": h["state"],
                "x": [],
                "y": [],
                "text": [],
                "marker": {"color": _STATE_COLOURS.get(h["state"], "#333"), "size": 10},
            },
        )
        tr["x"].append(_dt.datetime.fromtimestamp(int(h["start"]) / 1000, _dt.timezone.utc).isoformat())
        tr["y"].append(h["table"] + (f"/{h['partition']}" if h["partition"] else ""))
        tr["text"].append(f"#{h['id']} {h['type']}")
    history_layout = {
        "title": {"text": "Compactions over time (by state)"},
        "showlegend": True,  # also for one state: the legend names the colour
        "legend": {"title": {"text": "state"}},
        "xaxis": _time_axis([int(h["start"]) for h in hist if h["start"]]),
        "yaxis": {"automargin": True},
    }
    charts = {
        "counts": counts,
        "bytes": nbytes,
        "timelines": timelines,
        "history": list(by_state.values()),
        "history_layout": history_layout,
    }
    return charts, timelines, hist


def render_html(report: dict, scan) -> str:
    import jinja2
    from plotly.offline import get_plotlyjs

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    charts, timelines, hist = chart_data(report, scan)
    s = report["summary"]
    tiles = [
        (s["tables_checked"], "ACID table" if s["tables_checked"] == 1 else "ACID tables", ""),
        (s["partitions_checked"], "partition" if s["partitions_checked"] == 1 else "partitions", ""),
        (s["errors"], "error" if s["errors"] == 1 else "errors", "error"),
        (s["warnings"], "warning" if s["warnings"] == 1 else "warnings", "warn"),
        (s["info"], "info", "info"),
        (s["open_txns"], "open txn" if s["open_txns"] == 1 else "open txns", ""),
        (s["aborted_txns"], "aborted txn" if s["aborted_txns"] == 1 else "aborted txns", ""),
        (s["locks"], "lock" if s["locks"] == 1 else "locks", ""),
        (s["compaction_queue"], "queued compaction" if s["compaction_queue"] == 1 else "queued compactions", ""),
    ]
    return env.from_string(_TEMPLATE).render(
        report=report,
        s=s,
        tiles=tiles,
        listings=plural(s["directory_listings"], "directory listing"),
        elapsed=duration(s["seconds"]),
        charts=charts,
        timelines=timelines,
        history=hist,
        plotly_js=get_plotlyjs(),
        generated=_ts(scan.warehouse.now_ms) + " UTC",
    )


def write_html(path: str, report: dict, scan) -> None:
    """Write the report (UTF-8) to a local path."""
    from acidctl.errors import StorageUnavailable, UsageError

    try:
        html = render_html(report, scan)
    except ImportError as e:
        raise UsageError(
            f"--html needs the plotly and Jinja2 packages: {e}", hint="pip install acidctl[html]"
        ) from None
    try:
        from acidctl.fs import open_local_new

        with open_local_new(path, "w", encoding="utf-8") as f:
            f.write(html)
    except OSError as e:
        raise StorageUnavailable(f"cannot write {path}: {e.strerror or e}") from None
