"""Hive 2.3 metastores on SQLite, PostgreSQL and MariaDB (real servers): the 2.3 transaction
schema, the ValidTxnList Hive 2.3 computes (insert-only-and-hive2.md B.2, with the values the
spec observed from Hive 2.3.10's TxnHandler), SHOW output in 2.3's shape (B.9), DB.TABLE
targets read with the metastore's snapshot, and ``upgrade-check`` (C.2, C.5)."""

from __future__ import annotations

import json
import random
import shutil

import pytest
import sqlalchemy as sa

from acidctl.metastore import hive2 as ms2
from tests.conftest import GOLDEN, run_cli
from tests.hive2_histories import random_history, write_table
from tests.metastore.hive2_helpers import add_compaction, add_table, set_txns

ALL = "9223372036854775807"


def _cols(url, table):
    eng = sa.create_engine(url)
    try:
        return {c["name"].upper() for c in sa.inspect(eng).get_columns(table)}
    finally:
        eng.dispose()


def test_schema_is_hive_23s(empty_db, backend):
    rep = ms2.init_hive2(empty_db)
    assert rep["schema_version"] == "2.3.0"
    names = set(rep["tables"])
    txn = "txns" if backend == "postgres" else "TXNS"  # Postgres: unquoted, lower-case (B.8)
    assert txn in names
    upper = {n.upper() for n in names}
    for absent in (
        "TXN_TO_WRITE_ID",
        "NEXT_WRITE_ID",
        "MIN_HISTORY_LEVEL",
        "MATERIALIZATION_REBUILD_LOCKS",
        "REPL_TXN_MAP",
    ):
        assert absent not in upper
    cq = "compaction_queue" if backend == "postgres" else "COMPACTION_QUEUE"
    assert "CQ_HIGHEST_TXN_ID" in _cols(empty_db, cq) and "CQ_HIGHEST_WRITE_ID" not in _cols(empty_db, cq)
    assert "TXN_TYPE" not in _cols(empty_db, txn)
    assert "TC_WRITEID" not in _cols(empty_db, "txn_components" if backend == "postgres" else "TXN_COMPONENTS")
    assert ms2.is_hive2(empty_db)


#: the tables hive-txn-schema-2.3.0.<db>.sql creates (Hive 2.3's metastore/scripts/upgrade), with
#: one row in each sequence table
HIVE23_TXN_SCRIPT_TABLES = {
    "TXNS",
    "TXN_COMPONENTS",
    "COMPLETED_TXN_COMPONENTS",
    "NEXT_TXN_ID",
    "HIVE_LOCKS",
    "NEXT_LOCK_ID",
    "COMPACTION_QUEUE",
    "NEXT_COMPACTION_QUEUE_ID",
    "COMPLETED_COMPACTIONS",
    "AUX_TABLE",
    "WRITE_SET",
}


def test_txn_only_schema_is_the_23_txn_script(empty_db, backend):
    """``txn_only``: only the txn tables (a real 2.3 metastore's DataNucleus creates the rest:
    tests/hive23/test_hive23_postgres.py runs Hive 2.3.10 on them), names as 2.3 spells them."""
    rep = ms2.init_hive2(empty_db, txn_only=True)
    eng = sa.create_engine(empty_db)
    try:
        names = set(sa.inspect(eng).get_table_names())
        with eng.connect() as c:
            seq = {
                t: c.execute(sa.text(f"select * from {t}")).all()
                for t in ("NEXT_TXN_ID", "NEXT_LOCK_ID", "NEXT_COMPACTION_QUEUE_ID")
            }
            aux = c.execute(sa.text("select count(*) from AUX_TABLE")).scalar()
    finally:
        eng.dispose()
    if backend == "postgres":  # unquoted, i.e. lower-case, as the 2.3 Postgres script
        assert names == {n.lower() for n in HIVE23_TXN_SCRIPT_TABLES}
    else:
        assert {n.upper() for n in names} == HIVE23_TXN_SCRIPT_TABLES
    assert set(rep["tables"]) == names
    assert seq == {t: [(1,)] for t in seq}
    assert aux == 0  # the 2.3 script inserts no mutex row: Hive adds it the first time
    # a second run refuses: the tables are there
    with pytest.raises(Exception, match="already has metastore tables"):
        ms2.init_hive2(empty_db, txn_only=True)


def test_txn_list_and_show(empty_db, capsys):
    ms2.init_hive2(empty_db)
    # B.2 observed: txn 1 committed (deleted from TXNS), 2 aborted, 3 open → 3:3:2:3
    set_txns(empty_db, {2: "a", 3: "o"}, next_txn=4)
    assert str(ms2.txn_list(empty_db)) == "3:3:2:3"
    assert str(ms2.txn_list(empty_db).for_compactor()).endswith(":2:9223372036854775807::2")

    add_table(empty_db, "db", "t", "file:/tmp/nowhere", {"transactional": "true"})
    r = run_cli("--metastore", empty_db, "show", "write-ids", "db.t")
    assert r.code == 0 and r.stdout.split()[0] == "3:3:2:3", r.stdout + r.stderr
    r = run_cli("--metastore", empty_db, "show", "locks")
    assert r.code == 2 and "Hive 2.3" in r.stderr
    r = run_cli("--metastore", empty_db, "-o", "json", "show", "transactions")
    assert r.code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["txn_high_water_mark"] == 3
    assert [(t["txn_id"], t["state"]) for t in d["transactions"]] == [(2, "ABORTED"), (3, "OPEN")]

    add_compaction(empty_db, queue=True, cid=1, db="db", table="t", partition="p=1", state="i", ctype="a")
    add_compaction(
        empty_db,
        queue=False,
        cid=2,
        db="db",
        table="u",
        partition=None,
        state="s",
        ctype="i",
        start=1000,
        end=1500,
        worker="w-1",
        highest=7,
    )
    r = run_cli("--metastore", empty_db, "-o", "wide", "show", "compactions")
    assert r.code == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    assert lines[0].split() == [
        "DATABASE",
        "TABLE",
        "PARTITION",
        "TYPE",
        "STATE",
        "WORKER",
        "START",
        "TIME",
        "DURATION",
        "HADOOPJOBID",
    ]  # 9 columns, no CompactionId (B.9)
    r = run_cli("--metastore", empty_db, "-o", "json", "show", "compactions", "db.u")
    rows = json.loads(r.stdout)["compactions"]
    assert [(c["type"], c["state"], c["duration_ms"], c["highest_txn_id"]) for c in rows] == [
        ("MINOR", "succeeded", 500, 7)
    ]


def _fixture_table(tmp_path, url):
    t = tmp_path / "w" / "seed"
    shutil.copytree(GOLDEN / "hive23_seed_table", t, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    add_table(url, "db", "seed", f"file:{t}", {"transactional": "true", "transactional_properties": "default"})
    return t


@pytest.mark.parametrize("states,rows", [({}, 3), ({2: "a"}, 3), ({2: "o"}, 3)])
def test_db_table_reads_the_metastores_snapshot(tmp_path, states, rows):
    url = f"sqlite:///{tmp_path}/ms.db"
    ms2.init_hive2(url)
    _fixture_table(tmp_path, url)
    set_txns(url, states, next_txn=3)
    r = run_cli("--metastore", url, "dump", "--merged", "db.seed")
    assert r.code == 0, r.stderr
    got = [json.loads(x) for x in r.stdout.splitlines()]
    # _EXPECTED.md: committed → Tom 7000 with ROW__ID (2,0,0); txn 2 aborted or open → Tom 8000 at (1,0,1)
    tom = [g for g in got if g["_col1"] == "Tom"]
    assert len(got) == rows and len(tom) == 1
    assert (tom[0]["row__id"]["writeid"], tom[0]["_col2"]) == ((2, 7000) if not states else (1, 8000))


def _legacy_table(tmp_path, url, *, seed_from=0):
    seed = seed_from
    while True:
        h = random_history(random.Random(seed), mode="legacy", txns=6)
        if (
            any(op == 1 for s in h.stmts if h.valid(s.txn) for op, _, _ in s.events)
            and "open" not in h.states.values()
            and h.valid(1)
            and h.valid(2)
        ):  # txn ids are global
            break
        seed += 1
    root = write_table(h, tmp_path / "w" / "legacy_t")
    add_table(url, "sales", "legacy_t", f"file:{root}", {"transactional": "true"})
    return h, root


def test_upgrade_check_report(empty_db, tmp_path):
    url = empty_db
    ms2.init_hive2(url)
    h, _ = _legacy_table(tmp_path, url)
    part = tmp_path / "w" / "split_t" / "ds=2024-01-01" / "hr=1"
    shutil.copytree(GOLDEN / "hive23_seed_table", part, ignore=shutil.ignore_patterns("_EXPECTED.md"))
    done = tmp_path / "w" / "split_t" / "ds=2024-01-02" / "hr=2" / "base_0000002"
    done.mkdir(parents=True)
    add_table(
        url,
        "sales",
        "split_t",
        f"file:{tmp_path}/w/split_t",
        {"transactional": "true", "transactional_properties": "default"},
        keys=[("ds", "string"), ("hr", "int")],
        partitions=[("ds=2024-01-01/hr=1", f"file:{part}"), ("ds=2024-01-02/hr=2", f"file:{done.parent}")],
    )
    (tmp_path / "w" / "ready_t" / "base_0000001").mkdir(parents=True)
    add_table(
        url,
        "sales",
        "ready_t",
        f"file:{tmp_path}/w/ready_t",
        {"transactional": "TRUE", "transactional_properties": "legacy"},
    )
    add_table(url, "other", "x", f"file:{tmp_path}/w/x", {"transactional": "true"})
    add_table(url, "sales", "plain", f"file:{tmp_path}/w/plain", {})
    set_txns(url, {t: "a" for t, s in h.states.items() if s == "aborted"}, next_txn=h.hwm + 1)

    r = run_cli("--metastore", url, "-o", "json", "upgrade-check", "--db", "SAL*")
    assert r.code == 4, r.stderr
    d = json.loads(r.stdout)
    by = {(p["table"], p["partition"]): p for p in d["partitions"]}
    assert set(by) == {
        ("sales.legacy_t", None),
        ("sales.split_t", "ds=2024-01-01/hr=1"),
        ("sales.split_t", "ds=2024-01-02/hr=2"),
        ("sales.ready_t", None),
    }
    assert by[("sales.legacy_t", None)]["status"] == "compact" and by[("sales.legacy_t", None)]["preupgrade_tool"]
    assert by[("sales.legacy_t", None)]["mode"] == "legacy"
    sp = by[("sales.split_t", "ds=2024-01-01/hr=1")]
    assert sp["status"] == "compact" and sp["preupgrade_tool"]  # the delete delta: stats 0,0,1
    assert sp["command"] == "ALTER TABLE sales.split_t PARTITION(ds='2024-01-01',hr=1) COMPACT 'major';"
    assert any(f["check"] == "U02" for f in sp["findings"])  # the wrong stats of the update (B.5.2)
    assert by[("sales.split_t", "ds=2024-01-02/hr=2")]["status"] == "ready"
    assert by[("sales.ready_t", None)]["status"] == "ready"
    tf = {t["table"]: [f["check"] for f in t["findings"]] for t in d["tables"]}
    assert set(tf["sales.ready_t"]) == {"U07", "U09"}  # TRUE, legacy
    assert d["commands"] == ["ALTER TABLE sales.legacy_t COMPACT 'major';", sp["command"]]
    assert not d["ready"] and d["summary"]["compact"] == 2


def test_upgrade_check_open_txn_blocks(tmp_path):
    url = f"sqlite:///{tmp_path}/ms.db"
    ms2.init_hive2(url)
    _fixture_table(tmp_path, url)
    set_txns(url, {2: "o"}, next_txn=3, components={2: ("db", "seed")})
    r = run_cli("--metastore", url, "-o", "json", "upgrade-check")
    d = json.loads(r.stdout)
    (p,) = d["partitions"]
    assert p["status"] == "blocked" and p["blocked_by"] == [
        "delete_delta_0000002_0000002_0000",
        "delta_0000002_0000002_0000",
    ]
    assert [f["check"] for f in d["tables"][0]["findings"]] == ["U10"]


def test_upgrade_check_needs_a_hive2_metastore(tmp_path):
    from acidctl.metastore.init import init_metastore

    url = f"sqlite:///{tmp_path}/ms3.db"
    init_metastore(url, hive_version=3)
    r = run_cli("--metastore", url, "upgrade-check")
    assert r.code == 2 and "Hive 2.x metastore" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "ktype,value,literal",
    [
        ("string", "a'b", "'a\\'b'"),
        ("tinyint", "1", "1Y"),
        ("smallint", "2", "2S"),
        ("int", "3", "3"),
        ("bigint", "4", "4L"),
        ("decimal(10,2)", "5.5", "5.5BD"),
        ("date", "2024-01-01", "date '2024-01-01'"),
        ("varchar(10)", "x", "'x'"),
        ("boolean", "true", "'true'"),
    ],
)
def test_partition_literals(ktype, value, literal):
    from acidctl.upgrade import partition_literal

    assert partition_literal(value, ktype) == literal


def test_upgrade_check_text_is_a_sign_off(tmp_path):
    url = f"sqlite:///{tmp_path}/ms.db"
    ms2.init_hive2(url)
    _fixture_table(tmp_path, url)
    set_txns(url, {}, next_txn=3)
    r = run_cli("--metastore", url, "upgrade-check")
    assert r.code == 4
    assert "ALTER TABLE db.seed COMPACT 'major';" in r.stdout.splitlines()
    assert r.stdout.rstrip().splitlines()[-1].startswith("NOT READY: 1 table, 1 partition")
    r = run_cli("--metastore", url, "upgrade-check", "--execute", "--engine", "local")
    assert r.code == 0, r.stdout + r.stderr
    assert "compacted db.seed: (table) (4 rows in, 3 out)" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("READY for the Hive 3 upgrade: 1 table,")
    # the metastore's snapshot now reads the base: the same 3 rows Hive 2.3 returned before
    r = run_cli("--metastore", url, "dump", "--merged", "db.seed")
    assert [json.loads(x)["_col1"] for x in r.stdout.splitlines()] == ["Jerry", "Kate", "Tom"]


def test_hive_version_2_on_a_hive3_metastore_is_refused(tmp_path):
    from acidctl.metastore.init import init_metastore

    url = f"sqlite:///{tmp_path}/ms3.db"
    init_metastore(url, hive_version=3)
    r = run_cli("--metastore", url, "state", "--hive-version", "2", "default.t")
    assert r.code == 2 and "Hive 2.x metastore" in r.stderr
