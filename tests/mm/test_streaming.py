"""Insert-only compaction reads and writes a piece at a time (acidctl/formats/files.py
``iter_tables`` / ``OutputFile``): the streamed output file is byte for byte the file the
one-shot encoder writes for all rows at once (what compaction wrote before it streamed), and
a partition whose files each hold several batches compacts to exactly the layout's rows."""

from __future__ import annotations

import bz2
import io
import zlib

import pyarrow as pa
import pytest

from acidctl.formats import files as F
from acidctl.formats.hivetypes import Column, orc_struct
from acidctl.formats.storage import Storage
from acidctl.fs import TableFS
from tests.mm import hivelayout as H

COLS = [Column(n, t) for n, t in H.COLUMNS]


def rows(n0: int, n: int) -> list[dict]:
    return [
        H.row(i, name=None if i % 11 == 0 else f"name {i}", amount=(i % 400) / 4, tags=[str(i % 7)] if i % 3 else None)
        for i in range(n0, n0 + n)
    ]


def arrow(rs: list[dict]) -> pa.Table:
    from decimal import Decimal

    return pa.Table.from_pylist(
        [{**r, "amount": None if r["amount"] is None else Decimal(str(r["amount"]))} for r in rs], schema=H.ARROW
    )


def pieces(t: pa.Table, sizes: list[int]) -> list[pa.Table]:
    out, off = [], 0
    for s in sizes:
        out.append(t.slice(off, s))
        off += s
    out.append(t.slice(off))
    return out


@pytest.mark.parametrize(
    "fmt,codec",
    [("orc", "ZLIB"), ("orc", "SNAPPY"), ("parquet", None), ("parquet", "SNAPPY"), ("text", None), ("text", "deflate")]
    + [("text", "bzip2")],
)
def test_streamed_file_is_the_one_shot_file(tmp_path, monkeypatch, fmt, codec):
    # uneven pieces (not multiples of the ORC writer's 1,024-row batch), more than one Parquet
    # row group (made small here) and more than one ORC flush
    monkeypatch.setattr(F, "PARQUET_ROW_GROUP", 5000)
    monkeypatch.setattr(F, "BATCH_ROWS", 3000)
    storage = Storage(fmt, {}, source="test")
    row_td = orc_struct(COLS)
    t = arrow(rows(0, 23_456))
    expected = F.encode(t, row_td, storage, codec=codec)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # the one-shot writer with the same (patched) row-group length
        sink = pa.BufferOutputStream()
        c = F._PARQUET_CODECS[(codec or "UNCOMPRESSED").upper()]
        pq.write_table(t, sink, compression=c, use_deprecated_int96_timestamps=True, row_group_size=5000)
        expected = sink.getvalue().to_pybytes()
        assert pq.ParquetFile(pa.BufferReader(expected)).metadata.num_row_groups == 5
    tfs = TableFS(str(tmp_path))
    out = F.OutputFile(tfs, str(tmp_path / "o" / "000000_0"), row_td, storage, codec=codec)
    for p in pieces(t, [1, 999, 2048, 3001, 0, 7000]):
        out.write(p)
    size = out.close()
    got = (tmp_path / "o" / "000000_0").read_bytes()
    assert size == len(got)
    assert got == expected
    if fmt == "text":
        # and the text is LazySimpleSerDe's, per the independent encoder of the test layout
        raw = {"deflate": zlib.decompress, "bzip2": bz2.decompress}.get(codec or "", lambda b: b)(got)
        assert raw == H.encode("text", rows(0, 23_456))


def test_streamed_avro_holds_the_rows(tmp_path):
    import fastavro

    storage = Storage("avro", {}, source="test")
    row_td = orc_struct(COLS)
    rs = rows(0, 5000)
    out = F.OutputFile(
        TableFS(str(tmp_path)), str(tmp_path / "000000_0"), row_td, storage, codec="deflate", avro_schema=H.AVRO_SCHEMA
    )
    for p in pieces(arrow(rs), [10, 2000]):
        out.write(p)
    out.close()
    r = fastavro.reader(io.BytesIO((tmp_path / "000000_0").read_bytes()))
    assert r.codec == "deflate"
    got = [(x["id"], x["name"], x["tags"]) for x in r]
    assert got == [(x["id"], x["name"], x["tags"]) for x in rs]


@pytest.mark.parametrize("fmt", ["orc", "parquet", "avro", "text"])
def test_file_read_in_pieces_is_the_file(tmp_path, monkeypatch, fmt):
    monkeypatch.setattr(F, "TEXT_CHUNK", 777)  # chunk edges fall inside lines
    path = tmp_path / "000000_0"
    data = H.encode(fmt, rows(0, 4000))
    if fmt == "text":
        data = data.replace(b"\n", b"\r\n")  # CR LF split across chunks must stay one terminator
    path.write_bytes(data)
    storage = Storage(fmt, {}, source="test")
    row_td = orc_struct(COLS)
    tfs = TableFS(str(tmp_path))
    got = list(F.iter_tables(tfs, str(path), storage, row_td, batch_rows=1500))
    if fmt != "orc":  # an ORC file is read a stripe at a time (one stripe here)
        assert len(got) > 2 and max(t.num_rows for t in got) <= 1500
    assert pa.concat_tables(got).equals(F.read_file(tfs, str(path), storage, row_td).table)
    assert sum(t.num_rows for t in got) == 4000


@pytest.mark.parametrize("codec", ["gzip", "bzip2", "deflate"])
def test_compressed_text_read_in_pieces(tmp_path, monkeypatch, codec):
    import gzip

    monkeypatch.setattr(F, "TEXT_CHUNK", 500)
    data = H.encode("text", rows(0, 3000))
    cut = data.index(b"\n", len(data) // 2) + 1
    if codec == "deflate":
        path = tmp_path / "000000_0.deflate"
        path.write_bytes(zlib.compress(data))
    else:
        # two members / streams, as concatenated files are (gzip/bz2.decompress read both)
        comp = gzip.compress if codec == "gzip" else bz2.compress
        path = tmp_path / ("000000_0.gz" if codec == "gzip" else "000000_0.bz2")
        path.write_bytes(comp(data[:cut]) + comp(data[cut:]))
    assert (
        F.read_file(TableFS(str(tmp_path)), str(path), Storage("text", {}, source="t"), orc_struct(COLS)).table.num_rows
        == 3000
    )
    storage = Storage("text", {}, source="test")
    got = list(F.iter_tables(TableFS(str(tmp_path)), str(path), storage, orc_struct(COLS), batch_rows=1000))
    assert [t.column("id").to_pylist() for t in got] != [] and sum(
        (t.column("id").to_pylist() for t in got), []
    ) == list(range(3000))


@pytest.mark.parametrize("fmt", ["orc", "parquet", "avro", "text"])
def test_compaction_of_files_larger_than_a_batch(tmp_path, cli, monkeypatch, fmt):
    """Several files per delta, each more than one batch: the base holds exactly the rows of
    the layout (write 3 aborted, so not read), read back with the format's own library."""
    monkeypatch.setattr(F, "BATCH_ROWS", 1000)
    monkeypatch.setattr(F, "TEXT_CHUNK", 4096)
    root = tmp_path / "t"
    H.build(
        root,
        fmt,
        {
            "delta_0000001_0000001_0000": {"000000_0": rows(0, 2500), "000001_0": rows(2500, 1700)},
            "delta_0000002_0000002_0000": {"000000_0": rows(5000, 3100), "000000_0_copy_1": rows(9000, 10)},
            "delta_0000003_0000003_0000": {"000000_0": rows(20000, 1500)},
        },
    )
    wl = "default.t:3:9223372036854775807::3"
    p = H.compact(cli, root, fmt, wl)["partitions"][0]
    n = 2500 + 1700 + 3100 + 10
    assert (p["rows_in"], p["rows_out"], p["verified_rows"]) == (n, n, n)
    out = root / "base_0000003" / "000000_0"
    if fmt == "text":
        want = rows(0, 2500) + rows(2500, 1700) + rows(5000, 3100) + rows(9000, 10)
        assert out.read_bytes() == H.encode("text", want)  # reader order, LazySimpleSerDe bytes
        return
    from tests.mm.test_mm_tables import norm, read_output

    want = rows(0, 4200) + rows(5000, 3100) + rows(9000, 10)
    assert norm(read_output(out, fmt)) == norm(want)
