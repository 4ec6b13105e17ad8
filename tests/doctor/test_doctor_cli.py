"""`acidctl doctor` end to end: text and JSON output, exit codes, and the compact/clean fix loop
run through the real commands (``compact --engine local``: the same tasks without Spark)."""

from __future__ import annotations

import datetime
import json
import time

import pytest
import sqlalchemy as sa

from acidctl.metastore.init import init_metastore
from acidctl.metastore.recorder import Recorder
from tests.acidfiles import acid_file
from tests.doctor.helpers import H_MS, commit_write, compaction, execute, now_ms, table
from tests.metastore.helpers import run_cli

ORC_TYPE = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:struct<id:int>>"
B0 = 536870912


def _deltas(loc, n):
    for w in range(1, n + 1):
        acid_file(loc / f"delta_{w:07d}_{w:07d}_0000" / "bucket_00000", ORC_TYPE, [(0, w, B0, 0, w, (w,))])
        (loc / f"delta_{w:07d}_{w:07d}_0000" / "_orc_acid_version").write_bytes(b"2")


def _doctor(capsys, url, *args):
    capsys.readouterr()
    code = run_cli(["--metastore", url, "-o", "json", "doctor", *args])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


@pytest.mark.parametrize("hv", [3, 4])
def test_compact_and_clean_fix_loop(tmp_path, capsys, hv):
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=hv)
    rec = Recorder(url)
    due = table(rec, tmp_path, "due", dirs={})
    noauto = table(rec, tmp_path, "noauto", dirs={}, params={"no_auto_compaction": "true"})
    for name, loc in (("due", due), ("noauto", noauto)):
        _deltas(loc, 11)
        for _ in range(11):
            commit_write(rec, "db", name)
    # a "succeeded" major compaction up to write id 11 that wrote nothing
    cq = compaction(rec, "db", "due", hw=11, state="s")

    code, rep, _ = _doctor(capsys, url)
    assert code == 0, rep
    f = {(x["code"], x["table"]): x for x in rep["findings"]}
    # 11 current deltas > hive.compactor.delta.num.threshold 10, and no base: major
    d = f[("COMPACTION_DUE", "db.due")]
    assert d["fix"] == "acidctl compact db.due --major"
    assert d["evidence"]["delta_count"] == 11 and d["evidence"]["type"] == "major"
    n = f[("INITIATOR_SKIPS_NO_AUTO", "db.noauto")]
    assert n["fix"] == "acidctl compact db.noauto --major"
    s = f[("COMPACTION_SUCCEEDED_NO_OUTPUT", "db.due")]
    assert s["evidence"]["compaction_id"] == cq and s["evidence"]["highest_write_id"] == 11
    assert rep["summary"]["tables_checked"] == 2 and rep["summary"]["partitions_checked"] == 2

    for fix in (d["fix"], n["fix"]):
        argv = fix.split()[1:] + ["--engine", "local"]
        assert run_cli(["--metastore", url] + argv) == 0
    if hv == 4:
        # Hive 4's Cleaner counts txns younger than 1 s as open (operations.md §5.2): right now the
        # compactor txns just committed hold the registered requests back, and doctor says so
        time.sleep(1.1)
    code, rep, _ = _doctor(capsys, url)
    left = {(x["code"], x["table"]) for x in rep["findings"]}
    for key in [
        ("COMPACTION_DUE", "db.due"),
        ("INITIATOR_SKIPS_NO_AUTO", "db.noauto"),
        ("COMPACTION_SUCCEEDED_NO_OUTPUT", "db.due"),
    ]:
        assert key not in left, key
    # the 22 deltas are now obsolete, waiting for the Cleaner
    obs = {x["table"]: x for x in rep["findings"] if x["code"] == "OBSOLETE_WAITING"}
    # clean previews unless --execute, and its default --min-age 1h keeps what just became obsolete
    assert len(obs["db.due"]["evidence"]["dirs"]) == 11
    assert obs["db.due"]["fix"] == "acidctl clean db.due --execute --min-age 0"
    for fix in (obs["db.due"]["fix"], obs["db.noauto"]["fix"]):
        assert run_cli(["--metastore", url] + fix.split()[1:]) == 0  # exactly as printed
    code, rep, _ = _doctor(capsys, url)
    assert [x for x in rep["findings"] if x["code"] == "OBSOLETE_WAITING"] == []


def test_json_text_and_exit_code(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=4)
    rec = Recorder(url)
    table(rec, tmp_path, "a", dirs={"delta_0000001_0000001_0000": {"bucket_00000": 10}}, write_ids=1)
    table(rec, tmp_path, "b", dirs={"delta_0000001_0000001_0000": {"bucket_00000": 10}}, write_ids=1, db="other")
    code, rep, _ = _doctor(capsys, url)
    assert code == 0 and rep["summary"]["errors"] == 0
    assert set(rep) == {
        "hive_version",
        "summary",
        "findings",
        "partitions",
        "metastore_source",
        "facts_unavailable",
        "checks_skipped",
    }
    # the database has every fact: nothing skipped
    assert (rep["metastore_source"], rep["facts_unavailable"], rep["checks_skipped"]) == ("database", [], [])
    assert {
        "tables_checked",
        "partitions_checked",
        "directory_listings",
        "errors",
        "warnings",
        "info",
        "by_code",
        "worst",
    } <= set(rep["summary"])
    assert rep["summary"]["tables_checked"] == 2
    # --db / --table globs
    _, rep, _ = _doctor(capsys, url, "--db", "oth*")
    assert rep["summary"]["tables_checked"] == 1 and rep["partitions"][0]["table"] == "other.b"
    _, rep, _ = _doctor(capsys, url, "--table", "A")
    assert [p["table"] for p in rep["partitions"]] == ["db.a"]
    # --since: both were written just now; then other.b's only write is moved 3 days back
    _, rep, _ = _doctor(capsys, url, "--since", "1h")
    assert rep["summary"]["tables_checked"] == 2
    ctc = rec.T.COMPLETED_TXN_COMPONENTS
    old = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(days=3)
    execute(rec, sa.update(ctc.clause).where(ctc.CTC_TABLE == "b").values({ctc.CTC_TIMESTAMP.name: old}))
    _, rep, _ = _doctor(capsys, url, "--since", "1h")
    assert rep["summary"]["tables_checked"] == 1 and rep["summary"]["tables_skipped"] == ["other.b"]
    _, rep, _ = _doctor(capsys, url, "--since", "4d")
    assert rep["summary"]["tables_checked"] == 2
    # an error-level finding: exit 4, the finding in the error group of the text output
    now = now_ms(rec)
    t = rec.open_txn(user="etl", host="h9", now_ms=now - 80 * H_MS)
    code, rep, err = _doctor(capsys, url)
    assert code == 4 and "1 error-level finding" in err
    e = [x for x in rep["findings"] if x["severity"] == "error"]
    assert [x["code"] for x in e] == ["TXN_NO_HEARTBEAT"] and e[0]["evidence"]["txn_id"] == t
    assert rep["summary"]["worst"][0]["code"] == "TXN_NO_HEARTBEAT"
    capsys.readouterr()
    assert run_cli(["--metastore", url, "doctor"]) == 4
    out = capsys.readouterr().out
    head, _, rest = out.partition("== ERRORS (1)")
    assert "checked 2 ACID tables" in head and "findings: 1 error," in head
    assert f"[TXN_NO_HEARTBEAT] warehouse: open txn {t} (etl@h9" in rest
    assert f"    fix: acidctl abort transactions {t} --execute" in rest


def test_no_metastore_is_a_usage_error(capsys):
    assert run_cli(["doctor"]) == 2
    assert "--metastore" in capsys.readouterr().err


def test_doctor_is_read_only(tmp_path, capsys):
    """Neither the metastore nor any file changes, whatever doctor finds."""
    import hashlib
    import os

    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=3)
    rec = Recorder(url)
    table(
        rec,
        tmp_path,
        "r",
        dirs={"delta_0000001_0000001_0000": {"bucket_00000": 10}, "base_0000001": {"bucket_00000": 10}},
        write_ids=1,
    )
    rec.open_txn(now_ms=now_ms(rec) - 90 * H_MS)
    rec.engine.dispose()

    def snapshot():
        out = {}
        for dirpath, dirnames, filenames in os.walk(tmp_path):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                st = os.lstat(p)
                digest = hashlib.sha256(open(p, "rb").read()).hexdigest() if os.path.isfile(p) else None
                out[p] = (st.st_mtime_ns, st.st_size, digest)
        return out

    before = snapshot()
    assert run_cli(["--metastore", url, "doctor"]) == 4
    assert run_cli(["--metastore", url, "why", "db.r"]) == 0
    assert run_cli(["--metastore", url, "metrics", "--deltas"]) == 0
    capsys.readouterr()
    assert snapshot() == before


def test_doctor_on_an_object_store_filesystem(tmp_path, capsys):
    """Any fsspec filesystem: memory:// (listed with threads, as remote stores are)."""
    import fsspec

    mem = fsspec.filesystem("memory")
    root = f"/doctor-{tmp_path.name}"
    for w in (1, 2):
        mem.pipe(f"{root}/t/delta_{w:07d}_{w:07d}_0000/bucket_00000", b"x" * 10)
        mem.pipe(f"{root}/t/delta_{w:07d}_{w:07d}_0000/_orc_acid_version", b"2")
    mem.pipe(f"{root}/t/base_0000002/bucket_00000", b"y" * 10)  # no _orc_acid_version: Trino
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=3)
    rec = Recorder(url)
    rec.create_table("db", "t", location=f"memory://{root}/t", columns=[("id", "int")])
    rec.create_table("db", "u", location=f"memory://{root}/u", columns=[("id", "int")])  # missing
    for _ in range(2):
        commit_write(rec, "db", "t")
    code, rep, _ = _doctor(capsys, url)
    assert code == 4  # db.u's location does not exist
    got = {(x["code"], x["table"]) for x in rep["findings"]}
    assert ("LOCATION_MISSING", "db.u") in got and ("READER_TRINO", "db.t") in got
    obs = [x for x in rep["findings"] if x["code"] == "OBSOLETE_WAITING"][0]
    assert obs["evidence"]["dirs"] == ["delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    # one listing each: the table directory, base_0000002 and the two deltas (existence checks are not listings)
    assert rep["summary"]["directory_listings"] == 4


def test_unlistable_directory_is_a_finding_and_the_pass_goes_on(tmp_path, capsys):
    # (a permission-denied directory would do, but root reads everything: a file as the table's
    # location fails the same way)
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=3)
    rec = Recorder(url)
    table(rec, tmp_path, "ok", dirs={"delta_0000001_0000001_0000": {"bucket_00000": 10}}, write_ids=1)
    bad = tmp_path / "db.db" / "bad"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"not a directory")
    rec.create_table("db", "bad", location=f"file:{bad}", columns=[("id", "int")])
    code, rep, _ = _doctor(capsys, url)
    assert code == 4
    got = {(x["code"], x["table"]) for x in rep["findings"]}
    assert ("LISTING_FAILED", "db.bad") in got
    assert rep["summary"]["partitions_checked"] == 2 and any(p["table"] == "db.ok" for p in rep["partitions"])


def test_conf_overrides_hive_defaults(tmp_path, capsys):
    url = f"sqlite:///{tmp_path}/ms.db"
    init_metastore(url, hive_version=4)
    rec = Recorder(url)
    table(rec, tmp_path, "c", dirs={"delta_0000001_0000001_0000": {"bucket_00000": 10}}, write_ids=1)
    t = rec.open_txn(now_ms=now_ms(rec) - 2 * H_MS)  # no heartbeat for 2 h
    _, rep, _ = _doctor(capsys, url)
    assert [x["evidence"]["txn_id"] for x in rep["findings"] if x["code"] == "TXN_NO_HEARTBEAT"] == [t]
    # a site running hive.txn.timeout=3h: the txn is not timed out yet
    _, rep, _ = _doctor(capsys, url, "--conf", "hive.txn.timeout=3h")
    assert [x for x in rep["findings"] if x["code"] == "TXN_NO_HEARTBEAT"] == []
    # ... and with the 24 h warning lowered to 1 h it is a long-open txn instead
    _, rep, _ = _doctor(
        capsys,
        url,
        "--conf",
        "hive.txn.timeout=3h",
        "--conf",
        "metastore.compactor.oldest.open.txn.threshold.warning=1h",
    )
    assert [x["evidence"]["txn_id"] for x in rep["findings"] if x["code"] == "TXN_LONG_OPEN"] == [t]
    capsys.readouterr()
    assert run_cli(["--metastore", url, "doctor", "--conf", "hive.no.such=1"]) == 2
    assert "unknown --conf key" in capsys.readouterr().err
    assert (
        run_cli(["--metastore", url, "doctor", "--conf", "hive.compactor.initiator.failed.compacts.threshold=x"]) == 2
    )
