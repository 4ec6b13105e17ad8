"""`acidctl metastore init` against an independent description of Hive's schematool scripts
(``hive-schema-3.1.0`` / ``hive-schema-4.0.0`` for postgres and mysql; metastore.md §2–§3, §12),
read back through the database catalogs: information_schema / pg_catalog / sqlite pragma.

The description below is written from the scripts' facts, not from acidctl's schema model:
per table, each column as ``NAME<family>[!]`` with family B bigint, I int, N "bigint in the
Postgres script, int(11) in the MySQL one", C char, V varchar, T text (MySQL medium/longtext),
X binary (bytea / varbinary), L boolean (MySQL bit(1)), S timestamp; ``!`` NOT NULL; ``@3`` /
``@4`` only in that version; then ``pk=...``.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from acidctl.metastore.init import init_metastore

#: Hive 3.1.0 already has TXN_WRITE_NOTIFICATION_LOG (HIVE-19267, quoted upper-case in its
#: Postgres script, so not among the lower-case TXN_TABLES below) and TBLS/PARTITIONS.WRITE_ID
#: (upgrade-3.0.0-to-3.1.0: ``ALTER TABLE TBLS ADD WRITE_ID bigint DEFAULT 0``)
HIVE_SCHEMA = """
TXNS: TXN_IDB! TXN_STATEC! TXN_STARTEDB! TXN_LAST_HEARTBEATB! TXN_USERV! TXN_HOSTV! TXN_AGENT_INFOV
      TXN_META_INFOV TXN_HEARTBEAT_COUNTI TXN_TYPEI pk=TXN_ID
TXN_COMPONENTS: TC_TXNIDB! TC_DATABASEV! TC_TABLEV TC_PARTITIONV TC_OPERATION_TYPEC! TC_WRITEIDB
COMPLETED_TXN_COMPONENTS: CTC_TXNIDB! CTC_DATABASEV! CTC_TABLEV CTC_PARTITIONV CTC_TIMESTAMPS! CTC_WRITEIDB
      CTC_UPDATE_DELETEC!
NEXT_TXN_ID@3: NTXN_NEXTB!
TXN_LOCK_TBL@4: TXN_LOCKB!
HIVE_LOCKS: HL_LOCK_EXT_IDB! HL_LOCK_INT_IDB! HL_TXNIDB! HL_DBV! HL_TABLEV HL_PARTITIONV HL_LOCK_STATEC!
      HL_LOCK_TYPEC! HL_LAST_HEARTBEATB! HL_ACQUIRED_ATB HL_USERV! HL_HOSTV! HL_HEARTBEAT_COUNTI HL_AGENT_INFOV
      HL_BLOCKEDBY_EXT_IDB HL_BLOCKEDBY_INT_IDB pk=HL_LOCK_EXT_ID,HL_LOCK_INT_ID
NEXT_LOCK_ID: NL_NEXTB!
COMPACTION_QUEUE: CQ_IDB! CQ_DATABASEV! CQ_TABLEV! CQ_PARTITIONV CQ_STATEC! CQ_TYPEC! CQ_TBLPROPERTIESV
      CQ_WORKER_IDV CQ_ENQUEUE_TIMEB@4 CQ_STARTB CQ_RUN_ASV CQ_HIGHEST_WRITE_IDB CQ_META_INFOX CQ_HADOOP_JOB_IDV
      CQ_ERROR_MESSAGET@4 CQ_NEXT_TXN_IDB@4 CQ_TXN_IDB@4 CQ_COMMIT_TIMEB@4 CQ_INITIATOR_IDV@4
      CQ_INITIATOR_VERSIONV@4 CQ_WORKER_VERSIONV@4 CQ_CLEANER_STARTB@4 CQ_RETRY_RETENTIONB!@4 CQ_POOL_NAMEV@4
      CQ_NUMBER_OF_BUCKETSI@4 CQ_ORDER_BYV@4 pk=CQ_ID
NEXT_COMPACTION_QUEUE_ID: NCQ_NEXTB!
COMPLETED_COMPACTIONS: CC_IDB! CC_DATABASEV! CC_TABLEV! CC_PARTITIONV CC_STATEC! CC_TYPEC! CC_TBLPROPERTIESV
      CC_WORKER_IDV CC_ENQUEUE_TIMEB@4 CC_STARTB CC_ENDB CC_RUN_ASV CC_HIGHEST_WRITE_IDB CC_META_INFOX
      CC_HADOOP_JOB_IDV CC_ERROR_MESSAGET@4 CC_NEXT_TXN_IDB@4 CC_TXN_IDB@4 CC_COMMIT_TIMEB@4
      CC_INITIATOR_IDV@4 CC_INITIATOR_VERSIONV@4 CC_WORKER_VERSIONV@4 CC_POOL_NAMEV@4 CC_NUMBER_OF_BUCKETSI@4
      CC_ORDER_BYV@4 pk=CC_ID
AUX_TABLE: MT_KEY1V! MT_KEY2B! MT_COMMENTV pk=MT_KEY1,MT_KEY2
WRITE_SET: WS_DATABASEV! WS_TABLEV! WS_PARTITIONV WS_TXNIDB! WS_COMMIT_IDB! WS_OPERATION_TYPEC!
TXN_TO_WRITE_ID: T2W_TXNIDB! T2W_DATABASEV! T2W_TABLEV! T2W_WRITEIDB!
NEXT_WRITE_ID: NWI_DATABASEV! NWI_TABLEV! NWI_NEXTB!
MIN_HISTORY_LEVEL: MHL_TXNIDB! MHL_MIN_OPEN_TXNIDB! pk=MHL_TXNID
MIN_HISTORY_WRITE_ID@4: MH_TXNIDB! MH_DATABASEV! MH_TABLEV! MH_WRITEIDB!
MATERIALIZATION_REBUILD_LOCKS: MRL_TXN_IDB! MRL_DB_NAMEV! MRL_TBL_NAMEV! MRL_LAST_HEARTBEATB! pk=MRL_TXN_ID
TXN_WRITE_NOTIFICATION_LOG: WNL_IDB! WNL_TXNIDB! WNL_WRITEIDB! WNL_DATABASEV! WNL_TABLEV! WNL_PARTITIONV!
      WNL_TABLE_OBJT! WNL_PARTITION_OBJT WNL_FILEST WNL_EVENT_TIMEI!
      pk=WNL_TXNID,WNL_DATABASE,WNL_TABLE,WNL_PARTITION
COMPACTION_METRICS_CACHE@4: CMC_DATABASEV! CMC_TABLEV! CMC_PARTITIONV CMC_METRIC_TYPEV! CMC_METRIC_VALUEI!
      CMC_VERSIONI!
REPL_TXN_MAP: RTM_REPL_POLICYV! RTM_SRC_TXN_IDB! RTM_TARGET_TXN_IDB! pk=RTM_REPL_POLICY,RTM_SRC_TXN_ID
VERSION: VER_IDB! SCHEMA_VERSIONV! VERSION_COMMENTV pk=VER_ID
CTLGS: CTLG_IDB! NAMEV DESCV LOCATION_URIV! CREATE_TIMEN@4 pk=CTLG_ID
DBS: DB_IDB! DESCV DB_LOCATION_URIV! NAMEV OWNER_NAMEV OWNER_TYPEV CTLG_NAMEV CREATE_TIMEN@4
      DB_MANAGED_LOCATION_URIV@4 TYPEV!@4 DATACONNECTOR_NAMEV@4 REMOTE_DBNAMEV@4 pk=DB_ID
DATABASE_PARAMS: DB_IDB! PARAM_KEYV! PARAM_VALUEV pk=DB_ID,PARAM_KEY
CDS: CD_IDB! pk=CD_ID
COLUMNS_V2: CD_IDB! COMMENTV COLUMN_NAMEV! TYPE_NAMET INTEGER_IDXI! pk=CD_ID,COLUMN_NAME
SERDES: SERDE_IDB! NAMEV SLIBV DESCRIPTIONV SERIALIZER_CLASSV DESERIALIZER_CLASSV SERDE_TYPEI pk=SERDE_ID
SERDE_PARAMS: SERDE_IDB! PARAM_KEYV! PARAM_VALUET pk=SERDE_ID,PARAM_KEY
SDS: SD_IDB! INPUT_FORMATV IS_COMPRESSEDL! LOCATIONV NUM_BUCKETSN! OUTPUT_FORMATV SERDE_IDB CD_IDB
      IS_STOREDASSUBDIRECTORIESL! pk=SD_ID
TBLS: TBL_IDB! CREATE_TIMEN! DB_IDB LAST_ACCESS_TIMEN! OWNERV OWNER_TYPEV RETENTIONN! SD_IDB TBL_NAMEV
      TBL_TYPEV VIEW_EXPANDED_TEXTT VIEW_ORIGINAL_TEXTT IS_REWRITE_ENABLEDL! WRITE_IDB pk=TBL_ID
TABLE_PARAMS: TBL_IDB! PARAM_KEYV! PARAM_VALUET pk=TBL_ID,PARAM_KEY
PARTITIONS: PART_IDB! CREATE_TIMEN! LAST_ACCESS_TIMEN! PART_NAMEV SD_IDB TBL_IDB WRITE_IDB pk=PART_ID
PARTITION_KEYS: TBL_IDB! PKEY_COMMENTV PKEY_NAMEV! PKEY_TYPEV! INTEGER_IDXN! pk=TBL_ID,PKEY_NAME
PARTITION_KEY_VALS: PART_IDB! PART_KEY_VALV INTEGER_IDXN! pk=PART_ID,INTEGER_IDX
PARTITION_PARAMS: PART_IDB! PARAM_KEYV! PARAM_VALUEV@3 PARAM_VALUET@4 pk=PART_ID,PARAM_KEY
SEQUENCE_TABLE: SEQUENCE_NAMEV! NEXT_VALB! pk=SEQUENCE_NAME
"""

TXN_TABLES = {
    "TXNS",
    "TXN_COMPONENTS",
    "COMPLETED_TXN_COMPONENTS",
    "NEXT_TXN_ID",
    "TXN_LOCK_TBL",
    "HIVE_LOCKS",
    "NEXT_LOCK_ID",
    "COMPACTION_QUEUE",
    "NEXT_COMPACTION_QUEUE_ID",
    "COMPLETED_COMPACTIONS",
    "AUX_TABLE",
    "WRITE_SET",
    "TXN_TO_WRITE_ID",
    "NEXT_WRITE_ID",
    "MIN_HISTORY_LEVEL",
    "MIN_HISTORY_WRITE_ID",
    "MATERIALIZATION_REBUILD_LOCKS",
    "COMPACTION_METRICS_CACHE",
    "REPL_TXN_MAP",
}


def expected(backend: str, hv: int) -> dict:
    """table -> {"cols": {COLUMN: (family, nullable)}, "pk": set}"""
    out = {}
    text = HIVE_SCHEMA.strip().replace("\n      ", " ")
    for line in text.splitlines():
        head, _, body = line.partition(":")
        name, _, only = head.partition("@")
        if only and int(only) != hv:
            continue
        cols, pk = {}, set()
        for tok in body.split():
            if tok.startswith("pk="):
                pk = set(tok[3:].split(","))
                continue
            tok, _, only = tok.partition("@")
            if only and int(only) != hv:
                continue
            notnull = tok.endswith("!")
            tok = tok.rstrip("!")
            col, fam = tok[:-1], tok[-1]
            if fam == "N":
                fam = "B" if backend == "postgres" else "I"
            if backend == "sqlite" and fam == "B":
                fam = "I"  # one INTEGER affinity
            cols[col] = (fam, not notnull)
        out[name] = {"cols": cols, "pk": pk}
    # the differences between the scripts that families do not express
    if backend == "mysql":
        out["VERSION"]["cols"]["VERSION_COMMENT"] = ("V", True)  # NOT NULL only in the Postgres script
    else:
        out["VERSION"]["cols"]["VERSION_COMMENT"] = ("V", False)
    if not (backend == "postgres" and hv == 3):
        out["DBS"]["cols"]["CTLG_NAME"] = ("V", False)  # 3.1.0 Postgres: nullable, no default
    return out


_PG_FAMILY = {
    "bigint": "B",
    "integer": "I",
    "character": "C",
    "character varying": "V",
    "text": "T",
    "bytea": "X",
    "boolean": "L",
    "timestamp without time zone": "S",
}
_MY_FAMILY = {
    "bigint": "B",
    "int": "I",
    "char": "C",
    "varchar": "V",
    "mediumtext": "T",
    "longtext": "T",
    "text": "T",
    "varbinary": "X",
    "bit": "L",
    "timestamp": "S",
}


def _sqlite_family(t: str) -> str:
    t = t.upper()
    for prefix, fam in (
        ("BIGINT", "I"),
        ("INTEGER", "I"),
        ("INT", "I"),
        ("CHAR(", "C"),
        ("VARCHAR", "V"),
        ("TEXT", "T"),
        ("BLOB", "X"),
        ("BOOLEAN", "L"),
        ("TIMESTAMP", "S"),
    ):
        if t.startswith(prefix):
            return fam
    raise AssertionError(t)


def catalog(engine) -> dict:
    """table (as stored) -> {"cols": {COL (as stored): (family, nullable)}, "pk": set, "generated": set}"""
    d = engine.dialect.name
    out: dict = {}
    with engine.connect() as c:
        if d == "postgresql":
            for t, col, dt, nullable, default in c.execute(
                sa.text(
                    "SELECT table_name, column_name, data_type, is_nullable, column_default "
                    "FROM information_schema.columns WHERE table_schema = 'public'"
                )
            ):
                e = out.setdefault(t, {"cols": {}, "pk": set(), "generated": set()})
                e["cols"][col] = (_PG_FAMILY[dt], nullable == "YES")
                if default and default.startswith("nextval("):
                    e["generated"].add(col)
            for t, col in c.execute(
                sa.text(
                    "SELECT tc.table_name, k.column_name FROM information_schema.table_constraints tc "
                    "JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name "
                    "AND k.table_schema = tc.table_schema AND k.table_name = tc.table_name "
                    "WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = 'public'"
                )
            ):
                out[t]["pk"].add(col)
        elif d in ("mysql", "mariadb"):
            for t, col, dt, nullable, _key, extra in c.execute(
                sa.text(
                    "SELECT table_name, column_name, data_type, is_nullable, column_key, extra "
                    "FROM information_schema.columns WHERE table_schema = DATABASE()"
                )
            ):
                e = out.setdefault(t, {"cols": {}, "pk": set(), "generated": set()})
                e["cols"][col] = (_MY_FAMILY[dt], nullable == "YES")
                if "auto_increment" in extra.lower():
                    e["generated"].add(col)
            # column_key says PRI also for a table's first NOT NULL unique key: ask for PRIMARY itself
            for t, col in c.execute(
                sa.text(
                    "SELECT table_name, column_name FROM information_schema.key_column_usage "
                    "WHERE table_schema = DATABASE() AND constraint_name = 'PRIMARY'"
                )
            ):
                out[t]["pk"].add(col)
        else:
            tables = [
                r[0]
                for r in c.execute(
                    sa.text("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                )
            ]
            for t in tables:
                e = out.setdefault(t, {"cols": {}, "pk": set(), "generated": set()})
                sql = c.execute(sa.text("SELECT sql FROM sqlite_master WHERE name = :t"), {"t": t}).scalar()
                for _cid, col, typ, notnull, _dflt, pk in c.execute(
                    sa.text("SELECT * FROM pragma_table_info(:t)"), {"t": t}
                ):
                    e["cols"][col] = (_sqlite_family(typ), not notnull and not pk)
                    if pk:
                        e["pk"].add(col)
                        if typ.upper() == "INTEGER" and "AUTOINCREMENT" in sql.upper():
                            e["generated"].add(col)
    return out


def test_init_matches_hive_schematool(empty_db, backend, hive_version):
    init_metastore(empty_db, hive_version=hive_version)
    eng = sa.create_engine(empty_db)
    try:
        got = catalog(eng)
        want = expected(backend, hive_version)
        pg_h3 = backend == "postgres" and hive_version == 3

        def stored(name: str) -> str:
            return name.lower() if (pg_h3 and name in TXN_TABLES) else name

        for table, spec in want.items():
            phys = stored(table)
            assert phys in got, f"{table} missing"
            g = got[phys]
            cols = {(k.upper()): v for k, v in g["cols"].items()}
            if pg_h3 and table in TXN_TABLES:
                assert all(k == k.lower() for k in g["cols"]), table
            else:
                assert all(k == k.upper() for k in g["cols"]), table
            assert cols == spec["cols"], table
            assert {c.upper() for c in g["pk"]} == spec["pk"], table
            gen = {c.upper() for c in g["generated"]}
            assert gen == ({"TXN_ID"} if (table == "TXNS" and hive_version == 4) else set()), table
        # absent by version
        absent = {
            3: ["TXN_LOCK_TBL", "MIN_HISTORY_WRITE_ID", "COMPACTION_METRICS_CACHE"],
            4: ["NEXT_TXN_ID"],
        }[hive_version]
        for t in absent:
            assert stored(t) not in got and t not in got
    finally:
        eng.dispose()


def _q(eng, name: str) -> str:
    return eng.dialect.identifier_preparer.quote(name)


def test_init_rows_are_schematools(empty_db, backend, hive_version):
    """Seed rows of Hive's init scripts, the VERSION row as schematool writes it, no mutex rows."""
    init_metastore(empty_db, hive_version=hive_version)
    eng = sa.create_engine(empty_db)
    pg_h3 = backend == "postgres" and hive_version == 3
    n = (lambda s: s.lower()) if pg_h3 else (lambda s: s)
    q = lambda s: _q(eng, s)  # noqa: E731
    try:
        with eng.connect() as c:
            one = lambda sql: c.execute(sa.text(sql)).all()  # noqa: E731
            assert one(f"SELECT {q('VER_ID')}, {q('SCHEMA_VERSION')}, {q('VERSION_COMMENT')} FROM {q('VERSION')}") == [
                (
                    1,
                    f"{hive_version}.{'1' if hive_version == 3 else '0'}.0",
                    f"Hive release version {hive_version}.{'1' if hive_version == 3 else '0'}.0",
                )
            ]
            assert one(f"SELECT {q(n('NL_NEXT'))} FROM {q(n('NEXT_LOCK_ID'))}") == [(1,)]
            assert one(f"SELECT {q(n('NCQ_NEXT'))} FROM {q(n('NEXT_COMPACTION_QUEUE_ID'))}") == [(1,)]
            assert one(f"SELECT COUNT(*) FROM {q(n('AUX_TABLE'))}") == [(0,)]
            assert one(f"SELECT {q('CTLG_ID')}, {q('NAME')}, {q('LOCATION_URI')} FROM {q('CTLGS')}") == [
                (1, "hive", "TBD")
            ]
            seqs = sorted(
                r[0].rsplit(".", 1)[1] for r in one(f"SELECT {q('SEQUENCE_NAME')} FROM {q('SEQUENCE_TABLE')}")
            )
            # both scripts (3.1.0 with HIVE-19267's TXN_WRITE_NOTIFICATION_LOG)
            assert seqs == ["MNotificationLog", "MTxnWriteNotificationLog"]
            if hive_version == 3:
                assert one(f"SELECT {q(n('NTXN_NEXT'))} FROM {q(n('NEXT_TXN_ID'))}") == [(1,)]
                assert one(f"SELECT COUNT(*) FROM {q(n('TXNS'))}") == [(0,)]
            else:
                assert one(f"SELECT {q('TXN_LOCK')} FROM {q('TXN_LOCK_TBL')}") == [(1,)]
                assert one(
                    f"SELECT {q('TXN_ID')}, {q('TXN_STATE')}, {q('TXN_STARTED')}, {q('TXN_USER')} FROM {q('TXNS')}"
                ) == [(0, "c", 0, "")]
    finally:
        eng.dispose()


def _indexes(eng) -> dict:
    """index name (as stored) -> (table, columns, unique)"""
    d = eng.dialect.name
    out = {}
    with eng.connect() as c:
        if d == "postgresql":
            rows = c.execute(
                sa.text(
                    "SELECT i.relname, t.relname, ix.indisunique, "
                    "array_to_string(ARRAY(SELECT a.attname FROM unnest(ix.indkey) WITH ORDINALITY k(n, o) "
                    "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n ORDER BY k.o), ',') "
                    "FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid "
                    "JOIN pg_namespace s ON s.oid = t.relnamespace WHERE s.nspname = 'public' AND NOT ix.indisprimary"
                )
            )
            for name, t, uniq, cols in rows:
                out[name] = (t, cols, bool(uniq))
        elif d in ("mysql", "mariadb"):
            rows = c.execute(
                sa.text(
                    "SELECT index_name, table_name, non_unique, GROUP_CONCAT(column_name ORDER BY seq_in_index) "
                    "FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name <> 'PRIMARY' "
                    "GROUP BY index_name, table_name, non_unique"
                )
            )
            for name, t, nonuniq, cols in rows:
                out[name] = (t, cols, not nonuniq)
        else:
            for name, t in c.execute(sa.text("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")):
                uniq = c.execute(
                    sa.text('SELECT "unique" FROM pragma_index_list(:t) WHERE name = :n'), {"t": t, "n": name}
                ).scalar()
                cols = ",".join(
                    r[0]
                    for r in c.execute(sa.text("SELECT name FROM pragma_index_info(:n) ORDER BY seqno"), {"n": name})
                )
                out[name] = (t, cols, bool(uniq))
    return out


def test_init_keys_and_indexes(empty_db, backend, hive_version):
    """Unique keys the protocol relies on, and the indexes of Hive's scripts (names as stored)."""
    init_metastore(empty_db, hive_version=hive_version)
    eng = sa.create_engine(empty_db)
    try:
        ix = _indexes(eng)
        pg = backend == "postgres"
        pg_h3 = pg and hive_version == 3
        low = (lambda s: s.lower()) if pg_h3 else (lambda s: s)
        by_def = {(t.upper(), cols.upper(), u) for t, cols, u in ix.values()}
        for want in [
            ("TXN_TO_WRITE_ID", "T2W_DATABASE,T2W_TABLE,T2W_TXNID", True),
            ("TXN_TO_WRITE_ID", "T2W_DATABASE,T2W_TABLE,T2W_WRITEID", True),
            ("NEXT_WRITE_ID", "NWI_DATABASE,NWI_TABLE", True),
            ("MIN_HISTORY_LEVEL", "MHL_MIN_OPEN_TXNID", False),
            ("TXN_COMPONENTS", "TC_TXNID", False),
            ("HIVE_LOCKS", "HL_TXNID", False),
            ("COMPLETED_TXN_COMPONENTS", "CTC_DATABASE,CTC_TABLE,CTC_PARTITION", False),
            ("TBLS", "TBL_NAME,DB_ID", True),
            ("PARTITIONS", "PART_NAME,TBL_ID", True),
            ("DBS", "NAME,CTLG_NAME", True),
            ("DATABASE_PARAMS", "DB_ID", False),
        ]:
            assert want in by_def, want
        assert (("COMPLETED_COMPACTIONS", "CC_DATABASE,CC_TABLE,CC_PARTITION", False) in by_def) == (hive_version == 4)
        # names as Hive's scripts leave them: Postgres lower-cases the unquoted ones
        assert low("TBL_TO_WRITE_ID_IDX") in ix and low("NEXT_WRITE_ID_IDX") in ix
        if pg:
            assert {"tc_txnid_index", "hl_txnid_index", "completed_txn_components_index"} <= set(ix)
        elif backend == "mysql":
            assert {"TC_TXNID_INDEX", "HL_TXNID_IDX", "HIVE_LOCK_TXNID_INDEX", "COMPLETED_TXN_COMPONENTS_IDX"} <= set(
                ix
            )
    finally:
        eng.dispose()


@pytest.mark.parametrize(
    "backend", [pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mysql", marks=pytest.mark.mysql)]
)
def test_txn_components_reference_txns(empty_db, backend, hive_version):
    """Both scripts declare TXN_COMPONENTS.TC_TXNID REFERENCES TXNS(TXN_ID): enforced."""
    init_metastore(empty_db, hive_version=hive_version)
    eng = sa.create_engine(empty_db)
    pg_h3 = backend == "postgres" and hive_version == 3
    n = (lambda s: s.lower()) if pg_h3 else (lambda s: s)
    q = lambda s: _q(eng, n(s))  # noqa: E731
    try:
        with pytest.raises(sa.exc.IntegrityError):
            with eng.begin() as c:
                c.execute(
                    sa.text(
                        f"INSERT INTO {q('TXN_COMPONENTS')} ({q('TC_TXNID')}, {q('TC_DATABASE')}, "
                        f"{q('TC_OPERATION_TYPE')}) VALUES (42, 'db', 'i')"
                    )
                )
    finally:
        eng.dispose()


@pytest.mark.parametrize("backend", [pytest.param("mysql", marks=pytest.mark.mysql)])
def test_mysql_tables_are_latin1_with_binary_name_columns(empty_db, backend, hive_version):
    """Hive's MySQL script: InnoDB latin1 tables; metadata name columns ``CHARACTER SET latin1
    COLLATE latin1_bin`` (case-sensitive), except e.g. ``DBS.CTLG_NAME`` / ``COLUMNS_V2.TYPE_NAME``."""
    init_metastore(empty_db, hive_version=hive_version)
    eng = sa.create_engine(empty_db)
    try:
        with eng.connect() as c:
            coll = {
                (t, col): co
                for t, col, co in c.execute(
                    sa.text(
                        "SELECT table_name, column_name, collation_name FROM information_schema.columns "
                        "WHERE table_schema = DATABASE() AND collation_name IS NOT NULL"
                    )
                )
            }
            engines = {
                r[0]
                for r in c.execute(
                    sa.text("SELECT DISTINCT engine FROM information_schema.tables WHERE table_schema = DATABASE()")
                )
            }
        assert engines == {"InnoDB"}
        assert {co.split("_")[0] for co in coll.values()} == {"latin1"}
        for t, col in [
            ("TBLS", "TBL_NAME"),
            ("DBS", "NAME"),
            ("PARTITIONS", "PART_NAME"),
            ("TABLE_PARAMS", "PARAM_VALUE"),
            ("DATABASE_PARAMS", "PARAM_KEY"),
            ("DATABASE_PARAMS", "PARAM_VALUE"),
            ("SDS", "LOCATION"),
            ("COLUMNS_V2", "COLUMN_NAME"),
        ]:
            assert coll[(t, col)] == "latin1_bin", (t, col)
        assert coll[("DBS", "CTLG_NAME")] != "latin1_bin" and coll[("COLUMNS_V2", "TYPE_NAME")] != "latin1_bin"
        assert coll[("TXNS", "TXN_USER")] != "latin1_bin"
    finally:
        eng.dispose()
