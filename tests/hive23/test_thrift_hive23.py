"""acidctl over ``thrift://`` against a real Hive 2.3.10 metastore (tests/hive23/server.py), with
Hive's own Initiator/Worker/Cleaner as the oracle for Hive 2 compaction (issue #24).

State is planted as a Hive 2 client plants it (tests/hive23/plant.py: create_table, open_txns,
lock, commit_txn, abort_txns) and acidctl's answers are compared with the server's own Thrift
answers and with the reference model of tests/hive2_histories.py (insert-only-and-hive2.md B.1–B.7).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

from hive_metastore.ttypes import AbortTxnsRequest, ShowCompactRequest, ShowLocksRequest, TxnState

from tests.conftest import run_cli
from tests.hive2_histories import LONG_MAX, random_history
from tests.hive23 import plant

LOCK_STATES = {1: "ACQUIRED", 2: "WAITING"}
LOCK_TYPES = {1: "SHARED_READ", 2: "SHARED_WRITE", 3: "EXCLUSIVE"}


def cli(server, *args):
    """acidctl in this process, its connections made in the metastore's namespace."""
    with server.inside():
        return run_cli("--metastore", server.url, *args)


def js(r) -> dict:
    assert r.code == 0, r
    return json.loads(r.stdout)


def server_txns(hms) -> tuple[int, dict[int, str]]:
    r = hms.get_open_txns_info()
    return r.txn_high_water_mark, {t.id: TxnState._VALUES_TO_NAMES[t.state] for t in r.open_txns}


def hive2_list(hwm: int, states: dict[int, str]) -> str:
    """B.2: hwm:minOpenTxn:exceptions (every open and aborted txn ≤ hwm)."""
    exc = sorted(t for t in states if t <= hwm)
    opens = [t for t, s in states.items() if s == "OPEN" and t <= hwm]
    return f"{hwm}:{min(opens) if opens else LONG_MAX}:" + ":".join(map(str, exc))


def merged_rows(r) -> dict:
    assert r.code == 0, r
    out = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        rid = d["row__id"]
        # the row's fields by position: Hive's compactor names them as the table's columns
        # (a, b), Hive 2.3's writers _col0, _col1
        vals = [v for k, v in d.items() if k != "row__id"]
        out[(rid["writeid"], rid["bucketid"], rid["rowid"])] = {"_col0": vals[0], "_col1": vals[1]}
    return out


def history(seed: int, *, opens: bool = False):
    h = random_history(random.Random(seed), txns=6)
    if not opens:
        h.states = {t: ("aborted" if s == "open" else s) for t, s in h.states.items()}
    return h


def abort_own_open(hms, h) -> None:
    opens = [t for t, s in h.states.items() if s == "open"]
    if opens:
        hms.abort_txns(AbortTxnsRequest(txn_ids=opens))


def test_version_from_what_the_server_answers(hive23, hms):
    from acidctl.metastore import thrift

    # the premises of the spec (§4): getVersion says 3.0 on 2.3, and Hive 4's IDL reads 2.3's
    # get_open_txns set as None
    assert hms.getVersion() == "3.0"
    assert hms.get_open_txns().open_txns is None
    with hive23.inside():
        assert thrift.connect(hive23.url).hive_version == 2
    # --hive-version overrides without asking
    assert thrift.connect(hive23.url, hive_version="3").hive_version == 3
    assert hive23.started_in < 60


def test_transactions_locks_unlock_abort(hive23, hms):
    db, t = "tl_db", "t"
    plant.create_acid_table(hms, db, t, hive23.warehouse, partition_keys=["ds"])
    plant.add_partition(hms, db, t, ["1"])
    (c1,) = plant.open_txns(hms, 1)
    plant.lock(hms, c1, db, t, "ds=1")
    from hive_metastore.ttypes import CommitTxnRequest, LockType

    hms.commit_txn(CommitTxnRequest(txnid=c1))
    (a1,) = plant.open_txns(hms, 1)
    hms.abort_txns(AbortTxnsRequest(txn_ids=[a1]))
    (o1,) = plant.open_txns(hms, 1)
    writer = plant.lock(hms, o1, db, t, "ds=1").lockid
    reader = plant.lock(hms, None, db, t, kind=LockType.SHARED_READ).lockid

    # SHOW TRANSACTIONS: every open/aborted txn ≤ hwm the server reports, in id order
    hwm, states = server_txns(hms)
    rep = js(cli(hive23, "-o", "json", "show", "transactions"))
    assert rep["txn_high_water_mark"] == hwm
    assert [(x["txn_id"], x["state"]) for x in rep["transactions"]] == sorted(states.items())
    mine = {x["txn_id"]: x for x in rep["transactions"] if x["txn_id"] in (c1, a1, o1)}
    assert {k: v["state"] for k, v in mine.items()} == {a1: "ABORTED", o1: "OPEN"}  # committed ones are gone
    assert mine[o1]["user"] == plant.USER and mine[o1]["host"] == plant.HOST
    open_only = js(cli(hive23, "-o", "json", "show", "transactions", "--state", "open"))
    assert o1 in [x["txn_id"] for x in open_only["transactions"]]
    assert a1 not in [x["txn_id"] for x in open_only["transactions"]]

    # SHOW LOCKS: what was locked, as the server lists it
    rep = js(cli(hive23, "-o", "json", "show", "locks", f"{db}.{t}"))
    got = {
        (x["lock_ext_id"], x["partition"], x["lock_state"], x["lock_type"], x["transaction_id"]) for x in rep["locks"]
    }
    assert got == {(writer, "ds=1", "ACQUIRED", "SHARED_WRITE", o1), (reader, None, "ACQUIRED", "SHARED_READ", None)}
    srv = hms.show_locks(ShowLocksRequest(dbname=db, tablename=t)).locks
    assert got == {(e.lockid, e.partname, LOCK_STATES[e.state], LOCK_TYPES[e.type], e.txnid or None) for e in srv}
    part = js(cli(hive23, "-o", "json", "show", "locks", f"{db}.{t}", "--partition", "ds=1"))
    assert [x["lock_ext_id"] for x in part["locks"]] == [writer]
    ext = js(cli(hive23, "-o", "json", "show", "locks", f"{db}.{t}", "--extended"))
    assert {x["lock_ext_id"]: x["txn_state"] for x in ext["locks"]} == {writer: "OPEN", reader: None}

    # unlock: a txn's lock is refused as Hive refuses it; a lock without txn goes
    r = cli(hive23, "unlock", str(writer), "--execute")
    assert r.code == 6 and "not permitted" in r.stderr and r.stderr.count("\n") == 1, r
    dry = js(cli(hive23, "-o", "json", "unlock", str(reader)))
    assert dry["status"] == "would unlock" and not dry["executed"]
    assert reader in {e.lockid for e in hms.show_locks(ShowLocksRequest()).locks}
    r = cli(hive23, "--read-only", "unlock", str(reader), "--execute")
    assert r.code == 6, r
    assert js(cli(hive23, "-o", "json", "unlock", str(reader), "--execute"))["status"] == "unlocked"
    assert reader not in {e.lockid for e in hms.show_locks(ShowLocksRequest()).locks}
    assert js(cli(hive23, "-o", "json", "unlock", str(reader)))["status"] == "no such lock"

    # abort transactions: dry run changes nothing; --execute aborts (and Hive drops its locks)
    dry = js(cli(hive23, "-o", "json", "abort", "transactions", str(o1), str(c1)))
    assert [x["txn_id"] for x in dry["transactions"]] == [o1] and dry["not_open"] == [c1]
    assert server_txns(hms)[1][o1] == "OPEN"
    done = js(cli(hive23, "-o", "json", "abort", "transactions", str(o1), "--execute"))
    assert done["aborted"] == 1
    assert server_txns(hms)[1][o1] == "ABORTED"
    assert writer not in {e.lockid for e in hms.show_locks(ShowLocksRequest()).locks}


def test_snapshot_state_dump_export(hive23, hms, tmp_path):
    db, t = "snap_db", "t"
    loc = plant.create_acid_table(hms, db, t, hive23.warehouse)
    h = plant.play(hms, history(11, opens=True), db, t, loc)
    try:
        assert "open" in h.states.values()  # the seed has an open txn: the snapshot must hide it
        hwm, states = server_txns(hms)
        expected_list = hive2_list(hwm, states)
        rep = js(cli(hive23, "-o", "json", "show", "write-ids", f"{db}.{t}"))
        assert rep["txns"] == expected_list
        rows = merged_rows(cli(hive23, "dump", "--merged", f"{db}.{t}"))
        assert rows == h.expected(hwm)
        st = cli(hive23, "state", f"{db}.{t}")
        assert st.code == 0 and expected_list in st.stdout, st
        tables = js(cli(hive23, "-o", "json", "show", "tables", db))["tables"]
        assert [(x["table"], x["buckets"], x["location"]) for x in tables] == [
            (f"{db}.{t}", 2, f"file:{loc}")
        ]  # Hive stores file:/PATH
        assert cli(hive23, "show", "tables", "no_such_db").code == 3
        out = tmp_path / "exp"
        r = cli(hive23, "export", f"{db}.{t}", str(out))
        assert r.code == 0, r
        import pyarrow.parquet as pq

        got = sorted(
            (r["_col0"] if "_col0" in r else r["a"], r["_col1"] if "_col1" in r else r["b"])
            for f in sorted(out.rglob("*.parquet"))
            for r in pq.read_table(f).to_pylist()
        )
        assert got == sorted((v["_col0"], v["_col1"]) for v in h.expected(hwm).values())
    finally:
        abort_own_open(hms, h)


def _compactions(hms, db: str, t: str) -> list:
    return [e for e in hms.show_compact(ShowCompactRequest()).compacts if (e.dbname, e.tablename) == (db, t)]


def _bucket_rows(d: Path) -> dict[str, list]:
    import pyorc

    out = {}
    for f in sorted(d.glob("bucket_*")):
        with open(f, "rb") as fh:
            rd = pyorc.Reader(fh)
            out[f.name] = (str(rd.schema), list(rd), dict(rd.user_metadata))
    return out


def test_enqueue_then_hives_worker_and_acidctls_compaction_agree(hive23, hms, tmp_path):
    db, t = "cmp_db", "t"
    loc = plant.create_acid_table(hms, db, t, hive23.warehouse)
    h = plant.play(hms, history(5), db, t, loc)
    hwm, states = server_txns(hms)
    assert not [x for x, s in states.items() if s == "OPEN"], "another test left an open txn"
    txns = hive2_list(hwm, states)
    before = merged_rows(cli(hive23, "dump", "--merged", f"{db}.{t}"))
    assert before == h.expected()
    copy = tmp_path / "copy"
    shutil.copytree(loc, copy)
    # the same files as a second table of the metastore, for acidctl's compaction of a DB.TABLE
    twin = plant.create_acid_table(hms, db, "twin", hive23.warehouse)
    shutil.copytree(loc, twin, dirs_exist_ok=True)  # create_table made the directory

    # 2.3's compact2 would queue a table that does not exist: acidctl checks first
    r = cli(hive23, "compact", "--enqueue", "--major", f"{db}.nope")
    assert r.code == 3, r
    assert _compactions(hms, db, "nope") == []
    doc = js(cli(hive23, "-o", "json", "compact", "--enqueue", "--major", f"{db}.{t}"))
    assert doc["accepted"] and doc["message"] == f"Compaction enqueued with id {doc['id']}"
    (row,) = _compactions(hms, db, t)
    assert row.id == doc["id"] and row.type == 2  # MAJOR

    # Hive's own Worker (MapReduce, local) and Cleaner take it from there
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and _compactions(hms, db, t)[0].state not in ("succeeded", "failed", "attempted"):
        time.sleep(0.5)
    (row,) = _compactions(hms, db, t)
    assert row.state == "succeeded", hive23.log_tail()
    shown = js(cli(hive23, "-o", "json", "show", "compactions", f"{db}.{t}"))["compactions"]
    assert [(c["database"], c["table"], c["type"], c["state"], c["hadoop_job_id"]) for c in shown] == [
        (db, t, "MAJOR", "succeeded", row.hadoopJobId)
    ]
    assert shown[0]["duration_ms"] == row.endTime - row.start

    # the same rows before and after, read by acidctl through the metastore's snapshot
    assert merged_rows(cli(hive23, "dump", "--merged", f"{db}.{t}")) == before
    hive_dirs = sorted(p.name for p in loc.iterdir() if not p.name.startswith("."))
    assert hive_dirs == [f"base_{hwm:07d}"]  # the Cleaner removed what the base covers

    # acidctl's own Hive 2 compaction of the same files: the same base, buckets and events
    # (--columns: the table's names, which CompactorMR gives the row struct; a DB.TABLE target
    # takes them from the metastore)
    r = run_cli("compact", str(copy), "--major", "--hive-version", "2", "--txns", txns, "--columns", "a,b")
    assert r.code == 0, r
    ours = sorted(p.name for p in copy.iterdir() if p.name.startswith("base_"))
    assert ours == hive_dirs
    hive_files, our_files = _bucket_rows(loc / hive_dirs[0]), _bucket_rows(copy / ours[0])
    assert sorted(hive_files) == sorted(our_files)
    assert {k: v[1] for k, v in our_files.items()} == {k: v[1] for k, v in hive_files.items()}
    assert {k: v[2] for k, v in our_files.items()} == {k: v[2] for k, v in hive_files.items()}
    assert {k: v[0] for k, v in our_files.items()} == {k: v[0] for k, v in hive_files.items()}
    assert merged_rows(run_cli("dump", "--merged", str(copy), "--hive-version", "2", "--txns", txns)) == before

    # and of the twin DB.TABLE over Thrift: snapshot and column names from the metastore; the
    # run is not registered (that needs the database) and says so
    assert server_txns(hms)[0] == hwm
    r = cli(hive23, "compact", f"{db}.twin", "--major")
    assert r.code == 0 and "not registered in the metastore" in r.stdout + r.stderr, r
    assert sorted(p.name for p in twin.iterdir() if p.name.startswith("base_")) == hive_dirs
    assert _bucket_rows(twin / hive_dirs[0]) == hive_files
    assert _compactions(hms, db, "twin") == []
    assert merged_rows(cli(hive23, "dump", "--merged", f"{db}.twin")) == before


def test_partitioned_enqueue_and_what_needs_the_database(hive23, hms):
    db, t = "part_db", "t"
    plant.create_acid_table(hms, db, t, hive23.warehouse, partition_keys=["ds"])
    plant.add_partition(hms, db, t, ["2024"])
    r = cli(hive23, "compact", "--enqueue", "--major", f"{db}.{t}")
    assert r.code == 2 and "partitioned" in r.stderr, r
    r = cli(hive23, "compact", "--enqueue", "--minor", f"{db}.{t}/ds=2025")
    assert r.code == 3, r
    r = cli(hive23, "--read-only", "compact", "--enqueue", "--minor", f"{db}.{t}/ds=2024")
    assert r.code == 6 and _compactions(hms, db, t) == [], r
    dry = js(cli(hive23, "-o", "json", "compact", "--enqueue", "--minor", "--dry-run", f"{db}.{t}/ds=2024"))
    assert dry["accepted"] and _compactions(hms, db, t) == []
    doc = js(cli(hive23, "-o", "json", "compact", "--enqueue", "--minor", f"{db}.{t}/ds=2024"))
    (row,) = _compactions(hms, db, t)
    assert (row.id, row.partitionname, row.type) == (doc["id"], "ds=2024", 1)

    # the steps only the database offers: one line, exit 10, nothing written
    for args in (
        ["worker", "--once"],
        ["initiator", "--once"],
        ["clean", f"{db}.{t}"],
        ["upgrade-check"],
        ["abort", "compactions", str(doc["id"])],
    ):
        r = cli(hive23, *args)
        assert r.code == 10, (args, r)
        assert "Thrift metastore" in r.stderr and r.stderr.count("\n") == 1, (args, r)
    # doctor, why and metrics run over Thrift (tests/hive23/test_doctor_thrift_hive23.py): why of the
    # partition replays it, with the request just enqueued (while Hive's Worker has not finished it)
    before = _compactions(hms, db, t)[0].state
    w = json.loads(cli(hive23, "-o", "json", "why", f"{db}.{t}/ds=2024").stdout)
    after = _compactions(hms, db, t)[0].state
    (wp,) = w["partitions"]
    assert (w["hive_version"], wp["partition"]) == (2, "ds=2024")
    (queued,) = [s for s in wp["initiator"]["steps"] if s["rule"] == "queued"]
    if before in ("initiated", "working") and after == before:
        assert queued["outcome"] == "stop" and queued["values"]["compaction_id"] == doc["id"]


def test_real_console_script_in_the_namespace_and_unreachable(hive23, hms):
    p = hive23.acidctl("-o", "json", "show", "transactions")
    assert p.returncode == 0, p.stderr
    hwm, states = server_txns(hms)
    assert [(x["txn_id"], x["state"]) for x in json.loads(p.stdout)["transactions"]] == sorted(states.items())
    # outside the namespace nothing listens: unreachable is exit 5, one line
    r = run_cli("--metastore", hive23.url, "show", "transactions")
    assert r.code == 5 and "cannot reach the Thrift metastore" in r.stderr and r.stderr.count("\n") == 1, r


def test_kerberos_option_without_a_ticket_is_one_line(hive23, monkeypatch, tmp_path):
    from acidctl.metastore.thrift import ThriftUrl

    u = ThriftUrl.parse("thrift://hms.example:9999?auth=kerberos&service=hms")
    assert (u.host, u.port, u.auth, u.service) == ("hms.example", 9999, "kerberos", "hms")
    assert ThriftUrl.parse("thrift://h").port == 9083 and ThriftUrl.parse("thrift://h").service == "hive"
    assert run_cli("--metastore", "thrift://h?auth=digest", "show", "transactions").code == 2
    # no ticket cache: the SASL/GSSAPI handshake fails on the client; one line naming the cause,
    # exit 8 (authentication), as WebHDFS and the database say it
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path}/none")
    with hive23.inside():
        r = run_cli("--metastore", hive23.url + "?auth=kerberos", "show", "transactions")
    assert r.code == 8 and "Kerberos (SASL/GSSAPI, service hive)" in r.stderr and r.stderr.count("\n") == 1, r
    assert f"no Kerberos ticket in FILE:{tmp_path}/none" in r.stderr, r


def test_thrift_url_from_a_profile(hive23, hms):
    import os

    Path(os.environ["ACIDCTL_CONFIG"]).write_text(f'[profiles.h23]\nmetastore = "{hive23.url}"\nread_only = true\n')
    with hive23.inside():
        r = run_cli("--profile", "h23", "-o", "json", "show", "transactions")
        hwm, _ = server_txns(hms)
        assert js(r)["txn_high_water_mark"] == hwm
        # the profile's read_only key forbids Thrift writes as it forbids SQL ones
        r = run_cli("--profile", "h23", "abort", "transactions", "--older-than", "0", "--execute")
    assert r.code == 6 and "read" in r.stderr.lower(), r


def test_partitioned_table_over_thrift(hive23, hms):
    db, t = "psnap_db", "t"
    plant.create_acid_table(hms, db, t, hive23.warehouse, partition_keys=["ds"])
    p1 = plant.add_partition(hms, db, t, ["1"])
    p2 = plant.add_partition(hms, db, t, ["2"])
    h1 = plant.play(hms, history(21), db, t, p1, partition="ds=1")
    h2 = plant.play(hms, history(22), db, t, p2, partition="ds=2")
    hwm, _ = server_txns(hms)
    assert merged_rows(cli(hive23, "dump", "--merged", f"{db}.{t}/ds=1")) == h1.expected(hwm)
    assert merged_rows(cli(hive23, "dump", "--merged", f"{db}.{t}/ds=2")) == h2.expected(hwm)
    r = cli(hive23, "dump", "--merged", f"{db}.{t}")
    assert r.code == 0, r
    assert len(r.stdout.splitlines()) == len(h1.expected(hwm)) + len(h2.expected(hwm))
    st = cli(hive23, "state", f"{db}.{t}/ds=2")
    assert st.code == 0 and str(p2) in st.stdout, st
    assert cli(hive23, "state", f"{db}.{t}/ds=3").code == 3
    tables = js(cli(hive23, "-o", "json", "show", "tables", db))["tables"]
    assert [(x["partition_keys"], x["partitions"]) for x in tables] == [(["ds"], 2)]
