"""`acidctl doctor --html FILE` rendered in a real headless Chromium (Debian package
``chromium``; scripts/install-test-servers.sh installs it): every chart renders, no script
error, the screenshot shows the charts' colours, and the file loads nothing from the network."""

from __future__ import annotations

import re
import shutil
import subprocess


from acidctl.metastore.init import init_metastore
from acidctl.metastore.recorder import Recorder
from tests.doctor.helpers import H_MS, compaction, now_ms, table
from tests.metastore.helpers import run_cli
from tests.servers import unavailable


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        msg = "chromium not installed (scripts/install-test-servers.sh installs it)"
        unavailable(msg)
    return exe


def _run_chromium(exe, tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / "chrome-profile"
    return subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=15000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_html_report_renders_in_chromium(tmp_path, capsys):
    exe = _chromium()
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=4)
    rec = Recorder(url)
    b = {"bucket_00000": 1000}
    table(
        rec,
        tmp_path,
        "sales",
        partitions={
            "ds=1": {
                "base_0000002": b,
                "delta_0000001_0000001_0000": b,
                "delta_0000003_0000003_0000": b,
                "delete_delta_0000004_0000004_0000": b,
            },
            "ds=2": {"delta_0000001_0000001_0000": b},
        },
        write_ids=4,
    )
    table(rec, tmp_path, "users", dirs={"delta_0000001_0000001_0000": b, "delta_0000002_0000002_0000": b}, write_ids=2)
    now = now_ms(rec)
    compaction(rec, "db", "sales", partition="ds=1", hw=2, state="s")
    compaction(rec, "db", "users", state="f")
    rec.open_txn(user="etl<script>", host="h", now_ms=now - 80 * H_MS)  # an error; markup in a value
    out = tmp_path / "report.html"
    capsys.readouterr()
    assert run_cli(["--metastore", url, "doctor", "--html", str(out)]) == 4
    html = out.read_text()
    # self-contained: no external script, stylesheet or image
    assert not re.search(r"<script[^>]+src=", html) and not re.search(r"<link[^>]+href=", html)
    assert not re.search(r"<img[^>]+src=\"?https?:", html)
    assert "etl&lt;script&gt;" in html and "etl<script>" not in html  # autoescaped

    _check_chart_data(html)
    # names are never wrapped inside a table cell (report #31: ds=2026- / 01-01)
    assert re.search(r"td\.name \{ white-space: nowrap; \}", html)
    assert '<td class="name">db.sales/ds=1</td>' in html
    # tiles and the heading count in words that agree with the numbers
    assert re.search(r'<div class="v">1</div>error\b', html) and "1</div>errors" not in html

    dom = _run_chromium(exe, tmp_path, "--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    # 2 per-table charts + 3 partition timelines + the history chart
    m = re.search(r'data-charts-rendered="(\d+)"', dom.stdout)
    assert m and int(m.group(1)) == 6, dom.stdout[-2000:]
    assert re.search(r'<div id="js-errors"></div>', dom.stdout), re.findall(
        r'<div id="js-errors">.*?</div>', dom.stdout, re.S
    )
    assert dom.stdout.count('class="main-svg"') >= 12  # plotly draws two SVG layers per chart
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert console == [], console

    png = tmp_path / "shot.png"
    shot = _run_chromium(exe, tmp_path, "--window-size=1280,2600", f"--screenshot={png}", out.as_uri())
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    from PIL import Image

    im = Image.open(png).convert("RGB")
    colours = dict((c, n) for n, c in im.getcolors(1 << 24))
    # one colour per directory kind in the bars and the timelines: deltas green (#2ca02c),
    # delete deltas red (#d62728), bases blue (#1f77b4); orange (#ff7f0e) is only for aborted
    # directories, and this warehouse has none
    assert colours.get((44, 160, 44), 0) > 2000
    assert colours.get((214, 39, 40), 0) > 2000
    assert colours.get((31, 119, 180), 0) > 2000
    assert colours.get((255, 127, 14), 0) < 200
    # the top of the page (tiles) is not blank either
    top = im.crop((0, 0, 1280, 200)).getcolors(1 << 24)
    assert len(top) > 20


def _check_chart_data(html: str) -> None:
    """The charts' data (the JSON the page plots): colours per kind agree across charts, the
    write-id axes tick at integers, hover labels pluralise, and compactions over time has a
    legend of states and an axis spanning at least two hours."""
    import datetime as dt
    import json

    m = re.search(r"var data = (\{.*?\});\n", html, re.S)
    assert m
    data = json.loads(m.group(1))
    colour = {}
    for tr in data["counts"] + data["bytes"]:
        kind = {"deltas": "delta", "delta bytes": "delta", "delete deltas": "delete delta"}.get(tr["name"], tr["name"])
        kind = {"delete delta bytes": "delete delta", "base bytes": "base"}.get(kind, kind)
        colour.setdefault(kind, set()).add(tr["marker"]["color"])
    for t in data["timelines"]:
        for tr in t["traces"]:
            colour.setdefault(tr["name"], set()).add(tr["marker"]["color"])
            for label in tr["text"]:
                n = int(re.search(r"(\d+) files?$", label).group(1))
                assert label.endswith(" file" if n == 1 else " files"), label
        axis = t["xaxis"]
        assert axis["tickformat"] == "d" and isinstance(axis["dtick"], int) and axis["dtick"] >= 1
    assert all(len(c) == 1 for c in colour.values()), colour  # one colour per kind everywhere
    assert colour["delta"] != colour["delete delta"] != colour["base"]
    lay = data["history_layout"]
    assert lay["showlegend"] is True and lay["legend"]["title"]["text"] == "state"
    assert {tr["name"] for tr in data["history"]} <= {"succeeded", "failed", "initiated", "working"}
    lo, hi = (dt.datetime.fromisoformat(x) for x in lay["xaxis"]["range"])
    assert (hi - lo).total_seconds() >= 2 * 3600
