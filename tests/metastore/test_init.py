"""`acidctl metastore init`: exact names/case per database and Hive version (metastore.md §1.1,
§2, §3), seed rows, refusal to touch an existing metastore."""

from __future__ import annotations

import json

import sqlalchemy as sa

from tests.metastore.helpers import run_cli


def _names(engine) -> set[str]:
    with engine.connect() as c:
        d = engine.dialect.name
        if d == "postgresql":
            q = "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid=c.relnamespace WHERE n.nspname='public' AND relkind='r'"
        elif d in ("mysql", "mariadb"):
            q = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
        else:
            q = "SELECT name FROM sqlite_master WHERE type='table'"
        return {r[0] for r in c.execute(sa.text(q))}


def _cols(engine, table: str) -> list[str]:
    with engine.connect() as c:
        d = engine.dialect.name
        if d == "postgresql":
            rows = c.execute(
                sa.text(
                    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(:t) AND attnum > 0 "
                    "AND NOT attisdropped ORDER BY attnum"
                ),
                {"t": '"%s"' % table},
            )
        elif d in ("mysql", "mariadb"):
            rows = c.execute(
                sa.text(
                    "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() "
                    "AND table_name = :t ORDER BY ordinal_position"
                ),
                {"t": table},
            )
        else:
            rows = c.execute(sa.text("SELECT name FROM pragma_table_info(:t)"), {"t": table})
        return [r[0] for r in rows]


H3_CQ = "CQ_ID, CQ_DATABASE, CQ_TABLE, CQ_PARTITION, CQ_STATE, CQ_TYPE, CQ_TBLPROPERTIES, CQ_WORKER_ID, CQ_START, CQ_RUN_AS, CQ_HIGHEST_WRITE_ID, CQ_META_INFO, CQ_HADOOP_JOB_ID".split(
    ", "
)
H3_CC = "CC_ID, CC_DATABASE, CC_TABLE, CC_PARTITION, CC_STATE, CC_TYPE, CC_TBLPROPERTIES, CC_WORKER_ID, CC_START, CC_END, CC_RUN_AS, CC_HIGHEST_WRITE_ID, CC_META_INFO, CC_HADOOP_JOB_ID".split(
    ", "
)
H4_CC = (
    "CC_ID, CC_DATABASE, CC_TABLE, CC_PARTITION, CC_STATE, CC_TYPE, CC_TBLPROPERTIES, CC_WORKER_ID, CC_ENQUEUE_TIME, "
    "CC_START, CC_END, CC_RUN_AS, CC_HIGHEST_WRITE_ID, CC_META_INFO, CC_HADOOP_JOB_ID, CC_ERROR_MESSAGE, CC_NEXT_TXN_ID, "
    "CC_TXN_ID, CC_COMMIT_TIME, CC_INITIATOR_ID, CC_INITIATOR_VERSION, CC_WORKER_VERSION, CC_POOL_NAME, "
    "CC_NUMBER_OF_BUCKETS, CC_ORDER_BY"
).split(", ")


def test_init_names_and_columns(empty_db, backend, hive_version, capsys):
    code = run_cli(["metastore", "init", empty_db, "--hive-version", str(hive_version)])
    assert code == 0
    out = capsys.readouterr()
    assert f"Hive {hive_version}." in out.out
    eng = sa.create_engine(empty_db)
    try:
        names = _names(eng)
        # metadata tables: upper-case everywhere
        assert {"VERSION", "DBS", "TBLS", "SDS", "PARTITIONS", "PARTITION_KEYS", "TABLE_PARAMS", "COLUMNS_V2"} <= names
        pg_h3 = backend == "postgres" and hive_version == 3
        txns = "txns" if pg_h3 else "TXNS"
        assert txns in names
        assert ("TXNS" in names) != pg_h3
        cq = "compaction_queue" if pg_h3 else "COMPACTION_QUEUE"
        cc = "completed_compactions" if pg_h3 else "COMPLETED_COMPACTIONS"
        cq_cols = [c.upper() for c in _cols(eng, cq)]
        cc_cols = [c.upper() for c in _cols(eng, cc)]
        if pg_h3:
            assert _cols(eng, "txns")[0] == "txn_id"
        if hive_version == 3:
            assert cq_cols == H3_CQ and len(cq_cols) == 13
            assert cc_cols == H3_CC and len(cc_cols) == 14
            assert ("next_txn_id" if pg_h3 else "NEXT_TXN_ID") in names
            assert "TXN_LOCK_TBL" not in names and "txn_lock_tbl" not in names
        else:
            assert len(cq_cols) == 26 and cq_cols[8] == "CQ_ENQUEUE_TIME" and cq_cols[-1] == "CQ_ORDER_BY"
            assert cc_cols == H4_CC and len(cc_cols) == 25
            assert "TXN_LOCK_TBL" in names and "NEXT_TXN_ID" not in names
            assert "MIN_HISTORY_WRITE_ID" in names and "TXN_WRITE_NOTIFICATION_LOG" in names
        # seed rows
        with eng.connect() as c:
            q = eng.dialect.identifier_preparer.quote
            sv = c.execute(sa.text(f"SELECT {q('SCHEMA_VERSION')} FROM {q('VERSION')}")).scalar()
            assert sv == ("3.1.0" if hive_version == 3 else "4.0.0")
            t = txns if backend != "mysql" else "TXNS"
            col = "txn_id" if pg_h3 else "TXN_ID"
            rows = c.execute(sa.text(f"SELECT {q(col)}, {q('txn_state' if pg_h3 else 'TXN_STATE')} FROM {q(t)}")).all()
            assert rows == ([] if hive_version == 3 else [(0, "c")])
    finally:
        eng.dispose()


def test_init_refuses_existing(empty_db, hive_version, capsys):
    assert run_cli(["metastore", "init", empty_db, "--hive-version", str(hive_version)]) == 0
    capsys.readouterr()
    assert run_cli(["metastore", "init", empty_db, "--hive-version", "4"]) == 6
    err = capsys.readouterr().err
    assert "refusing" in err and len(err.strip().splitlines()) == 1


def test_hive4_generated_txn_ids_start_at_1(metastore):
    url, rec = metastore
    t1 = rec.open_txn(now_ms=1_000)
    t2 = rec.open_txn(now_ms=1_000)
    assert (t1, t2) == (1, 2)


def test_init_and_demo_share_the_default_hive_version(tmp_path, capsys):
    """One default for `metastore init` and `demo` (new-user report): Hive 3.1.0."""
    import inspect

    from acidctl.cli.demo_cmd import demo_command
    from acidctl.demo import build_demo

    url = f"sqlite:///{tmp_path}/d.db"
    assert run_cli(["metastore", "init", url]) == 0
    assert "Hive 3.1.0" in capsys.readouterr().out
    eng = sa.create_engine(url)
    with eng.connect() as c:
        assert c.execute(sa.text('SELECT "SCHEMA_VERSION" FROM "VERSION"')).scalar() == "3.1.0"
    eng.dispose()
    assert inspect.signature(build_demo).parameters["hive_version"].default == 3
    assert inspect.signature(demo_command).parameters["hive_version"].default == 3


def _default_db_location(url: str) -> str:
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            return c.execute(sa.text('SELECT "DB_LOCATION_URI" FROM "DBS" WHERE "NAME" = \'default\'')).scalar()
    finally:
        eng.dispose()


def test_init_puts_the_default_database_beside_a_sqlite_file(tmp_path, monkeypatch, capsys):
    """Report #32: the default database's location was file:/tmp/acidctl-warehouse whatever the
    metastore. A SQLite metastore file gets a `warehouse` directory beside it (a relative URL
    resolved against the current directory, as SQLite resolves it), as `acidctl demo` lays
    its warehouse out; the text says where, and nothing is created there."""
    (tmp_path / "ms").mkdir()
    assert run_cli(["metastore", "init", f"sqlite:///{tmp_path}/ms/metastore.db"]) == 0
    want = f"file:{tmp_path}/ms/warehouse"
    assert f"database default at {want} (--warehouse)" in " ".join(capsys.readouterr().out.split())
    assert _default_db_location(f"sqlite:///{tmp_path}/ms/metastore.db") == want
    assert sorted(p.name for p in (tmp_path / "ms").iterdir()) == ["metastore.db"]

    monkeypatch.chdir(tmp_path / "ms")
    assert run_cli(["-o", "json", "metastore", "init", "sqlite:///rel.db"]) == 0
    assert json.loads(capsys.readouterr().out)["warehouse"] == want
    assert _default_db_location(f"sqlite:///{tmp_path}/ms/rel.db") == want


def test_init_warehouse_option_wins_and_servers_keep_the_tmp_default(tmp_path, capsys):
    from acidctl.metastore.init import FALLBACK_WAREHOUSE, default_warehouse

    url = f"sqlite:///{tmp_path}/m.db"
    assert run_cli(["metastore", "init", url, "--warehouse", "hdfs://nn:8020/user/hive/warehouse/"]) == 0
    assert _default_db_location(url) == "hdfs://nn:8020/user/hive/warehouse"
    # a database server or an in-memory SQLite database has no directory of its own
    assert FALLBACK_WAREHOUSE == "file:/tmp/acidctl-warehouse"
    assert default_warehouse("postgresql+psycopg://hive@db/metastore") == FALLBACK_WAREHOUSE
    assert default_warehouse("mysql+pymysql://hive@db/metastore") == FALLBACK_WAREHOUSE
    assert default_warehouse("sqlite://") == FALLBACK_WAREHOUSE
    assert default_warehouse("sqlite:////srv/hive/ms.db") == "file:/srv/hive/warehouse"
