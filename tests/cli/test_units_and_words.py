"""Units and words (issue 22, report #25-#32): sizes and durations one way in text, raw numbers
in JSON; one header style; an empty result says so; Hive's words instead of internal codes.

Expected values come from the definitions (binary units, the ``--min-age`` suffixes, Hive's
thrift ``TxnType`` enum, the ACID schema of orc-acid-files.md, the read order of
directory-state.md §3.1) and from what acidctl/demo.py documents about the demo warehouse."""

from __future__ import annotations

import json
import re

import pytest

from acidctl.durations import parse_age
from acidctl.units import duration, duration_ms, plural, ratio, size


def test_size_is_binary_units_and_exact_below_a_kib():
    assert size(0) == "0 B"
    assert size(772) == "772 B"
    assert size(1023) == "1023 B"
    assert size(1024) == "1.0 KiB"
    assert size(1536) == "1.5 KiB"
    assert size(3 * 2**20) == "3.0 MiB"
    assert size(5 * 2**30 + 2**29) == "5.5 GiB"
    assert size(None) == ""


@pytest.mark.parametrize(
    "seconds,text",
    [
        (0, "0s"),
        (0.228, "228ms"),
        (0.319, "319ms"),
        (3.2, "3.2s"),
        (3.0, "3s"),
        (45, "45s"),
        (90, "1m 30s"),
        (600, "10m"),
        (3600, "1h"),
        (2 * 3600 + 5 * 60, "2h 5m"),
        (86400, "1d"),
        (86400 + 3 * 3600, "1d 3h"),
    ],
)
def test_duration_uses_the_suffixes_the_options_accept(seconds, text):
    assert duration(seconds) == text
    if " " not in text:  # one unit: what a command prints can be typed back (--min-age 1h)
        assert parse_age(text) == pytest.approx(seconds, abs=0.001)


def test_duration_ms_ratio_and_plural():
    assert duration_ms(4000) == "4s" and duration_ms(500) == "500ms" and duration_ms(None) == ""
    assert ratio(1.85) == "1.85" and ratio(0.1) == "0.1" and ratio(1460.2) == "1,460" and ratio(None) == "n/a"
    assert "e+" not in ratio(123456.0)
    assert plural(1, "file") == "1 file" and plural(2, "file") == "2 files"
    assert plural(1, "directory") == "1 directory" and plural(3, "directory") == "3 directories"
    assert plural(0, "day") == "0 days"


def _table(text: str, first_header: str) -> tuple[list[str], list[list[str]]]:
    lines = text.splitlines()
    i = next(k for k, x in enumerate(lines) if x.split()[:1] == [first_header])
    header = re.split(r"\s{2,}", lines[i].strip())
    rows = []
    for x in lines[i + 2 :]:
        if not x.strip():
            break
        if re.match(r"^[a-z]+( [a-z]+)*:", x):
            break
        rows.append(re.split(r"\s{2,}", x.strip()))
    return header, rows


def test_abort_transactions_names_the_type_and_the_age(cli, demo):
    # demo.py: txn 10 is open (a DEFAULT txn: TXN_TYPE 0, Hive's TxnType.DEFAULT)
    r = cli("abort", "transactions", "--older-than", "0")
    assert r.code == 0, r
    header, rows = _table(r.stdout, "TRANSACTION")
    assert header == ["TRANSACTION ID", "USER", "HOST", "TYPE", "AGE"]
    [row] = rows
    assert row[0] == "10" and row[3] == "DEFAULT"
    assert re.fullmatch(r"\d+(\.\d)?(ms|s)|\d+[mhd]( \d+[smh])?", row[4]), row
    doc = json.loads(cli("-o", "json", "abort", "transactions", "--older-than", "0").stdout)
    assert doc["transactions"][0]["txn_type"] == 0  # JSON keeps the code
    assert isinstance(doc["transactions"][0]["age_ms"], int)


def test_empty_results_say_so(cli, demo):
    r = cli("show", "transactions", "--older-than", "100d")
    assert r.code == 0 and r.stdout.strip() == "No transactions."
    r = cli("show", "compactions", "--state", "working")
    assert r.code == 0 and r.stdout.strip() == "No compactions."


def test_clean_prints_min_age_as_its_help_does(cli, demo):
    r = cli("clean", "default.sales")
    assert r.code == 0
    assert "min age: 1h" in r.stdout  # the help's [default: 1h]
    assert re.search(r"\(\d+ B\)|\(\d+\.\d [KMG]iB\)", r.stdout.splitlines()[-1] + r.stdout)


def test_compact_report_words_request_and_engine(cli, demo):
    dry = cli("compact", "default.sales", "--major", "--dry-run")
    assert dry.code == 0
    engine = [x for x in dry.stdout.splitlines() if x.startswith("engine: ")]
    assert engine and engine[0].startswith("engine: would run local")
    assert "would compact" in dry.stdout and ": compact —" not in dry.stdout
    # demo.py: request 2 (major, initiated) is queued for sales/ds=2025-12-31; nothing for ds=2026-01-01
    sections = dry.stdout.split("== partition ")
    first = next(x for x in sections if x.startswith("ds=2025-12-31"))
    second = next(x for x in sections if x.startswith("ds=2026-01-01"))
    assert "metastore: would claim queued request 2 (MAJOR, initiated)" in first
    assert "metastore: would register a new compaction request" in second
    r = cli("compact", "default.sales", "--major", "--engine", "local")
    assert r.code == 0, r
    header, rows = _table(r.stdout, "PARTITION")
    assert "TASK S" not in r.stdout and header[-2:] == ["TIME", "REQUEST"]
    assert {row[1] for row in rows} == {"compacted"}
    line = next(x for x in r.stdout.splitlines() if x.startswith("engine: "))
    # one level of parentheses at most (report #26: nested parentheses in the engine line)
    depth = 0
    for ch in line:
        depth += ch == "("
        assert depth <= 1, line
        depth -= ch == ")"
    assert "0.0 MiB" not in line
    # demo.py: sales/ds=2025-12-31 has the queued request 2 (initiated): this run claims it;
    # ds=2026-01-01 has none: the run registers a new one
    doc_rows = {row[0]: row for row in rows}
    assert doc_rows["ds=2025-12-31"][-1] == "claimed 2"
    assert doc_rows["ds=2026-01-01"][-1].startswith("registered ")
    shows = json.loads(cli("-o", "json", "show", "compactions").stdout)["compactions"]
    new = int(doc_rows["ds=2026-01-01"][-1].split()[1])
    assert any(c["compactionid"] == new and c["partname"] == "ds=2026-01-01" for c in shows)


def test_state_reads_originals_first_in_path_order_and_json_in_read_order(cli, demo):
    # demo.py: sales/ds=2025-12-31 holds three original files, write 1's delete delta and write
    # 2's delta; a reader reads the originals first, sorted by path (directory-state.md §3.1
    # step 7), then the deltas in Hive's order (step 4)
    doc = json.loads(cli("-o", "json", "state", "default.sales").stdout)
    [p] = [p for p in doc["partitions"] if p["partition"] == "ds=2025-12-31"]
    got = [(e["name"], e["read_order"]) for e in p["entries"]]
    assert got == [
        ("000000_0", 0),
        ("000001_0", 1),
        ("000001_0_copy_1", 2),
        ("delete_delta_0000001_0000001_0000", 3),
        ("delta_0000002_0000002_0000", 4),
    ]
    text = cli("state", "default.sales").stdout
    names = [
        m.group(1) for x in text.splitlines() if (m := re.match(r"^(?:original|delta|delete delta)\s+(\S+?)/?\s", x))
    ]
    assert names[:5] == [n for n, _ in got]


def test_metrics_help_says_what_each_gauge_means(cli, demo):
    from acidctl.doctor.metrics import HELP

    r = cli("metrics")
    assert r.code == 0
    helps = {}
    for line in r.stdout.splitlines():
        m = re.match(r"# HELP (\S+) (.*)", line)
        if m:
            helps[m.group(1)] = m.group(2)
    assert helps
    for name, text in helps.items():
        assert name in HELP, name
        assert name not in text and "Hive ACID metric" not in text, (name, text)
    r = cli("metrics", "--deltas")
    assert r.code == 0 and "the per-table delta gauges have no samples" in r.stderr


def test_doctor_titles_pluralise(cli, demo):
    # demo.py: txn 4's delta in sales/ds=2026-01-01 is aborted: one directory waits for a
    # compaction to cover it (Hive 3's Cleaner), and so does the aborted delta of default.events
    doc = json.loads(cli("-o", "json", "doctor").stdout)
    found = [f for f in doc["findings"] if f["code"] == "ABORTED_WAITING_COMPACTION"]
    assert found and all(f["title"].startswith("1 aborted directory") for f in found), found
    assert not any("directories" in f["title"] for f in found)
    text = cli("doctor").stdout
    assert "table(s)" not in text and "partition(s)" not in text


def test_dump_meta_names_every_column(cli, demo):
    root, _ = demo
    f = root / "warehouse" / "sales" / "ds=2025-12-31" / "delta_0000002_0000002_0000" / "bucket_00000"
    r = cli("dump", "--meta", str(f))
    assert r.code == 0, r
    header, rows = _table(r.stdout, "COLUMN")
    assert header[:3] == ["COLUMN", "NAME", "KIND"]
    names = [row[1] for row in rows]
    # the ACID event schema (orc-acid-files.md): the root struct, the five ACID fields, the row
    # struct, then the table's columns (demo.py: sales has id, item, amount)
    assert names == [
        "(root)",
        "operation",
        "originalTransaction",
        "bucket",
        "rowId",
        "currentTransaction",
        "row",
        "row.id",
        "row.item",
        "row.amount",
    ]
    assert "1 insert," in r.stdout  # one row written by write 2 (not "1 inserts")
    # sizes in binary units as everywhere (report #26): the file's length from the filesystem
    n = f.stat().st_size
    assert n < 1024  # a one-row file: exact bytes
    [length] = [x for x in r.stdout.splitlines() if x.startswith("Length ")]
    assert length.split() == ["Length", str(n), "B"]
    assert " bytes" not in r.stdout


def test_hive2_state_header_is_the_valid_txn_list(cli, tmp_path):
    """Hive 2 has no write ids: the header shows the ValidTxnList, not a write-id list naming
    no table (``write ids: null:7:...``, report #32)."""
    import shutil

    from tests.conftest import GOLDEN

    t = tmp_path / "seed"
    shutil.copytree(GOLDEN / "hive23_seed_table", t, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    r = cli("state", str(t), "--hive-version", "2", "--txns", "7:9223372036854775807::")
    assert r.code in (0, 4), r
    assert "null:" not in r.stdout
    assert r.stdout.splitlines()[1].startswith("txns: 7:9223372036854775807:")  # Hive 2.3's own string


#: what `make demo`, the README and docs/commands run on the demo, and the other commands a
#: newcomer tries on it, in an order that leaves something for each one to report
_DEMO_SESSION = [
    ["show", "tables"],
    ["show", "transactions"],
    ["show", "locks"],
    ["show", "compactions"],
    ["show", "write-ids", "default.sales"],
    ["state", "default.employee"],
    ["state", "default.sales"],
    ["state", "default.events"],
    ["state", "--deep", "default.sales"],
    ["dump", "--merged", "--count", "default.sales"],
    ["dump", "--merged", "--count", "default.events"],
    ["dump", "--meta", "{root}/warehouse/employee"],
    ["dump", "--meta", "{root}/warehouse/sales/ds=2025-12-31"],
    ["why", "default.sales/ds=2025-12-31"],
    ["why", "default.sales/ds=2026-01-01"],
    ["why", "default.employee"],
    ["why", "default.events"],
    ["doctor"],
    ["abort", "transactions", "--older-than", "0"],
    ["initiator", "--dry-run"],
    ["compact", "--due", "default.sales", "--dry-run"],
    ["compact", "--due", "default.sales"],
    ["revert", "default.sales/ds=2025-12-31"],
    ["clean", "default.sales", "--min-age", "0"],
    ["clean", "default.sales", "--min-age", "0", "--execute"],
    ["why", "default.sales/ds=2025-12-31"],
    ["compact", "--enqueue", "--major", "default.employee"],
    ["worker", "--once", "--dry-run"],
    ["worker", "--once"],
    ["clean", "default.employee", "--min-age", "0", "--execute"],
    ["compact", "--major", "default.events"],
    ["clean", "default.events", "--min-age", "0", "--execute"],
    ["export", "default.sales", "{tmp}/export-sales", "--to", "parquet"],
    ["metrics"],
    ["doctor"],
    ["unlock", "1"],
    ["abort", "compactions", "999"],
    ["--metastore", "{hive2}", "state", "default.legacy_employee"],
    ["--metastore", "{hive2}", "upgrade-check"],
    ["--metastore", "{hive2}", "upgrade-check", "--execute", "--dry-run"],
    ["metastore", "init", "sqlite:///{tmp}/new-metastore.db", "--dry-run"],
]


def test_no_text_output_of_the_demo_says_s_in_parentheses(cli, demo, tmp_path):
    """Issue 22: counts are words (``1 partition``, ``2 partitions``), never ``partition(s)``,
    in every command a newcomer runs on the demo (stdout and stderr, text mode); no internal
    words either (a section of acidctl's spec)."""
    root, _ = demo
    subst = {"root": str(root), "tmp": str(tmp_path), "hive2": f"sqlite:///{root / 'hive2' / 'metastore.db'}"}
    seen = []
    for argv in _DEMO_SESSION:
        r = cli(*[a.format(**subst) for a in argv])
        assert r.code in (0, 3, 4, 6), (argv, r)
        for line in (r.stdout + r.stderr).splitlines():
            # nor a reference into acidctl's own spec (`directory-state.md §7.2`): internal words
            if re.search(r"\w\((s|es|ies)\)", line) or re.search(r"\.md §", line):
                seen.append(f"{' '.join(argv)}: {line.strip()}")
    assert not seen, "\n".join(seen)


def test_why_cleaner_step_shows_sizes_in_units_and_json_keeps_bytes(cli, demo):
    """The Cleaner's `removable` step said ``(1716 bytes)``; text shows binary units as every
    command does, JSON the raw number."""
    root, _ = demo
    # demo.py: write 4 of sales/ds=2026-01-01 was aborted; nothing there is obsolete yet
    aborted = root / "warehouse" / "sales" / "ds=2026-01-01" / "delta_0000004_0000004_0000"
    total = sum(f.stat().st_size for f in aborted.rglob("*") if f.is_file())
    assert 1024 <= total < 1024 * 1024  # so the text is in KiB, one decimal
    r = cli("why", "default.sales/ds=2026-01-01")
    assert r.code == 0, r
    text = " ".join(r.stdout.split())
    assert f"0 obsolete and 1 aborted directory ({total / 1024:.1f} KiB)" in text
    assert " bytes)" not in text
    doc = json.loads(cli("-o", "json", "why", "default.sales/ds=2026-01-01").stdout)
    steps = [s for p in doc["partitions"] for s in p["cleaner"]["steps"] if s["rule"] == "removable"]
    assert [s["values"]["bytes"] for s in steps] == [total]


def test_wide_is_o_wide_and_its_help_says_so(cli, demo, monkeypatch):
    """`--wide` and `-o wide` are one view: every column (Hive 3's SHOW LOCKS header, DDLTask.showLocks: 13 columns), nothing
    wrapped; the option's help
    describes that, not the old "fitted by wrapping the widest cells; pipes get full width"."""
    monkeypatch.setenv("COLUMNS", "80")
    default = cli("show", "locks").stdout
    wide = cli("--wide", "show", "locks").stdout
    assert wide == cli("-o", "wide", "show", "locks").stdout == cli("show", "locks", "--wide").stdout
    header = re.split(r"\s{2,}", wide.splitlines()[0].strip())
    assert header == [
        "LOCK ID",
        "DATABASE",
        "TABLE",
        "PARTITION",
        "STATE",
        "BLOCKED BY",
        "TYPE",
        "TRANSACTION ID",
        "LAST HEARTBEAT",
        "ACQUIRED AT",
        "USER",
        "HOSTNAME",
        "AGENT INFO",
    ]
    assert max(map(len, wide.splitlines())) > 80 >= max(map(len, default.splitlines()))
    r = cli("--help")
    help_text = " ".join(r.stdout.split())
    assert "--wide " in help_text, (r.code, r.stdout[:2000], r.stderr[:2000])
    wide_help = help_text.split("--wide ", 1)[1].split("--read-only", 1)[0]
    assert "-o wide" in wide_help and "every column" in wide_help
    assert "pipes get full width" not in help_text and "widest cells" not in help_text
