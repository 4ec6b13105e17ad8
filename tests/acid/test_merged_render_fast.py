"""``dump --merged`` on a table big enough for the fast rendering (slices of 4,096+ rows: rows
laid out by one take, integers and plain doubles looked up) prints exactly the bytes of the
row-wise join it replaced, and the rows a Hive reader sees (worked out from the events)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from acidctl.acid.writeids import WriteIdList
from acidctl.fs import TableFS
from acidctl.merged import merged_rows
from acidctl.orc import render
from tests.acidfiles import acid_file

ROW = "struct<id:bigint,name:string,amount:double,qty:int,ratio:double>"
TYPE = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:%s>" % ROW
B0 = 1 << 29


def _table(root: Path) -> set:
    rng = random.Random(7)
    base = []
    for i in range(12000):
        name = rng.choice(["plain", 'quote"d', "tab\there", "ünïcode", "back\\slash"]) + str(i)
        amount = round(rng.uniform(-20000, 20000), rng.choice([0, 1, 2, 3]))
        qty = None if i % 17 == 0 else rng.randint(-50000, 99999999)
        ratio = rng.random() * 10 ** rng.randint(-5, 9)  # 16-17 digits, E-notation: the path before
        base.append((0, 1, B0, i, 1, (i * 1000003, name, amount, qty, ratio)))
    acid_file(root / "base_0000001" / "bucket_00000", TYPE, base)
    (root / "base_0000001" / "_metadata_acid").write_text('{"thisFileVersion":"0","dataFormat":"compacted"}')
    delta = [(0, 2, B0, i, 2, (10**7 + i, "new", i / 4, i, 0.5)) for i in range(5000)]
    acid_file(root / "delta_0000002_0000002_0000" / "bucket_00000", TYPE, delta)
    gone = sorted(rng.sample(range(12000), 300))
    acid_file(
        root / "delete_delta_0000003_0000003_0000" / "bucket_00000",
        TYPE,
        [(2, 1, B0, r, 3, None) for r in gone],
    )
    return {(1, r) for r in range(12000) if r not in set(gone)} | {(2, r) for r in range(5000)}


def _dump(root: Path) -> bytes:
    snap = WriteIdList.parse("t.t:3:9223372036854775807::")
    return b"".join(bytes(c) for c in merged_rows(TableFS(str(root)), snap))


def test_fast_rendering_prints_the_bytes_of_the_row_join(tmp_path, monkeypatch):
    live = _table(tmp_path)
    looked_up = []
    for name in ("_int_pieces", "_double_pieces"):
        real = getattr(render, name)
        monkeypatch.setattr(render, name, lambda arr, *a, real=real: looked_up.append(real(arr, *a)) or looked_up[-1])
    fast = _dump(tmp_path)
    assert any(p is not None for p in looked_up)  # the lookups were taken
    monkeypatch.undo()
    lines = fast.decode().splitlines()
    # the rows a reader sees, in ROW__ID order
    keys = [(d["row__id"]["writeid"], d["row__id"]["rowid"]) for d in map(json.loads, lines)]
    assert keys == sorted(live)
    assert lines[0].startswith('{"row__id":{"writeid":1,"bucketid":536870912,"rowid":')
    # the row-wise join, as before render_lines
    monkeypatch.setattr(render, "_assembled", lambda parts, n: None)
    monkeypatch.setattr(render, "PIECES_MIN_ROWS", 10**9)
    assert _dump(tmp_path) == fast
