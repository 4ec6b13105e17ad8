"""``acidctl state`` end to end on directory layouts built in tmp_path (text and JSON)."""

import json
import sys
import types
from pathlib import Path

import pytest

from acidctl.cli.main import main
from acidctl.findings import Finding, Severity

from tests.conftest import REAL

from .helpers import COMPACTED, EXAMPLE


def run(args, capsys):
    with pytest.raises(SystemExit) as ei:
        main(list(args))
    out, err = capsys.readouterr()
    return ei.value.code, out, err


def run_json(args, capsys):
    code, out, err = run(["-o", "json", *args], capsys)
    return code, (json.loads(out) if out.strip() else None), err


def make_dir(p: Path, *, compacted=False, data=0, version=True, files=()):
    p.mkdir(parents=True)
    (p / "bucket_00000").write_bytes(b"x" * data)
    if version:
        (p / "_orc_acid_version").write_bytes(b"2")
    if compacted:
        (p / "_metadata_acid").write_bytes(COMPACTED)
    for f in files:
        (p / f).write_bytes(b"")


@pytest.fixture
def example(tmp_path):
    t = tmp_path / "t"
    for n in EXAMPLE:
        make_dir(t / n, compacted=n.startswith("base_"))
    return t


def test_text_worked_example(example, capsys):
    code, out, err = run(["state", str(example), "--write-ids", "db.t:14:12:12:13"], capsys)
    assert code == 0, err
    lines = out.splitlines()

    def row(name):
        [line] = [ln for ln in lines if f" {name}/ " in ln]
        return line

    assert row("base_0000005").startswith("base ")
    assert row("base_0000002").startswith("obsolete ")
    assert row("delete_delta_0000006_0000010").startswith("delete delta ")
    assert row("delta_0000006_0000010").startswith("delta ")
    assert row("delta_0000012_0000012_0000").startswith("not visible yet ")
    assert row("delta_0000013_0000013_0000").startswith("aborted ")
    assert row("delta_0000001_0000001_0000").startswith("obsolete ")
    assert "write ids: db.t:14:12:12:13" in out
    assert "snapshot:   base base_0000005" in out and "+ 4 delta directories" in out
    assert "deltas:     3 insert" in out and "1 delete" in out
    assert "compaction: NONE" in out
    assert "S03" in out and "S04" in out and "ASSUMED" not in out


def test_json_worked_example(example, capsys):
    code, doc, err = run_json(["state", str(example), "--write-ids", "db.t:14:12:12:13"], capsys)
    assert code == 0, err
    assert set(doc) == {
        "path",
        "hive_version",
        "write_ids",
        "txns",
        "assumptions",
        "partitions",
        "findings",
        "summary",
        "table",
        "snapshot_source",
    }
    assert doc["table"] is None and doc["snapshot_source"] == "--write-ids"
    assert doc["hive_version"] == 3 and doc["write_ids"]["string"] == "db.t:14:12:12:13"
    assert doc["write_ids"]["assumed"] is False and doc["assumptions"] == []
    [p] = doc["partitions"]
    assert p["partition"] is None and p["path"] == str(example)
    s = p["snapshot"]
    assert s["base"] == "base_0000005" and s["base_write_id"] == 5
    assert s["read_order"] == [
        "delete_delta_0000006_0000010",
        "delta_0000006_0000010",
        "delta_0000011_0000011_0000",
        "delta_0000014_0000014_0000",
    ]
    assert s["deltas"] == ["delta_0000006_0000010", "delta_0000011_0000011_0000", "delta_0000014_0000014_0000"]
    assert s["delete_deltas"] == ["delete_delta_0000006_0000010"]
    assert s["readable"] is True and s["not_enough_history"] is None
    roles = {e["name"]: e["role"] for e in p["entries"]}
    assert roles["delta_0000013_0000013_0000"] == "aborted"
    assert roles["delta_0000012_0000012_0000"] == "not visible yet"
    e = next(e for e in p["entries"] if e["name"] == "delta_0000006_0000010")
    assert (e["min_write_id"], e["max_write_id"], e["statement_id"], e["file_count"], e["bytes"]) == (6, 10, None, 2, 1)
    assert set(p["compaction"]) >= {"type", "reasons", "delta_count", "thresholds", "ratio"}
    assert p["compaction"]["type"] == "none"
    assert {f["check"] for f in doc["findings"]} == {"S02", "S03", "S04", "S12"}
    assert doc["summary"]["errors"] == 0 and doc["summary"]["warnings"] == 1


def test_assume_committed_is_loud(example, capsys):
    code, out, err = run(["state", str(example), "--assume-committed"], capsys)
    assert code == 0
    assert "!! ASSUMED: every write id named by a directory (1..14) is committed" in out
    assert "[ASSUMED]" in out and "ASSUMED" in err
    code, doc, _ = run_json(["state", str(example), "--assume-committed"], capsys)
    assert doc["write_ids"]["assumed"] is True and doc["write_ids"]["hwm"] == 14
    assert doc["assumptions"]
    roles = {e["name"]: e["role"] for e in doc["partitions"][0]["entries"]}
    assert roles["delta_0000013_0000013_0000"] == "delta"


def test_snapshot_options_required(example, capsys):
    code, out, err = run(["state", str(example)], capsys)
    assert code == 2 and "--write-ids" in err and "--assume-committed" in err
    code, out, err = run(
        ["state", str(example), "--assume-committed", "--write-ids", "db.t:1:9223372036854775807::"], capsys
    )
    assert code == 2
    code, out, err = run(["--metastore", "sqlite:///nowhere.db", "state", str(example)], capsys)
    assert code == 2 and "--write-ids" in err
    code, out, err = run(["state", str(example), "--assume-committed", "--hive-version", "5"], capsys)
    assert code == 2


def test_json_usage_error_on_stderr(example, capsys):
    code, doc, err = run_json(["state", str(example)], capsys)
    assert code == 2 and doc is None
    assert json.loads(err)["error"]["type"] == "UsageError"


def test_visibility_dir_hive3_error_hive4_ok(tmp_path, capsys):
    t = tmp_path / "t"
    make_dir(t / "base_0000005_v0000010")
    make_dir(t / "delta_0000006_0000006_0000")
    code, doc, err = run_json(["state", str(t), "--write-ids", "db.t:6:9223372036854775807::"], capsys)
    assert code == 4 and "error-level finding" in err
    assert [f["check"] for f in doc["findings"] if f["severity"] == "error"] == ["D02"]
    assert doc["partitions"][0]["snapshot"]["readable"] is False
    code, doc, err = run_json(
        [
            "state",
            str(t),
            "--write-ids",
            "db.t:6:9223372036854775807::",
            "--hive-version",
            "4",
            "--txns",
            "20:9223372036854775807::",
        ],
        capsys,
    )
    assert code == 0, err
    s = doc["partitions"][0]["snapshot"]
    assert s["base"] == "base_0000005_v0000010" and s["deltas"] == ["delta_0000006_0000006_0000"]
    assert doc["txns"]["assumed"] is False
    # an open compactor txn: invisible, reported as S05
    code, doc, err = run_json(
        ["state", str(t), "--write-ids", "db.t:6:9223372036854775807::", "--hive-version", "4", "--txns", "20:10:10:"],
        capsys,
    )
    assert code == 0
    assert doc["partitions"][0]["snapshot"]["base"] is None
    assert "S05" in {f["check"] for f in doc["findings"]}


def test_not_enough_history_exit_4(tmp_path, capsys):
    t = tmp_path / "t"
    make_dir(t / "base_0000020", compacted=True)
    make_dir(t / "delta_0000021_0000021_0000")
    code, out, err = run(["state", str(t), "--write-ids", "db.t:25:15:15:"], capsys)
    assert code == 4
    assert f"UNREADABLE: Not enough history available for (25,15).  Oldest available base: {t}/base_0000020" in out
    assert "S01" in out


def test_partitioned_table_json(tmp_path, capsys):
    t = tmp_path / "t"
    make_dir(t / "p=1" / "delta_0000001_0000001_0000", data=5)
    for i in range(2, 14):
        make_dir(t / "p=2" / f"delta_{i:07d}_{i:07d}_0000", data=5)
    code, doc, err = run_json(["state", str(t), "--write-ids", "db.t:13:9223372036854775807::"], capsys)
    assert code == 0, err
    assert [p["partition"] for p in doc["partitions"]] == ["p=1", "p=2"]
    assert doc["partitions"][1]["compaction"]["type"] == "major"  # 12 deltas, no base
    assert doc["partitions"][0]["compaction"]["type"] == "none"
    assert doc["summary"]["compaction_due"] == ["p=2"]
    code, doc, err = run_json(
        [
            "state",
            str(t),
            "--write-ids",
            "db.t:13:9223372036854775807::",
            "--tblproperty",
            "compactorthreshold.hive.compactor.delta.num.threshold=20",
        ],
        capsys,
    )
    assert doc["partitions"][1]["compaction"]["type"] == "none"
    assert doc["partitions"][1]["compaction"]["thresholds"]["hive.compactor.delta.num.threshold"] == 20


def test_not_found_and_file(tmp_path, capsys):
    code, _, err = run(["state", str(tmp_path / "missing"), "--assume-committed"], capsys)
    assert code == 3
    f = tmp_path / "bucket_00000"
    f.write_bytes(b"x")
    code, _, err = run(["state", str(f), "--assume-committed"], capsys)
    assert code == 7 and "not a table" in err
    make_dir(tmp_path / "t" / "delta_0000001_0000001_0000")
    code, _, err = run(["state", str(tmp_path / "t" / "delta_0000001_0000001_0000"), "--assume-committed"], capsys)
    assert code == 7 and "base/delta directory" in err


def test_deep_without_orc_meta_is_a_usage_error(example, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "acidctl.orc.meta", None)  # import fails
    code, out, err = run(["state", str(example), "--write-ids", "db.t:14:12:12:13", "--deep"], capsys)
    assert code == 2 and "--deep" in err and out == ""


def test_deep_hook_calls_inspect_file(example, capsys, monkeypatch):
    calls = []

    def inspect_file(tfs, path):
        calls.append(path)
        return [Finding("F03", Severity.ERROR, path, "hive.acid.key.index missing")] if "0000014" in path else []

    mod = types.ModuleType("acidctl.orc.meta")
    mod.inspect_file = inspect_file
    monkeypatch.setitem(sys.modules, "acidctl.orc.meta", mod)
    code, doc, err = run_json(["state", str(example), "--write-ids", "db.t:14:12:12:13", "--deep"], capsys)
    assert code == 4
    assert sorted(Path(p).parent.name for p in calls) == sorted(
        [
            "base_0000005",
            "delete_delta_0000006_0000010",
            "delta_0000006_0000010",
            "delta_0000011_0000011_0000",
            "delta_0000014_0000014_0000",
        ]
    )
    assert all(Path(p).name == "bucket_00000" for p in calls)
    assert [f["check"] for f in doc["findings"] if f["severity"] == "error"] == ["F03"]


def test_state_module_imports_no_heavy_libraries():
    import subprocess

    code = (
        "import sys, acidctl.cli.main; "
        "bad = [m for m in ('pyarrow', 'pyorc', 'pyspark', 'sqlalchemy') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


FIXTURES = REAL


def _orc_meta_available():
    try:
        from acidctl.orc.meta import inspect_file  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _orc_meta_available(), reason="acidctl.orc.meta not available")
def test_deep_on_real_hive_files(tmp_path, capsys):
    """README §1 layout: Hive-written files; the directories lack _orc_acid_version (M01)."""
    import shutil

    t = tmp_path / "t"
    (t / "delta_0000002_0000002_0000").mkdir(parents=True)
    shutil.copy(
        FIXTURES / "trino" / "nationFile25kRowsSortedOnNationKey" / "bucket_00000",
        t / "delta_0000002_0000002_0000" / "bucket_00000",
    )
    for d in ("delete_delta_0000003_0000003_0000", "delete_delta_0000004_0000004_0000"):
        shutil.copytree(FIXTURES / "trino" / "nation_delete_deltas" / d, t / d)
    code, doc, err = run_json(["state", str(t), "--write-ids", "db.t:4:9223372036854775807::", "--deep"], capsys)
    assert code == 0, err
    assert not [f for f in doc["findings"] if f["severity"] == "error"]
    assert sorted(f["check"] for f in doc["findings"] if f["check"] == "M01") == ["M01"] * 3


@pytest.mark.skipif(not _orc_meta_available(), reason="acidctl.orc.meta not available")
def test_deep_unreadable_orc_file(tmp_path, capsys):
    t = tmp_path / "t"
    make_dir(t / "delta_0000001_0000001_0000", data=50)  # 50 bytes of "x": not ORC
    code, doc, err = run_json(["state", str(t), "--assume-committed", "--deep"], capsys)
    assert code == 4
    assert [f["check"] for f in doc["findings"] if f["severity"] == "error"] == ["F00"]


def test_stale_compaction_lock_is_reported(tmp_path, capsys):
    import json as _json
    import subprocess
    import sys as _sys

    t = tmp_path / "t"
    make_dir(t / "delta_0000001_0000001_0000")
    # a lock written by a process that has exited
    p = subprocess.run([_sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    (t / ".acidctl-compact.lock").write_text(
        _json.dumps({"pid": int(p.stdout), "host": socket.gethostname(), "started": 0, "token": "x"})
    )
    code, doc, err = run_json(["state", str(t), "--assume-committed"], capsys)
    assert code == 0, err
    locks = [f for f in doc["findings"] if f["check"] == "D07" and f["path"].endswith(".acidctl-compact.lock")]
    assert [f["severity"] for f in locks] == ["warn"] and "stale" in locks[0]["message"]


def test_text_rows_in_read_order_and_read_numbers_as_json(example, capsys):
    """Spec worked example (directory-state.md): base_0000005, then the deltas in Hive's read
    order; READ# is the JSON read_order (both from 0, the base first: a reader reads it before
    the deltas); what the reader skips comes after, with no read order; JSON entries in the
    same order as the text rows."""
    wl = "db.t:14:12:12:13"
    code, out, _ = run(["state", str(example), "--write-ids", wl], capsys)
    assert code == 0
    header = next(ln for ln in out.splitlines() if ln.startswith("ROLE "))
    table = out.splitlines()[out.splitlines().index(header) + 2 :]
    rows = [ln.split() for ln in table[: len(EXAMPLE)]]
    names = [next(c for c in r if c.endswith("/")).rstrip("/") for r in rows]
    read = [
        "delete_delta_0000006_0000010",
        "delta_0000006_0000010",
        "delta_0000011_0000011_0000",
        "delta_0000014_0000014_0000",
    ]
    assert names[:5] == ["base_0000005", *read]
    assert sorted(names[5:]) == sorted(set(EXAMPLE) - {"base_0000005", *read})
    assert rows[0][rows[0].index("base_0000005/") + 1] == "0"
    for i, name in enumerate(read):
        row = rows[1 + i]
        assert row[row.index(name + "/") + 1] == str(i + 1)
    code, doc, _ = run_json(["state", str(example), "--write-ids", wl], capsys)
    entries = doc["partitions"][0]["entries"]
    assert [e["name"] for e in entries] == names
    orders = {e["name"]: e["read_order"] for e in entries}
    assert [orders[n] for n in ["base_0000005", *read]] == [0, 1, 2, 3, 4]
    assert all(orders[n] is None for n in names[5:])


def test_partition_directory_section_is_headed_partition(tmp_path, capsys):
    part = tmp_path / "t" / "ds=2025-01-01"
    make_dir(part / "delta_0000001_0000001_0000")
    code, out, _ = run(["state", str(part), "--write-ids", "db.t:1:9223372036854775807::"], capsys)
    assert code == 0
    assert f"== partition ds=2025-01-01: {part}" in out.splitlines()
    code, out, _ = run(["state", str(tmp_path / "t"), "--write-ids", "db.t:1:9223372036854775807::"], capsys)
    assert f"== partition ds=2025-01-01: {part}" in out.splitlines()


def test_json_mtime_is_epoch_milliseconds(tmp_path, capsys):
    """mtime in the same unit as `show` and the metastore (epoch ms)."""
    import os

    t = tmp_path / "t"
    d = t / "delta_0000001_0000001_0000"
    make_dir(d)
    os.utime(d, (1_700_000_000.25, 1_700_000_000.25))
    code, doc, _ = run_json(["state", str(t), "--write-ids", "db.t:1:9223372036854775807::"], capsys)
    assert code == 0
    [e] = [e for e in doc["partitions"][0]["entries"] if e["name"] == d.name]
    assert e["mtime"] == 1_700_000_000_250


def test_text_findings_name_paths_under_the_table(tmp_path, capsys):
    """Text findings show paths relative to the table in the header; JSON keeps them whole."""
    t = tmp_path / "t"
    make_dir(t / "delta_0000001_0000001_0000", version=False)  # no _orc_acid_version: an M finding
    wl = "db.t:1:9223372036854775807::"
    code, doc, _ = run_json(["state", str(t), "--write-ids", wl], capsys)
    paths = {f["path"] for f in doc["findings"]}
    assert str(t / "delta_0000001_0000001_0000") in paths
    code, out, _ = run(["state", str(t), "--write-ids", wl], capsys)
    findings = [x for x in out.splitlines() if x.startswith(("ERROR ", "WARN ", "INFO "))]
    assert any(" delta_0000001_0000001_0000: " in x for x in findings)
    assert not any(str(tmp_path) in x for x in findings)
