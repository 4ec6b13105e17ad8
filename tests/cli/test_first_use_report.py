"""Items of the new-user report (../shared/reports/first-use-2026-11.md) not covered elsewhere,
each as the report describes it, with what the report (or Hive's rules in the spec) asks for."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.acidfiles import B0, acid_file

ALL = "9223372036854775807"
ROW = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
    "row:struct<id:int,name:string>>"
)


def _json(r):
    return json.loads(r.stdout)


def _entries(doc):
    return {e["name"]: e for p in doc["partitions"] for e in p["entries"]}


# -- "state's REASON says 'read: write ids 1..2' even when write id 1 is aborted or above the
#    high watermark" (Hive 3 rules: isWriteIdRangeValid SOME -> the delta is read, the ids
#    the snapshot does not cover are skipped; directory-state.md §2, §3)


@pytest.mark.parametrize(
    "write_ids, skipped",
    [
        (f"db.t:3:{ALL}::1", "aborted write id 1"),
        ("db.t:3:2:2:", "open write id 2"),
        (f"db.t:1:{ALL}::", "above the high-water mark 1"),
    ],
)
def test_a_read_delta_names_the_ids_it_skips(cli, tmp_path, write_ids, skipped):
    t = tmp_path / "t"
    acid_file(t / "delta_0000001_0000002" / "bucket_00000", ROW, [(0, w, B0, 0, w, (w, f"r{w}")) for w in (1, 2)])
    doc = _json(cli("-o", "json", "state", t, "--write-ids", write_ids))
    e = _entries(doc)["delta_0000001_0000002"]
    assert e["role"] == "delta" and e["reason"].startswith("read: write ids 1..2"), e
    assert skipped in e["reason"], e


def test_a_fully_committed_delta_says_nothing_is_skipped(cli, tmp_path):
    t = tmp_path / "t"
    acid_file(t / "delta_0000001_0000002" / "bucket_00000", ROW, [(0, w, B0, 0, w, (w, f"r{w}")) for w in (1, 2)])
    e = _entries(_json(cli("-o", "json", "state", t, "--write-ids", f"db.t:2:{ALL}::")))["delta_0000001_0000002"]
    assert e["reason"] == "read: write ids 1..2"


# -- "A full-ACID-schema file at a table root: state calls it an original file (write id 0,
#    synthetic ROW__IDs) while dump --merged and compact use its ACID row ids"


def test_an_acid_file_at_the_root_is_described_as_merged_reads_use_it(cli, tmp_path):
    t = tmp_path / "t"
    acid_file(t / "000000_0", ROW, [(0, w, B0, 0, w, (w, f"r{w}")) for w in (1, 2)])
    wl = f"db.t:2:{ALL}::"
    rows = [json.loads(x) for x in cli("-o", "json", "dump", "--merged", t, "--write-ids", wl).stdout.splitlines()]
    assert [r["row__id"]["writeid"] for r in rows] == [1, 2]  # its own write ids, not 0
    shallow = _entries(_json(cli("-o", "json", "state", t, "--write-ids", wl)))["000000_0"]
    assert "an ACID file keeps its own" in shallow["reason"]  # without opening it: not "always 0"
    deep = _json(cli("-o", "json", "state", "--deep", t, "--write-ids", wl))
    e = _entries(deep)["000000_0"]
    assert "own ROW__IDs" in e["reason"] and "synthetic" not in e["reason"], e
    assert [f["check"] for f in deep["findings"] if f["path"].endswith("000000_0")] == ["F16"]


# -- "state on a directory holding a Parquet and a text file exits 0 and lists both as original
#    files; only --deep reports them" (Hive reads original files of an ORC table as ORC)


def test_files_of_other_formats_in_original_positions_are_errors(cli, tmp_path):
    t = tmp_path / "t"
    t.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), t / "data.parquet")
    (t / "notes.txt").write_text("hello\n")
    acid_file(t / "000000_0", ROW, [(0, 0, B0, 0, 0, (1, "plain"))])  # a Hive-named original: fine
    r = cli("-o", "json", "state", t, "--assume-committed")
    assert r.code == 4, r
    d12 = sorted(f["path"].rsplit("/", 1)[-1] for f in _json(r)["findings"] if f["check"] == "D12")
    assert d12 == ["data.parquet", "notes.txt"]
    assert all(f["severity"] == "error" for f in _json(r)["findings"] if f["check"] == "D12")


def test_other_formats_beside_a_base_are_only_obsolete(cli, tmp_path):
    # with a base, originals are obsolete: readers never open them (directory-state.md §3)
    t = tmp_path / "t"
    acid_file(t / "base_0000001" / "bucket_00000", ROW, [(0, 1, B0, 0, 1, (1, "a"))])
    (t / "base_0000001" / "_orc_acid_version").write_bytes(b"2")
    (t / "notes.txt").write_text("hello\n")
    r = cli("-o", "json", "state", t, "--write-ids", f"db.t:1:{ALL}::")
    assert r.code == 0, r
    assert not [f for f in _json(r)["findings"] if f["check"] == "D12"]


# -- "demo --help says the files are 'laid out exactly as Hive writes them'; the directory layout
#    is, but the files are written by ORC C++ (pyarrow), not ORC Java: say so"


def test_demo_help_says_who_writes_the_files(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    r = cli("demo", "--help")
    assert r.code == 0, r
    text = " ".join(r.stdout.split())
    assert "ORC C++" in text and "not by ORC Java" in text


# -- "Reached for: a guard against 'bytes in > 0, rows out = 0'" (compact refuses before
#    publication unless every row read is deleted or aborted)


def _metrics(rows_in, rows_out, deletes=0, aborted=0):
    return {
        "rows_in": rows_in,
        "rows_out": rows_out,
        "deletes_applied": deletes,
        "aborted_dropped": aborted,
        "invisible_dropped": 0,
        "other_events_dropped": 0,
    }


@pytest.mark.parametrize(
    "metrics, refused",
    [
        ([_metrics(10, 0)], True),  # rows read, nothing written, nothing explains it
        ([_metrics(10, 0, deletes=4, aborted=6)], False),  # every row deleted or aborted
        ([_metrics(10, 7, deletes=2)], True),  # one row unaccounted for
        ([_metrics(6, 3, deletes=3), _metrics(4, 4)], False),  # two buckets, all accounted
    ],
)
def test_compaction_refuses_rows_in_without_rows_out(metrics, refused):
    import types

    from acidctl.compact.planner import MAJOR
    from acidctl.compact.runner import _check_accounting
    from acidctl.errors import RefusedError

    plan = types.SimpleNamespace(partition="ds=1", display="/t/ds=1", mode=MAJOR)
    if refused:
        with pytest.raises(RefusedError, match="refused"):
            _check_accounting([plan], {"ds=1": metrics})
    else:
        _check_accounting([plan], {"ds=1": metrics})


# -- "Reached for: listing the ACID tables of a database, or state over a whole database"
#    (`show tables`; `doctor --db` runs every check over every ACID table)


def test_show_tables_lists_the_acid_tables_of_a_database(cli, demo):
    import os

    from acidctl.metastore.recorder import Recorder

    root, _ = demo
    rec = Recorder(os.environ["ACIDCTL_METASTORE_URL"])
    rec.create_table("sales_db", "logs", location=f"file:{root}/warehouse/sales_db.db/logs", insert_only=True)
    rec.create_table("sales_db", "plain", location=f"file:{root}/warehouse/sales_db.db/plain", transactional=False)
    doc = _json(cli("-o", "json", "show", "tables"))
    # the demo: employee (unbucketed), events (insert-only), sales (PARTITIONED BY ds, 2 partitions, 2 buckets)
    got = [(t["table"], t["kind"], t["partition_keys"], t["partitions"], t["buckets"]) for t in doc["tables"]]
    assert got == [
        ("default.employee", "full", [], 0, None),
        ("default.events", "insert_only", [], 0, None),
        ("default.sales", "full", ["ds"], 2, 2),
        ("sales_db.logs", "insert_only", [], 0, None),
    ]  # sales_db.plain is not transactional
    assert [t["table"] for t in _json(cli("-o", "json", "show", "tables", "sales_db"))["tables"]] == ["sales_db.logs"]
    assert [t["table"] for t in _json(cli("-o", "json", "show", "tables", "--table", "*S"))["tables"]] == [
        "default.events",
        "default.sales",
        "sales_db.logs",
    ]
    r = cli("show", "tables", "nosuchdb")
    assert r.code == 3 and "nosuchdb" in r.stderr


# -- "A Hive 4 table (with _vM directories) read without --hive-version 4 fails (exit 7) with no
#    hint; the _v suffix itself could tell" (dump --merged: tests/cli/test_errors_ux.py; state:)


def test_state_of_hive4_names_under_hive3_rules_says_how_to_check_them(cli, tmp_path):
    t = tmp_path / "t"
    acid_file(t / "delta_0000001_0000001_v0000009" / "bucket_00000", ROW, [(0, 1, B0, 0, 1, (1, "a"))])
    r = cli("-o", "json", "state", t, "--write-ids", f"db.t:1:{ALL}::")
    assert r.code == 4, r
    [d02] = [f for f in _json(r)["findings"] if f["check"] == "D02"]
    assert "--hive-version 4" in d02["message"]
    ok = cli("-o", "json", "state", t, "--write-ids", f"db.t:1:{ALL}::", "--hive-version", "4", "--txns", f"9:{ALL}::")
    assert ok.code == 0 and not [f for f in _json(ok)["findings"] if f["check"] == "D02"], ok
