"""LazySimpleSerDe text rows, byte for byte, against the SerDe's documented rules
(insert-only-and-hive2.md A.8; apache/hive LazySerDeParameters, LazyUtils.getByte /
writeEscaped / copyAndEscapeStringDataToText, LazyStruct). Expected bytes are written out by
hand from those rules."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from acidctl.formats.hivetypes import arrow_schema, orc_struct, parse_columns
from acidctl.formats.textfile import (
    NullMarkerValue,
    TextParams,
    get_byte,
    java_float_to_string,
    read_rows,
    to_arrow,
    write_rows,
)


def roundtrip(spec: str, rows: list[dict], props: dict | None = None) -> bytes:
    cols = parse_columns(spec)
    t = pa.Table.from_pylist(rows, schema=arrow_schema(cols))
    return write_rows(t, orc_struct(cols), TextParams.from_properties(props or {}))


def parse(spec: str, data: bytes, props: dict | None = None) -> list[dict]:
    td = orc_struct(parse_columns(spec))
    return to_arrow(read_rows(data, td, TextParams.from_properties(props or {})), td).to_pylist()


def test_get_byte_decimal_or_first_character():
    assert get_byte("9", 1) == 9  # '9' is TAB, not the digit
    assert get_byte("1", 0) == 1
    assert get_byte(",", 1) == ord(",")
    assert get_byte("\t", 1) == 9
    assert get_byte("-1", 1) == 0xFF
    assert get_byte("", 7) == 7 and get_byte(None, 7) == 7
    assert TextParams.from_properties({"serialization.format": "|"}).separators[0] == ord("|")
    assert TextParams.from_properties({"field.delim": ",", "serialization.format": "|"}).separators[0] == ord(",")


def test_default_separators_and_null_marker():
    data = roundtrip(
        "a:int,b:string,c:array<string>,m:map<string,int>,s:struct<x:int,y:string>",
        [
            {"a": 1, "b": "x", "c": ["p", None], "m": [("k", 1), ("j", None)], "s": {"x": 2, "y": None}},
            {"a": None, "b": None, "c": None, "m": None, "s": None},
        ],
    )
    assert data == (b"1\x01x\x01p\x02\\N\x01k\x031\x02j\x03\\N\x012\x02\\N\n\\N\x01\\N\x01\\N\x01\\N\x01\\N\n")


def test_nested_levels_use_the_next_separators():
    # array<array<int>> at level 1: outer items 0x02, inner items 0x03; map values at level 3 (0x04)
    assert roundtrip("a:array<array<int>>", [{"a": [[1, 2], [3]]}]) == b"1\x032\x023\n"
    assert roundtrip("m:map<string,array<int>>", [{"m": [("k", [1, 2])]}]) == b"k\x031\x042\n"
    assert parse("a:array<array<int>>", b"1\x032\x023\n") == [{"a": [[1, 2], [3]]}]


def test_values_are_written_raw_without_escape_delim():
    # no escape.delim: a separator inside a string is written raw (and shifts columns on read)
    assert roundtrip("a:string,b:int", [{"a": "x\x01y", "b": 1}]) == b"x\x01y\x011\n"
    assert parse("a:string,b:int", b"x\x01y\x011\n") == [{"a": "x", "b": None}]


def test_escape_delim_escapes_separators_and_itself():
    props = {"field.delim": ",", "escape.delim": "\\"}
    assert roundtrip("a:string,b:string", [{"a": "x,y", "b": "c\\d"}], props) == b"x\\,y,c\\\\d\n"
    # the collection separator 0x02 is escaped too (all levels)
    assert roundtrip("a:string", [{"a": "p\x02q"}], props) == b"p\\\x02q\n"
    assert parse("a:string,b:string", b"x\\,y,c\\\\d\n", props) == [{"a": "x,y", "b": "c\\d"}]


def test_null_marker_is_compared_before_unescaping():
    props = {"escape.delim": "\\"}
    # the string \N is written with its backslash escaped; raw \N is NULL
    assert roundtrip("a:string", [{"a": "\\N"}, {"a": None}], props) == b"\\\\N\n\\N\n"
    assert parse("a:string", b"\\\\N\n\\N\n", props) == [{"a": "\\N"}, {"a": None}]


def test_escape_crlf():
    props = {"escape.delim": "\\", "serialization.escape.crlf": "true"}
    assert roundtrip("a:string", [{"a": "l1\nl2\rl3"}], props) == b"l1\\nl2\\rl3\n"
    assert parse("a:string", b"l1\\nl2\\rl3\n", props) == [{"a": "l1\nl2\rl3"}]
    # without escape.crlf a newline is written raw (Hive then reads two rows)
    assert roundtrip("a:string", [{"a": "l1\nl2"}], {"escape.delim": "\\"}) == b"l1\nl2\n"


def test_custom_null_format_equal_string_is_refused():
    with pytest.raises(NullMarkerValue):
        roundtrip("a:string", [{"a": "NULL"}], {"serialization.null.format": "NULL"})
    assert roundtrip("a:string", [{"a": None}, {"a": "x"}], {"serialization.null.format": ""}) == b"\nx\n"
    with pytest.raises(NullMarkerValue):  # '' is the marker itself: it would read back as NULL
        roundtrip("a:string", [{"a": ""}], {"serialization.null.format": ""})


def test_reading_pads_missing_fields_and_ignores_extra_ones():
    assert parse("a:int,b:string,c:int", b"1\x01x\n2\n3\x01y\x014\x01extra\n") == [
        {"a": 1, "b": "x", "c": None},
        {"a": 2, "b": None, "c": None},
        {"a": 3, "b": "y", "c": 4},
    ]


def test_lines_end_at_lf_cr_or_crlf():
    assert [r["a"] for r in parse("a:int", b"1\r\n2\r3\n4")] == [1, 2, 3, 4]


def test_unparsable_primitives_are_null():
    rows = parse(
        "i:int,t:tinyint,b:boolean,d:double,e:decimal(4,2),dt:date,ts:timestamp",
        b"x\x01300\x01yes\x01abc\x01123.456\x01notadate\x01also not\n"
        b"7.9\x01-128\x01TRUE\x011.5e3\x01-1.005\x012020-02-30\x012020-01-01 10:00:00.5\n",
    )
    assert rows[0] == {"i": None, "t": None, "b": None, "d": None, "e": None, "dt": None, "ts": None}
    assert rows[1] == {
        "i": 7,
        "t": -128,
        "b": True,
        "d": 1500.0,
        "e": Decimal("-1.01"),
        "dt": dt.date(2020, 3, 1),
        "ts": dt.datetime(2020, 1, 1, 10, 0, 0, 500000),
    }


def test_primitive_text_forms():
    data = roundtrip(
        "b:boolean,d:double,f:float,e:decimal(5,2),dt:date,ts:timestamp,bin:binary,c:char(4)",
        [
            {
                "b": False,
                "d": 1e10,
                "f": 1.1,
                "e": Decimal("1.5"),
                "dt": dt.date(2020, 1, 2),
                "ts": dt.datetime(2020, 1, 1, 10, 0, 0),
                "bin": b"\x00\x01",
                "c": "ab",
            },
            {
                "b": True,
                "d": 0.001,
                "f": 1e-5,
                "e": Decimal("-0.01"),
                "dt": dt.date(1, 1, 1),
                "ts": dt.datetime(2020, 1, 1, 10, 0, 0, 123000),
                "bin": b"",
                "c": "abcd",
            },
        ],
    )
    # Double.toString / Float.toString, decimals padded to the scale, Hive 3 timestamps without ".0",
    # binary as Base64, char padded to its length
    assert data == (
        b"false\x011.0E10\x011.1\x011.50\x012020-01-02\x012020-01-01 10:00:00\x01AAE=\x01ab  \n"
        b"true\x010.001\x011.0E-5\x01-0.01\x010001-01-01\x012020-01-01 10:00:00.123\x01\x01abcd\n"
    )


def test_java_float_to_string():
    assert [java_float_to_string(x) for x in (1.1, 100.0, 1e7, 3.4028235e38, 0.1, -2.5)] == [
        "1.1",
        "100.0",
        "1.0E7",
        "3.4028235E38",
        "0.1",
        "-2.5",
    ]


def test_header_lines_are_skipped_on_read():
    assert parse("a:int", b"h\n1\n2\n", {"skip.header.line.count": "1"}) == [{"a": 1}, {"a": 2}]
