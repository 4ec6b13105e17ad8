"""SHOW COMPACTIONS parity with Hive 4.0 (issue #10): the order of Hive's own query
(``ShowCompactHandler``: queue rows with end -1 UNION ALL history, ``ORDER BY CASE WHEN end >
start AND end > commit THEN end WHEN start > commit THEN start ELSE commit END DESC,
enqueue ASC``, then LIMIT), its literal pool/type filters, and ShowCompactionsOperation's text
cells. Expected orders are worked out by hand from that SQL, per database NULL order."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.metastore.helpers import cli_json, cli_text, table_rows

# (id, state, type, start, end, commit, enqueue, pool, txn, next txn, highest write id)
HISTORY = [
    (10, "s", "a", 1000, 5000, 2000, 100, None, 55, 56, 9),  # key: end 5000
    (11, "x", "i", None, 4000, None, 200, "default", None, None, None),  # key NULL (commit NULL)
    (12, "f", "a", 3000, 3500, 6000, 300, "etl", 57, 58, 3),  # end < commit, start < commit: 6000
    (13, "c", "a", 7000, 7100, 7050, 50, None, 59, 60, 4),  # end 7100
]
QUEUE = [
    (20, "r", "i", 2500, None, 2600, 150, "etl", 61, 62, 5),  # -1 end; start < commit: 2600
    (21, "w", "a", 8000, None, None, 400, None, None, None, None),  # key NULL
    (22, "i", "a", None, None, None, 500, "default", None, None, None),  # key NULL
]
# keys: 13:7100, 12:6000, 10:5000, 20:2600; NULL keys 11 (enqueue 200), 21 (400), 22 (500)
NON_NULL = [13, 12, 10, 20]
NULL_KEYS = [11, 21, 22]


def _order(backend: str, ids) -> list[int]:
    # DESC: PostgreSQL sorts NULLs first, MySQL/MariaDB and SQLite last
    seq = NULL_KEYS + NON_NULL if backend == "postgres" else NON_NULL + NULL_KEYS
    return sorted(ids, key=seq.index)


def _load(rec):
    cc, cq = rec.T.COMPLETED_COMPACTIONS, rec.T.COMPACTION_QUEUE
    with rec.engine.begin() as c:
        for i, st, ty, start, end, commit, enq, pool, txn, nxt, hw in HISTORY:
            c.execute(
                sa.insert(cc.clause).values(
                    {
                        cc.CC_ID.name: i,
                        cc.CC_DATABASE.name: "db",
                        cc.CC_TABLE.name: "t",
                        cc.CC_STATE.name: st,
                        cc.CC_TYPE.name: ty,
                        cc.CC_START.name: start,
                        cc.CC_END.name: end,
                        cc.CC_COMMIT_TIME.name: commit,
                        cc.CC_ENQUEUE_TIME.name: enq,
                        cc.CC_POOL_NAME.name: pool,
                        cc.CC_TXN_ID.name: txn,
                        cc.CC_NEXT_TXN_ID.name: nxt,
                        cc.CC_HIGHEST_WRITE_ID.name: hw,
                    }
                )
            )
        for i, st, ty, start, _end, commit, enq, pool, txn, nxt, hw in QUEUE:
            c.execute(
                sa.insert(cq.clause).values(
                    {
                        cq.CQ_ID.name: i,
                        cq.CQ_DATABASE.name: "db",
                        cq.CQ_TABLE.name: "t",
                        cq.CQ_STATE.name: st,
                        cq.CQ_TYPE.name: ty,
                        cq.CQ_START.name: start,
                        cq.CQ_COMMIT_TIME.name: commit,
                        cq.CQ_ENQUEUE_TIME.name: enq,
                        cq.CQ_POOL_NAME.name: pool,
                        cq.CQ_TXN_ID.name: txn,
                        cq.CQ_NEXT_TXN_ID.name: nxt,
                        cq.CQ_HIGHEST_WRITE_ID.name: hw,
                    }
                )
            )


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"])
def test_hive4_order_filters_limit(metastore, backend, capsys):
    url, rec = metastore
    _load(rec)
    all_ids = [r[0] for r in HISTORY + QUEUE]

    def ids(*argv):
        doc = cli_json(capsys, ["--metastore", url, "show", "compactions", *argv])
        return [c["compactionid"] for c in doc["compactions"]]

    assert ids() == _order(backend, all_ids)
    assert ids("--limit", "3") == _order(backend, all_ids)[:3]
    assert ids("--limit", "0") == _order(backend, all_ids)
    # POOL 'default' is compared literally: rows whose pool is NULL (displayed "default") are not found
    assert ids("--pool", "default") == _order(backend, [11, 22])
    assert ids("--pool", "etl") == [12, 20]
    assert ids("--type", "minor") == _order(backend, [11, 20])
    assert ids("--type", "major", "--limit", "2") == _order(backend, [10, 12, 13, 21, 22])[:2]
    assert ids("db.t", "--state", "ready for cleaning") == [20]


@pytest.mark.parametrize("hive_version", [4], ids=["hive4"])
def test_hive4_text_cells_and_honest_json(metastore, backend, capsys):
    url, rec = metastore
    _load(rec)
    doc = cli_json(capsys, ["--metastore", url, "show", "compactions"])
    js = {c["compactionid"]: c for c in doc["compactions"]}
    # JSON keeps what the tables hold
    assert (js[11]["txnid"], js[11]["nexttxnid"], js[11]["committime"], js[11]["duration"]) == (None, None, None, None)
    assert js[11]["state"] == "aborted" and js[13]["state"] == "refused"
    assert js[10]["hightestwriteid"] == 9 and js[10]["duration"] == 4000
    assert js[22]["poolname"] == "default" and js[21]["poolname"] == "default"  # NULL pool displays as default
    rows = {
        r[0]: r for r in table_rows(cli_text(capsys, ["--metastore", url, "-o", "wide", "show", "compactions"]))[1:]
    }
    col = {
        n: i
        for i, n in enumerate(
            [
                "ID",
                "DATABASE",
                "TABLE",
                "PARTITION",
                "TYPE",
                "STATE",
                "WORKER HOST",
                "WORKER",
                "ENQUEUE TIME",
                "START TIME",
                "DURATION",
                "HADOOPJOBID",
                "ERROR MESSAGE",
                "INITIATOR HOST",
                "INITIATOR",
                "POOL NAME",
                "TXNID",
                "NEXT TXNID",
                "COMMIT TIME",
                "HIGHEST WRITEID",
            ]
        )
    }

    def cell(i, name):
        return rows[str(i)][col[name]]

    # aborted before it started: Hive prints end - 0
    assert cell(11, "DURATION") == "4s"  # 4000 ms in acidctl's duration style
    assert (cell(11, "TXNID"), cell(11, "NEXT TXNID"), cell(11, "COMMIT TIME")) == ("0", "0", "0")
    assert (cell(10, "TXNID"), cell(10, "NEXT TXNID"), cell(10, "COMMIT TIME")) == (
        "55",
        "56",
        "1970-01-01 00:00:02.000",
    )
    assert cell(10, "DURATION") == "4s" and cell(12, "DURATION") == "500ms"
    # queue rows (end -1 in Hive's query) have no duration, whether started or not
    assert cell(20, "DURATION") == "---" and cell(21, "DURATION") == "---" and cell(22, "DURATION") == "---"
    # Hive 4 never sets the field it prints as Highest WriteId
    assert {cell(i, "HIGHEST WRITEID") for i in (10, 11, 12, 13, 20, 21, 22)} == {"---"}
    assert cell(22, "POOL NAME") == "default" and cell(12, "POOL NAME") == "etl"
