"""Text tables fit the terminal (wrapping the widest, free-text cells); --wide, pipes and JSON
keep full lines."""

from __future__ import annotations

import json

from acidctl.cli.output import fit_widths, table

ROWS = [
    [
        "delete_delta_0000001_0000001_0000",
        "1",
        "obsolete",
        "covered by base_0000007 (a compacted base of write ids up to 7; readers skip it)",
    ],
    ["base_0000007", "2", "base", "the newest usable base"],
]
HEADERS = ["NAME", "READ#", "ROLE", "REASON"]


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_fit_keeps_short_columns_whole_and_wraps_free_text():
    natural = [35, 7, 10, 82]
    got = fit_widths(natural, 80)
    assert got is not None
    # ids and states untouched; only free-text columns shrink, never below 16
    assert got[1] is None and got[2] is None
    assert all(w is None or w >= 16 for w in got)
    widths = [w if w is not None else n for w, n in zip(got, natural)]
    assert sum(widths) + 2 * 3 <= 80
    assert fit_widths([10, 10], 80) is None


def test_table_fits_the_given_width_and_keeps_every_word():
    text = table(ROWS, HEADERS, width=60)
    assert _widest(text) <= 60
    words = " ".join(text.split())
    for w in ("covered", "compacted", "readers", "skip", "newest", "usable"):
        assert w in words
    full = table(ROWS, HEADERS, width=None)
    assert _widest(full) > 100


def test_columns_env_and_wide_flag(cli, tmp_path, monkeypatch):
    r = cli("-o", "json", "demo", tmp_path / "demo")
    assert r.code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    monkeypatch.setenv("COLUMNS", "120")
    narrow = cli("--metastore", url, "state", "default.sales")
    # headings name the absolute partition path (kept whole); every table line fits
    assert narrow.code == 0
    assert _widest("\n".join(x for x in narrow.stdout.splitlines() if str(tmp_path) not in x)) <= 120
    wide = cli("--metastore", url, "--wide", "state", "default.sales")
    assert wide.code == 0 and _widest(wide.stdout) > 120
    # the same facts, only laid out differently
    assert " ".join(narrow.stdout.split()).count("delete_delta") <= " ".join(wide.stdout.split()).count("delete_delta")
    js = cli("--metastore", url, "-o", "json", "state", "default.sales")
    monkeypatch.delenv("COLUMNS")
    js_wide = cli("--metastore", url, "-o", "json", "state", "default.sales")

    def shape(doc):  # what the layout could change (ages and times move between runs)
        return [(p["partition"], [(e["name"], e["role"]) for e in p["entries"]]) for p in doc["partitions"]], sorted(
            (f["check"], f["path"]) for f in doc["findings"]
        )

    assert shape(json.loads(js.stdout)) == shape(json.loads(js_wide.stdout))
    # no COLUMNS and not a terminal (a pipe): full lines
    piped = cli("--metastore", url, "state", "default.sales")

    def undated(text):  # ages ("0 s old") move between runs
        import re

        return re.sub(r"\d+(\.\d+)? s\b", "N s", text)

    assert undated(piped.stdout) == undated(wide.stdout)


def test_headers_stack_one_word_a_line_when_wrapping_cells_is_not_enough():
    rows = [["default.sales/ds=2026-01-01", "3", "3501", "2", "2320", "0", "1716", "none"]]
    headers = ["PARTITION", "DELTAS", "BYTES", "DELETE DELTAS", "BYTES", "BASE BYTES", "OBSOLETE BYTES", "DUE"]
    one_line = table(rows, headers, width=None)
    assert _widest(one_line) > 80 and "DELETE DELTAS" in one_line
    # one-line headers need 100 columns even with the partition wrapped to 16; stacked, 82
    text = table(rows, headers, width=85)
    assert _widest(text) <= 85
    first, second = text.splitlines()[:2]
    assert first.split() == ["PARTITION", "DELTAS", "BYTES", "DELETE", "BYTES", "BASE", "OBSOLETE", "DUE"]
    assert second.split() == ["DELTAS", "BYTES", "BYTES"]
    # every value still there, in order: the partition name wrapped inside its column
    first, rest = text.splitlines()[3], text.splitlines()[4:]
    assert first.split()[1:] == ["3", "3501", "2", "2320", "0", "1716", "none"]
    assert first.split()[0] + "".join(x.strip() for x in rest) == "default.sales/ds=2026-01-01"
    # a table that fits with one-line headers keeps them
    assert table(ROWS, HEADERS, width=60).splitlines()[0].split() == HEADERS


def test_doctor_prose_lines_wrap_to_the_terminal_and_lose_no_word(cli, demo, monkeypatch):
    wide = cli("--wide", "doctor")
    monkeypatch.setenv("COLUMNS", "70")
    narrow = cli("doctor")
    assert wide.code == narrow.code == 0
    finding_lines = [x for x in wide.stdout.splitlines() if x.startswith("[")]
    assert finding_lines and max(map(len, finding_lines)) > 70
    # prose lines (the summary, findings) fit 70 columns unless one word alone is longer
    lines = narrow.stdout.splitlines()
    prose = lines[: next(i for i, x in enumerate(lines) if x.startswith("PARTITION"))]
    for line in prose:
        if len(line) > 70 and not line.startswith("    fix: "):
            assert " " not in line.strip(), line
    # the same words in the same order (fix commands stay on one line for copy and paste)
    assert " ".join(narrow.stdout.split()).count("[READER_SPARK]") == " ".join(wide.stdout.split()).count(
        "[READER_SPARK]"
    )
    fixes = [x for x in narrow.stdout.splitlines() if x.startswith("    fix: ")]
    assert fixes == [x for x in wide.stdout.splitlines() if x.startswith("    fix: ")]


def test_clean_lists_paths_under_the_table_named_in_its_heading(cli, demo):
    """Text: paths relative to the table root printed in the heading; JSON: full paths."""
    import json

    root, _ = demo
    part = "default.sales/ds=2025-12-31"
    assert cli("compact", "--major", "--engine", "local", part).code == 0  # its inputs become obsolete
    text = cli("--wide", "clean", "default.sales", "--min-age", "0")
    assert text.code == 0, text
    lines = text.stdout.splitlines()
    table_root = str(root / "warehouse" / "sales")
    assert lines[0].endswith(" " + table_root)
    start = next(k for k, x in enumerate(lines) if x.startswith("ACTION")) + 2
    rows = []
    for x in lines[start:]:
        if not x.strip() or x.startswith(("compaction requests", "would delete")):
            break
        rows.append(x)
    assert rows and not any(table_root in r for r in rows)
    assert any(" ds=2025-12-31/delete_delta_0000001_0000001_0000 " in r for r in rows)
    doc = json.loads(cli("-o", "json", "clean", "default.sales", "--min-age", "0").stdout)
    assert doc["items"] and all(i["path"].startswith(table_root + "/") for i in doc["items"])
