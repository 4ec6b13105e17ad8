"""The footer type rewrite (acidctl/orc/footer.py): string columns become char(n)/varchar(n)
per a template in the same tail rewrite that adds the user metadata; every other difference
from the template is refused. And the writer's use of it (acidctl/orc/writer.py)."""

from __future__ import annotations

import datetime
import decimal
import io

import pyarrow as pa
import pyarrow.orc as po
import pyorc
import pytest

from acidctl.errors import InvalidInputError
from acidctl.fs import TableFS
from acidctl.orc import acidfile, footer, writer
from tests.acidfiles import B0, events


def _table() -> pa.Table:
    """One column of each kind that matters here, strings nested in every compound type."""
    return pa.table(
        {
            "s": pa.array(["ab   ", None]),
            "st": pa.array([{"x": "é", "y": 1}, None], pa.struct([("x", pa.string()), ("y", pa.int64())])),
            "l": pa.array([["a"], None], pa.list_(pa.string())),
            "m": pa.array([[("k", "v")], []], pa.map_(pa.string(), pa.string())),
            "u": pa.UnionArray.from_sparse(
                pa.array([0, 1], pa.int8()),
                [pa.array([7, None], pa.int32()), pa.array([None, "w"])],
                field_names=["_union_0", "_union_1"],
            ),  # as pyarrow reads them
            "d": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(10, 2)),
            "dt": pa.array([datetime.date(2020, 2, 29), None]),
            "tl": pa.array(
                [datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc), None], pa.timestamp("ns", tz="UTC")
            ),
            "plain": pa.array(["keep", "me"]),
        }
    )


WRITTEN = (
    "struct<s:string,st:struct<x:string,y:bigint>,l:array<string>,m:map<string,string>,"
    "u:uniontype<int,string>,d:decimal(10,2),dt:date,tl:timestamp with local time zone,plain:string>"
)
# other field names than the data's: names always stay the written ones
TEMPLATE = (
    "struct<_col0:char(5),_col1:struct<a:varchar(1),b:bigint>,_col2:array<char(1)>,"
    "_col3:map<varchar(3),char(2)>,_col4:uniontype<int,varchar(4)>,_col5:decimal(10,2),_col6:date,"
    "_col7:timestamp with local time zone,_col8:string>"
)
EXPECTED = (
    "struct<s:char(5),st:struct<x:varchar(1),y:bigint>,l:array<char(1)>,m:map<varchar(3),char(2)>,"
    "u:uniontype<int,varchar(4)>,d:decimal(10,2),dt:date,tl:timestamp with local time zone,plain:string>"
)


def _orc(table: pa.Table, compression: str = "zlib") -> bytes:
    sink = pa.BufferOutputStream()
    po.write_table(table, sink, compression=compression)
    return sink.getvalue().to_pybytes()


def _schema(data: bytes) -> str:
    return str(pyorc.Reader(io.BytesIO(data)).schema)


@pytest.mark.parametrize("compression", ["uncompressed", "zlib"])
def test_retype_and_metadata_in_one_rewrite(compression):
    table = _table()
    data = _orc(table, compression)
    assert _schema(data) == WRITTEN
    out = footer.add_user_metadata(data, [("k", b"v")], orc_type=TEMPLATE)
    assert _schema(out) == EXPECTED
    r = pyorc.Reader(io.BytesIO(out))
    assert r.user_metadata == {"k": b"v"}
    # stripes untouched: only the tail differs
    start = footer.read_tail(data).footer_start
    assert out[:start] == data[:start]
    # the same values, byte for byte (pyarrow reads the stored strings; char padding kept)
    assert po.ORCFile(pa.py_buffer(out)).read().equals(table)
    assert [row[0] for row in r] == ["ab   ", None]
    # the other footer fields are kept as they were
    old, new = footer.read_tail(data), footer.read_tail(out)
    assert old.stripe_rows() == new.stripe_rows()
    assert [(f, v) for f, _, v in footer.parse_fields(old.footer) if f != 4] == [
        (f, v) for f, _, v in footer.parse_fields(new.footer) if f not in (4, 5)
    ]


def test_without_template_only_metadata_changes():
    data = _orc(_table())
    out = footer.add_user_metadata(data, [("k", b"v")])
    assert _schema(out) == WRITTEN
    assert footer.read_tail(out).types() == footer.read_tail(data).types()


def test_footer_types_parse_as_orc_does():
    """The hand-written Type parsing agrees with ORC C++ (pyorc) on a file pyorc wrote."""
    t = (
        "struct<a:char(3),`b c`:varchar(7),d:decimal(12,4),l:array<map<string,uniontype<int,char(2)>>>,"
        "t:timestamp with local time zone,x:struct<`y``z`:binary,w:tinyint>>"
    )
    buf = io.BytesIO()
    with pyorc.Writer(buf, t):
        pass
    got = footer.read_tail(buf.getvalue()).types()
    want = footer.parse_type_string(t)

    def key(x):  # ORC C++ writes maximumLength/precision/scale (0) for every kind
        return (
            x.kind,
            x.subtypes,
            x.field_names,
            x.maximum_length if x.kind in (footer.CHAR, footer.VARCHAR) else None,
            (x.precision, x.scale) if x.kind == footer.DECIMAL else None,
        )

    assert [key(g) for g in got] == [key(w) for w in want]
    assert [(g.maximum_length, g.precision, g.scale) for g in got][1:4] == [(3, 0, 0), (7, 0, 0), (0, 12, 4)]
    assert footer.type_string(got) == t  # quoted as ORC quotes names
    assert footer.column_names(got)[2] == "b c" and footer.column_names(got)[-2] == "x.y`z"


def test_unknown_type_fields_survive():
    """A field this module does not interpret (ORC 1.6+ ``attributes``, field 7) is kept."""
    attr = footer.encode_fields([(1, 2, b"iceberg.id"), (2, 2, b"3")])
    t = footer.parse_type(footer.encode_fields([(1, 0, footer.STRING), (7, 2, attr)]))
    [out] = footer.retyped([t], footer.parse_type_string("varchar(4)"))
    back = footer.parse_type(footer.encode_type(out))
    assert (back.kind, back.maximum_length) == (footer.VARCHAR, 4)
    assert (7, 2, attr) in back.fields


@pytest.mark.parametrize(
    "template,message",
    [
        (
            TEMPLATE.replace("_col5:decimal(10,2)", "_col5:decimal(10,3)"),
            "cannot write column d as decimal(10,3): the data there is decimal(10,2)",
        ),
        (TEMPLATE.replace("_col8:string", "_col8:int"), "cannot write column plain as int: the data there is string"),
        (
            TEMPLATE.replace("b:bigint", "b:bigint,c:int"),
            "cannot write column st as struct<a:varchar(1),b:bigint,c:int>",
        ),
        (
            TEMPLATE.replace("_col2:array<char(1)>", "_col2:map<char(1),int>"),
            "cannot write column l as map<char(1),int>",
        ),
        (
            TEMPLATE.replace("_col7:timestamp with local time zone", "_col7:timestamp"),
            "cannot write column tl as timestamp: the data there is timestamp with local time zone",
        ),
        (TEMPLATE.replace("_col0:char(5)", "_col0:binary"), "cannot write column s as binary"),
        ("struct<a:char(5)>", "cannot write column (root) as struct<a:char(5)>"),
        ("struct<", "not an ORC type string"),
    ],
)
def test_refuses_other_differences(tmp_path, template, message):
    data = _orc(_table())
    with pytest.raises(InvalidInputError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        footer.add_user_metadata(data, [("k", b"v")], orc_type=template)
    # in place: a refused rewrite leaves the file as it was
    p = tmp_path / "f.orc"
    p.write_bytes(data)
    with pytest.raises(InvalidInputError):
        footer.add_user_metadata_file(str(p), [("k", b"v")], orc_type=template)
    assert p.read_bytes() == data


def test_refusal_message_is_one_line():
    with pytest.raises(InvalidInputError) as e:
        footer.add_user_metadata(_orc(_table()), [], orc_type=TEMPLATE.replace("b:bigint", "b:int"))
    assert "\n" not in str(e.value) and "st.y" in str(e.value)


# -- the writer ---------------------------------------------------------------------------------

ACID_VC = acidfile.acid_type_string("struct<id:int,name:varchar(4)>")


def test_encode_acid_file_writes_the_template_types():
    ev = events([(1, B0, i) for i in range(3)])
    data, info = writer.encode_acid_file(ev, orc_type=ACID_VC)
    assert _schema(data) == ACID_VC
    assert info.key_index == "1,536870912,2;"
    assert pyorc.Reader(io.BytesIO(data)).user_metadata["hive.acid.version"] == b"2"
    assert po.ORCFile(pa.py_buffer(data)).read().equals(ev)


def test_encode_acid_file_refuses_too_long_values():
    ev = events([(1, B0, i) for i in range(3)], rows=[(0, "n0"), (1, "12345"), (2, None)])
    with pytest.raises(
        InvalidInputError,
        match=r"^column row\.name holds a value of 5 characters, more than "
        r"its type varchar\(4\) allows$",
    ):
        writer.encode_acid_file(ev, orc_type=ACID_VC)


def test_streaming_writer_writes_the_template_types(tmp_path):
    tfs = TableFS(str(tmp_path))
    path = str(tmp_path / "delta_0000001_0000001_0000" / "bucket_00000")
    with writer.AcidFileWriter(tfs, path, orc_type=ACID_VC, stripe_size=32 << 10) as w:
        for lo in (0, 3):
            w.write(events([(1, B0, i) for i in range(lo, lo + 3)]))
        info = w.close()
    assert info.rows == 6
    with open(path, "rb") as f:
        assert str(pyorc.Reader(f).schema) == ACID_VC


def test_streaming_writer_refuses_another_structure(tmp_path):
    """Refused when the file is finished (a compaction task may still fall back to its
    whole-bucket path on a later batch); nothing reaches the path, no temporary file stays."""
    tfs = TableFS(str(tmp_path))
    d = tmp_path / "delta_0000001_0000001_0000"
    with pytest.raises(InvalidInputError, match=r"cannot write column row\.name as int"):
        with writer.AcidFileWriter(
            tfs, str(d / "bucket_00000"), orc_type=acidfile.acid_type_string("struct<id:int,name:int>")
        ) as w:
            w.write(events([(1, B0, 0)]))
            w.close()
    assert not d.exists() or not list(d.iterdir())


def _union_deletes() -> pa.Table:
    """Delete events of a table with a uniontype column: a null ``row`` holding a union."""
    ev = events([(1, B0, i) for i in range(2)], ops=[2, 2], ctxn=[2, 2])
    u = pa.UnionArray.from_sparse(pa.array([0, 0], pa.int8()), [pa.nulls(2, pa.int32()), pa.nulls(2, pa.string())])
    row = pa.StructArray.from_arrays([pa.nulls(2, pa.int32()), u], ["id", "u"], mask=pa.array([True, True]))
    return ev.set_column(5, "row", row)


def test_null_row_with_a_union_goes_through_pyorc():
    """pyarrow's ORC writer would abort the process on this table (a failed C++ check)."""
    t = acidfile.acid_type_string("struct<id:int,u:uniontype<int,varchar(3)>>")
    table = _union_deletes()
    assert writer._arrow_cannot_write(table)
    data, info = writer.encode_acid_file(table, orc_type=t)
    assert _schema(data) == t and info.stats == (0, 0, 2)
    assert [r[5] for r in pyorc.Reader(io.BytesIO(data))] == [None, None]
    with pytest.raises(InvalidInputError, match="holds a union"):
        writer.encode_acid_file(table)


def test_streaming_writer_refuses_a_null_row_with_a_union(tmp_path):
    tfs = TableFS(str(tmp_path))
    with pytest.raises(InvalidInputError, match=r"column row .* has null values and holds a union"):
        with writer.AcidFileWriter(tfs, str(tmp_path / "d" / "bucket_00000")) as w:
            w.write(_union_deletes())
