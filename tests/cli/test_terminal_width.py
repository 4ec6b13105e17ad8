"""Text tables fit the terminal (wrapping the widest, free-text cells); --wide, pipes and JSON
keep full lines."""

from __future__ import annotations

import json

from acidctl.cli.output import Col, fit_widths, table

ROWS = [
    [
        "delete_delta_0000001_0000001_0000",
        "1",
        "obsolete",
        "covered by base_0000007 (a compacted base of write ids up to 7; readers skip it)",
    ],
    ["base_0000007", "2", "base", "the newest usable base"],
]
COLS = [Col("Name"), Col("Read#", "read_order"), Col("Role"), Col("Reason", text=True)]


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_fit_shrinks_only_free_text_and_never_below_its_floor():
    natural = [35, 7, 10, 82]
    got = fit_widths(natural, [None, None, None, 16], 80)
    assert got is not None
    # ids and states untouched; only the free-text column shrinks, to what is left
    assert got[:3] == [35, 7, 10]
    assert sum(got) + 2 * 3 == 80
    assert fit_widths([10, 10], [None, 5], 80) is None
    # not enough room: free text stops at its floor (its longest word), names keep their width
    assert fit_widths([70, 30], [None, 12], 40) == [70, 12]


def test_table_wraps_free_text_only_and_keeps_every_word():
    # 66: the name (33), READ# (5), ROLE (8), gaps (6) and the longest word of REASON (12)
    text = table(ROWS, COLS, width=66)
    assert _widest(text) <= 66
    words = " ".join(text.split())
    for w in ("covered", "compacted", "readers", "skip", "newest", "usable"):
        assert w in words
    # the name is on one line whatever the width
    assert any("delete_delta_0000001_0000001_0000" in line for line in text.splitlines())
    narrow = table(ROWS, COLS, width=30)
    assert any("delete_delta_0000001_0000001_0000" in line for line in narrow.splitlines())
    assert "base_0000007" in narrow.split()  # a word of free text is never split either
    full = table(ROWS, COLS, width=None)
    assert _widest(full) > 100
    # headers print in UPPER CASE whatever the declaration's case
    assert full.splitlines()[0].split() == ["NAME", "READ#", "ROLE", "REASON"]


def test_default_view_wide_and_empty():
    from acidctl.cli.output import set_wide

    cols = [Col("Name"), Col("Stmt", "statement_id", wide=True), Col("Reason", text=True)]
    rows = [["delta_1_1", "0", "read"]]
    assert table(rows, cols, width=None).splitlines()[0].split() == ["NAME", "REASON"]
    set_wide(True)
    try:
        assert table(rows, cols).splitlines()[0].split() == ["NAME", "STMT", "REASON"]
    finally:
        set_wide(False)
    assert table([], cols, empty="No deltas.") == "No deltas."
    assert table([], cols) == "(none)"


def test_columns_env_and_wide_flag(cli, tmp_path, monkeypatch):
    r = cli("-o", "json", "demo", tmp_path / "demo")
    assert r.code == 0
    url = f"sqlite:///{tmp_path / 'demo' / 'metastore.db'}"
    monkeypatch.setenv("COLUMNS", "80")
    narrow = cli("--metastore", url, "state", "default.sales")
    assert narrow.code == 0
    # headings name the absolute partition path (kept whole); every table line fits
    assert _widest("\n".join(x for x in narrow.stdout.splitlines() if str(tmp_path) not in x)) <= 80
    wide = cli("--metastore", url, "--wide", "state", "default.sales")
    assert wide.code == 0 and _widest(wide.stdout) > 80
    # -o wide adds the columns the default view leaves out
    assert "WRITE IDS" in wide.stdout and "WRITE IDS" not in narrow.stdout
    js = cli("--metastore", url, "-o", "json", "state", "default.sales")
    monkeypatch.delenv("COLUMNS")
    js_wide = cli("--metastore", url, "-o", "json", "state", "default.sales")

    def shape(doc):  # what the layout could change (ages and times move between runs)
        return [(p["partition"], [(e["name"], e["role"]) for e in p["entries"]]) for p in doc["partitions"]], sorted(
            (f["check"], f["path"]) for f in doc["findings"]
        )

    assert shape(json.loads(js.stdout)) == shape(json.loads(js_wide.stdout))
    # no COLUMNS and not a terminal (a pipe): the same default view, nothing wrapped
    piped = cli("--metastore", url, "state", "default.sales")

    def undated(text):  # ages ("151s old", "2m old") move between runs
        import re

        kept = [x for x in text.splitlines() if not set(x) <= {"-", " "}]  # the dash lines differ
        return re.sub(r"\b\d+(\.\d+)? ?[smhd]\b", "N", " ".join(" ".join(kept).split()))

    headers = [x.split() for x in piped.stdout.splitlines() if x.startswith("ROLE")]
    assert headers and all(h == ["ROLE", "NAME", "READ#", "SIZE", "REASON"] for h in headers)
    assert max(map(len, piped.stdout.splitlines())) > 80  # unwrapped
    # the same words in the same order, only laid out differently (the findings' order too)
    assert sorted(undated(piped.stdout).split()) == sorted(undated(narrow.stdout).split())


def test_headers_stack_one_word_a_line_when_wrapping_cells_is_not_enough():
    rows = [["default.sales/ds=2026-01-01", "3", "3501", "2", "2320", "0", "1716", "none"]]
    cols = [
        Col("Partition"),
        Col("Deltas"),
        Col("Bytes"),
        Col("Delete Deltas"),
        Col("Bytes", "delete_bytes"),
        Col("Base Bytes"),
        Col("Obsolete Bytes"),
        Col("Due", text=True),
    ]
    one_line = table(rows, cols, width=None)
    assert "DELETE DELTAS" in one_line
    # one-line headers need 91 columns; stacked, 75
    text = table(rows, cols, width=80)
    assert _widest(text) <= 80
    first, second = text.splitlines()[:2]
    assert first.split() == ["PARTITION", "DELTAS", "BYTES", "DELETE", "BYTES", "BASE", "OBSOLETE", "DUE"]
    assert second.split() == ["DELTAS", "BYTES", "BYTES"]
    # every value on one line: the partition is a name, never wrapped
    assert text.splitlines()[3].split() == rows[0]
    # a table that fits with one-line headers keeps them
    assert table(ROWS, COLS, width=66).splitlines()[0].split() == ["NAME", "READ#", "ROLE", "REASON"]


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
    """Text: one table per partition directory, headed by it under the table root printed in
    the first heading; JSON: full paths."""
    import json

    root, _ = demo
    part = "default.sales/ds=2025-12-31"
    assert cli("compact", "--major", "--engine", "local", part).code == 0  # its inputs become obsolete
    text = cli("--wide", "clean", "default.sales", "--min-age", "0")
    assert text.code == 0, text
    lines = text.stdout.splitlines()
    table_root = str(root / "warehouse" / "sales")
    assert lines[0].endswith(" " + table_root)
    head = lines.index("== ds=2025-12-31/")
    assert lines[head + 1].split()[:3] == ["ACTION", "KIND", "PATH"]
    rows = []
    for x in lines[head + 3 :]:
        if not x.strip() or x.startswith(("==", "compaction requests", "would delete")):
            break
        rows.append(x)
    assert rows and not any(table_root in r for r in rows)
    assert any(" delete_delta_0000001_0000001_0000 " in r for r in rows)
    doc = json.loads(cli("-o", "json", "clean", "default.sales", "--min-age", "0").stdout)
    assert doc["items"] and all(i["path"].startswith(table_root + "/") for i in doc["items"])
