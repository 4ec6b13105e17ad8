"""Insert-only tables named DB.TABLE: format, SerDe properties and columns from the metastore
(SDS, SERDES, SERDE_PARAMS, TABLE_PARAMS, COLUMNS_V2), the snapshot from its transaction tables,
and the compaction recorded as for full-ACID tables — on real databases (SQLite, and the
PostgreSQL/MariaDB servers tests/metastore/conftest.py starts)."""

from __future__ import annotations

import json
import time

import pytest
import sqlalchemy as sa

from tests.metastore.conftest import backend, empty_db, mysql_server, pg_server  # noqa: F401  (fixtures)
from tests.metastore.conftest import hive_version, metastore  # noqa: F401, F811  (fixtures used below)
from tests.mm import hivelayout as H

TEXT_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"


def add_storage(url: str, table: str, *, slib: str, input_format: str, output_format: str, params: dict) -> None:
    """SERDES / SERDE_PARAMS as Hive's schema scripts define them (quoted upper-case names), and
    the table's SDS row pointed at them."""
    eng = sa.create_engine(url)
    md = sa.MetaData()
    serdes = sa.Table(
        "SERDES",
        md,
        sa.Column("SERDE_ID", sa.BigInteger, primary_key=True),
        sa.Column("NAME", sa.String(128)),
        sa.Column("SLIB", sa.String(4000)),
    )
    sparams = sa.Table(
        "SERDE_PARAMS",
        md,
        sa.Column("SERDE_ID", sa.BigInteger, primary_key=True),
        sa.Column("PARAM_KEY", sa.String(256), primary_key=True),
        sa.Column("PARAM_VALUE", sa.Text),
    )
    md.create_all(eng)
    sds = sa.table(
        "SDS", sa.column("SD_ID"), sa.column("SERDE_ID"), sa.column("INPUT_FORMAT"), sa.column("OUTPUT_FORMAT")
    )
    tbls = sa.table("TBLS", sa.column("SD_ID"), sa.column("TBL_NAME"))
    with eng.begin() as c:
        c.execute(serdes.insert().values(SERDE_ID=1, NAME=None, SLIB=slib))
        for k, v in params.items():
            c.execute(sparams.insert().values(SERDE_ID=1, PARAM_KEY=k, PARAM_VALUE=v))
        sd = c.execute(sa.select(tbls.c.SD_ID).where(tbls.c.TBL_NAME == table)).scalar()
        c.execute(
            sds.update()
            .where(sds.c.SD_ID == sd)
            .values(SERDE_ID=1, INPUT_FORMAT=input_format, OUTPUT_FORMAT=output_format)
        )
    eng.dispose()


def text_file(rows) -> bytes:
    # ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' (collection items keep 0x02)
    return H.encode("text", rows).replace(b"\x01", b",")


def _text_table(tmp_path, url, rec):
    """default.mmt: a comma-delimited insert-only text table with committed writes 1 and 2, an
    aborted write 3 and an open write 4; returns its root, the visible rows and write 4's txn."""
    root = tmp_path / "wh" / "mmt"
    rec.create_table("default", "mmt", location=f"file:{root}", columns=H.COLUMNS, insert_only=True)
    add_storage(
        url,
        "mmt",
        slib=TEXT_SERDE,
        input_format=TEXT_INPUT,
        output_format=TEXT_OUTPUT,
        params={"serialization.format": ",", "field.delim": ","},
    )
    writes = {
        1: ("commit", [H.row(1), H.row(2, tags=["a"])]),
        2: ("commit", [H.row(3, amount=4.5)]),
        3: ("abort", [H.row(30, name="aborted")]),
        4: ("open", [H.row(40, name="open")]),
    }
    for w, (state, rows) in writes.items():
        txn = rec.open_txn()
        rec.add_write(txn, "default", "mmt")
        d = root / f"delta_{w:07d}_{w:07d}_0000"
        d.mkdir(parents=True)
        (d / "000000_0").write_bytes(text_file(rows))
        if state == "commit":
            rec.commit_txn(txn)
        elif state == "abort":
            rec.abort_txn(txn)
    return root, [H.row(1), H.row(2, tags=["a"]), H.row(3, amount=4.5)], txn


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_text_table_from_the_metastore(tmp_path, cli, metastore, hive_version):  # noqa: F811
    url, rec = metastore
    root, visible, txn = _text_table(tmp_path, url, rec)
    r = cli("-o", "json", "--metastore", url, "dump", "--merged", "default.mmt")
    assert r.code == 0, r
    got = [json.loads(x) for x in r.stdout.splitlines()]
    assert [(g["id"], g["name"], g["tags"]) for g in got] == [(v["id"], v["name"], v["tags"]) for v in visible]

    # state --deep reads the table's format from the metastore: text files, no ORC footer checks
    r = cli("-o", "json", "--metastore", url, "state", "--deep", "default.mmt")
    assert r.code == 0, r
    checks = {f["check"] for f in json.loads(r.stdout)["findings"]}
    assert "MM02" in checks and not checks & {"F00", "F03", "F05", "MM08"}
    r = cli("-o", "json", "--metastore", url, "compact", "--major", "--engine", "local", "default.mmt")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    p = doc["partitions"][0]
    reg = p["metastore"]
    if hive_version == 3:
        assert p["output_dirs"] == ["base_0000003"]  # compactor hwm: lowest open write id (4) - 1
        assert (root / "base_0000003" / "_metadata_acid").is_file()
    else:
        assert p["output_dirs"] == [f"base_0000003_v{reg['txn_id']:07d}"]
        assert p["publish"] == "hidden-until-commit"
    out = root / p["output_dirs"][0] / "000000_0"
    assert out.read_bytes() == text_file(visible)  # same SerDe properties: ',' between fields
    eng = sa.create_engine(url)
    cq = sa.table(
        "COMPACTION_QUEUE",
        sa.column("CQ_ID"),
        sa.column("CQ_STATE"),
        sa.column("CQ_TYPE"),
        sa.column("CQ_HIGHEST_WRITE_ID"),
        sa.column("CQ_TABLE"),
    )
    if hive_version == 3 and url.startswith("postgresql"):
        cq = sa.table("compaction_queue", *[sa.column(c.name.lower()) for c in cq.columns])
    with eng.connect() as c:
        row = c.execute(sa.select(*cq.columns).where(list(cq.columns)[0] == reg["cq_id"])).one()
    eng.dispose()
    assert (row[1], row[2], row[3]) == ("r", "a", 3)
    r = cli("-o", "json", "--metastore", url, "dump", "--merged", "default.mmt")
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == [1, 2, 3]
    r = cli("-o", "json", "--metastore", url, "clean", "default.mmt", "--min-age", "0", "--execute")
    assert r.code == 0, r
    if hive_version == 4:
        # Hive 4's Cleaner waits for every txn opened before the compactor txn committed
        # (CQ_NEXT_TXN_ID, operations.md §5.2): write 4 is still open, so nothing is removed yet
        doc = json.loads(r.stdout)
        assert not doc["deleted"] and any(i["action"] == "keep (held back)" for i in doc["items"])
        assert (root / "delta_0000001_0000001_0000").is_dir()
        rec.commit_txn(txn)  # write 4 commits: its delta stays, the covered ones can go
        time.sleep(1.1)  # ... once no txn is younger than Hive 4's 1 s open-txn window
        r = cli("-o", "json", "--metastore", url, "clean", "default.mmt", "--min-age", "0", "--execute")
        assert r.code == 0, r
    left = sorted(x.name for x in root.iterdir() if not x.name.startswith("."))
    assert left == [p["output_dirs"][0], "delta_0000004_0000004_0000"]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_worker_drains_an_insert_only_request(tmp_path, cli, metastore, hive_version):  # noqa: F811
    """``ALTER TABLE ... COMPACT 'major'`` on an insert-only table, drained by ``worker --once``:
    compacted in the table's own format and SerDe (as ``compact DB.TABLE`` does), the request
    ready for cleaning with the compactor's high-water mark (3: write 4 is open)."""
    url, rec = metastore
    root, visible, _ = _text_table(tmp_path, url, rec)
    assert cli("--metastore", url, "compact", "--enqueue", "--major", "default.mmt").code == 0
    r = cli("-o", "json", "--metastore", url, "worker", "--once", "--engine", "local")
    assert r.code == 0, r
    (req,) = json.loads(r.stdout)["requests"]
    assert req["state"] == "ready for cleaning", req
    (out_dir,) = req["output_dirs"]
    assert out_dir == "base_0000003" if hive_version == 3 else out_dir.startswith("base_0000003_v")
    assert (root / out_dir / "000000_0").read_bytes() == text_file(visible)
    r = cli("-o", "json", "--metastore", url, "dump", "--merged", "default.mmt")
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == [1, 2, 3]


def _sort_cols(url: str, table: str, cols: list[str] | None) -> None:
    """SORT_COLS as Hive's schema scripts define it, with ``cols`` for the table's SDS row
    (None: leave the table out, as a minimal metastore database might)."""
    if cols is None:
        return
    eng = sa.create_engine(url)
    md = sa.MetaData()
    sc = sa.Table(
        "SORT_COLS",
        md,
        sa.Column("SD_ID", sa.BigInteger, primary_key=True),
        sa.Column("COLUMN_NAME", sa.String(767)),
        sa.Column("ORDER", sa.Integer),
        sa.Column("INTEGER_IDX", sa.Integer, primary_key=True),
    )
    md.create_all(eng)
    tbls = sa.table("TBLS", sa.column("SD_ID"), sa.column("TBL_NAME"))
    with eng.begin() as c:
        sd = c.execute(sa.select(tbls.c.SD_ID).where(tbls.c.TBL_NAME == table)).scalar()
        for i, n in enumerate(cols):
            c.execute(sc.insert().values(SD_ID=sd, COLUMN_NAME=n, ORDER=1, INTEGER_IDX=i))
    eng.dispose()


def _bucketed_table(tmp_path, url, rec, *, buckets: int, layout: dict, sort_cols: list[str] | None = []):
    """An insert-only ORC table CLUSTERED BY (id) INTO ``buckets`` BUCKETS whose committed
    writes 1, 2, ... are ``layout``'s deltas (file name → rows, as Hive's bucketed INSERT names
    them: task id = bucket id)."""
    root = tmp_path / "wh" / "bk"
    rec.create_table("default", "bk", location=f"file:{root}", columns=H.COLUMNS, insert_only=True, buckets=buckets)
    _sort_cols(url, "bk", sort_cols)
    for w, files in enumerate(layout, start=1):
        txn = rec.open_txn()
        rec.add_write(txn, "default", "bk")
        H.build(root, "orc", {f"delta_{w:07d}_{w:07d}_0000": files})
        rec.commit_txn(txn)
    return root


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
@pytest.mark.parametrize("hive_version", [3], indirect=True)
def test_bucketed_insert_only_table_keeps_one_file_per_bucket(tmp_path, cli, metastore, hive_version):  # noqa: F811
    """Hive's compaction INSERTs into a copy of the table with the same bucketing (spec A.6.1
    step 5): bucket B's rows land in 00000B_0, and a bucket without rows still gets its (empty)
    file (A.4). The rows of each input file belong to the bucket its name says."""
    import pyarrow.orc as po

    from tests.mm.test_mm_tables import norm

    url, rec = metastore
    b0 = [H.row(i) for i in (3, 6, 9)]
    b1 = [H.row(i) for i in (1, 4)]
    b0b = [H.row(12, amount=2.5)]
    b0c = [H.row(15)]
    root = _bucketed_table(
        tmp_path,
        url,
        rec,
        buckets=3,
        layout=[{"000000_0": b0, "000001_0": b1}, {"000000_0": b0b, "000000_0_copy_1": b0c}],
    )
    r = cli("-o", "json", "--metastore", url, "compact", "--major", "--engine", "local", "default.bk")
    assert r.code == 0, r
    p = json.loads(r.stdout)["partitions"][0]
    base = root / p["output_dirs"][0]
    assert sorted(x.name for x in base.iterdir()) == ["000000_0", "000001_0", "000002_0", "_metadata_acid"]

    def rows(name):
        return po.ORCFile(str(base / name)).read().cast(H.ARROW).to_pylist()

    assert norm(rows("000000_0")) == norm(b0 + b0b + b0c)
    assert norm(rows("000001_0")) == norm(b1)
    assert rows("000002_0") == []  # bucket 2 had no row: an empty ORC file, as Hive creates it
    assert (p["rows_in"], p["rows_out"]) == (7, 7)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("hive_version", [3], indirect=True)
@pytest.mark.parametrize(
    "sort_cols,files,message",
    [
        (["id"], {"000000_0": [H.row(1)]}, "SORTED BY id"),
        (None, {"000000_0": [H.row(1)]}, "does not give (no SORT_COLS)"),
        ([], {"data.orc": [H.row(1)]}, "must be named by its bucket"),
        ([], {"000007_0": [H.row(1)]}, "must be named by its bucket"),
    ],
)
def test_bucketed_insert_only_tables_acidctl_cannot_place_are_refused(
    tmp_path,
    cli,
    metastore,  # noqa: F811
    hive_version,  # noqa: F811
    sort_cols,
    files,
    message,
):
    url, rec = metastore
    root = _bucketed_table(tmp_path, url, rec, buckets=2, layout=[{"000000_0": [H.row(2)]}, files], sort_cols=sort_cols)
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    r = cli("--metastore", url, "compact", "--major", "--engine", "local", "default.bk")
    assert r.code == 6, r
    assert message in r.stderr and "\n" not in r.stderr.strip()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before
