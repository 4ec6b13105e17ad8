"""A Hive 2.3 metastore database's table columns (COLUMNS_V2) name the row struct of acidctl's
Hive 2 compaction of a DB.TABLE, as Hive 2.3's CompactorMR names it (observed on the real 2.3.10
Worker in tests/hive23: ``_col0``/``_col1`` deltas compact to ``row:struct<a:int,b:string>``)."""

from __future__ import annotations

import json
import random

import pyorc

from acidctl.metastore import hive2 as ms2
from tests.conftest import run_cli
from tests.hive2_histories import random_history, write_table
from tests.metastore.hive2_helpers import add_table, set_txns


def _table(tmp_path, columns):
    url = f"sqlite:///{tmp_path}/ms.db"
    ms2.init_hive2(url)
    h = random_history(random.Random(7), txns=5)
    h.states = {t: ("aborted" if s == "open" else s) for t, s in h.states.items()}
    root = write_table(h, tmp_path / "t")
    add_table(url, "db", "t", f"file:{root}", {"transactional": "true"}, columns=columns)
    set_txns(url, {t: "a" for t, s in h.states.items() if s == "aborted"}, next_txn=h.hwm + 1)
    return url, h, root


def _row_names(root) -> set[str]:
    out = set()
    for f in root.glob("base_*/bucket_*"):
        with open(f, "rb") as fh:
            out.add(str(pyorc.Reader(fh).schema.fields["row"]))
    return out


def test_compaction_names_the_row_by_the_tables_columns(tmp_path):
    url, h, root = _table(tmp_path, [("a", "int"), ("b", "string")])
    assert ms2.table_info(url, "db.t").columns == [("a", "int"), ("b", "string")]
    r = run_cli("--metastore", url, "compact", "db.t", "--major")
    assert r.code == 0, r
    assert _row_names(root) == {"struct<a:int,b:string>"}
    r = run_cli("--metastore", url, "dump", "--merged", "db.t")
    got = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        rid = d.pop("row__id")
        got[(rid["writeid"], rid["bucketid"], rid["rowid"])] = {"_col0": d["a"], "_col1": d["b"]}
    assert got == h.expected()


def test_without_columns_the_files_names_stay(tmp_path):
    url, _, root = _table(tmp_path, ())
    assert ms2.table_info(url, "db.t").columns == []
    assert run_cli("--metastore", url, "compact", "db.t", "--major").code == 0
    assert _row_names(root) == {"struct<_col0:int,_col1:string>"}
