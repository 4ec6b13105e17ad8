"""Rendering works on slices of a stripe: lists, maps and unions in a slice that does not start
at row 0 must print exactly what the row-at-a-time path prints (byte-identical to FileDump on
every golden file)."""

from __future__ import annotations

import pyorc
import pytest

import acidctl.dump as dumpmod
from acidctl.dump import DumpOptions, dump
from acidctl.fs import TableFS
from acidctl.orc.render import python_converters

ROW = (
    "struct<l:array<struct<a:int,b:string>>,m:map<string,array<int>>,u:uniontype<int,string>,s:struct<x:array<string>>>"
)
ACID = "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:%s>" % ROW


def _row(i):
    if i % 11 == 5:
        return None
    return (
        [(i, f"b{i}"), (i + 1, None)][: i % 3] if i % 7 else None,
        {f"k{i % 4}": [i, i * 2][: i % 3], "z": None} if i % 5 else None,
        i if i % 2 else f"u{i}",
        ([f"x{i}"] * (i % 3),) if i % 13 else None,
    )


@pytest.mark.parametrize("slice_rows", [1, 3, 7, 1000])
def test_sliced_nested_columns_render_like_the_exact_path(tmp_path, monkeypatch, slice_rows):
    path = tmp_path / "bucket_00000"
    with open(path, "wb") as f:
        with pyorc.Writer(f, ACID, converters=python_converters()) as w:
            for i in range(60):
                w.write((2 if _row(i) is None else 0, 1, 536870912, i, 1, _row(i)))
    t = TableFS(str(path))
    slow = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(engine="python"), framing=True))
    monkeypatch.setattr(dumpmod, "SLICE_ROWS", slice_rows)
    fast = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(), framing=True))
    assert fast == slow


def _bin(i):
    # every byte value 0..255 somewhere, empty values, nulls
    return None if i % 9 == 4 else bytes((i * 37 + k) % 256 for k in range(i % 5))


@pytest.mark.parametrize("slice_rows", [1, 4, 1000])
def test_sliced_binary_prints_each_rows_own_bytes(tmp_path, monkeypatch, slice_rows):
    # Java's PrintData.printBinary: a JSON array of the unsigned byte values, null for null
    path = tmp_path / "bucket_00000"
    schema = ACID.replace(ROW, "struct<bin:binary,n:int>")
    with open(path, "wb") as f:
        with pyorc.Writer(f, schema) as w:
            for i in range(80):
                w.write((0, 1, 536870912, i, 1, (_bin(i), i)))
    expected = b"".join(
        b'{"operation":0,"originalTransaction":1,"bucket":536870912,"rowId":%d,"currentTransaction":1,'
        b'"row":{"bin":%s,"n":%d}}\n'
        % (i, b"null" if _bin(i) is None else ("[" + ",".join(str(b) for b in _bin(i)) + "]").encode(), i)
        for i in range(80)
    )
    monkeypatch.setattr(dumpmod, "SLICE_ROWS", slice_rows)
    t = TableFS(str(path))
    assert b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(), framing=False)) == expected
