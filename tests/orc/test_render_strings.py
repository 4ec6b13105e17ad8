"""The vectorised string rendering (escapes with string kernels or located with memchr, invalid
UTF-8 found by one decoder pass) equals FileDump's per-value rules — Python's json.dumps (ensure_ascii
off, U+2028/U+2029 escaped) over Java's UTF-8 decoding — on columns where escapes are rare,
common, or everywhere, and with invalid UTF-8 among valid values."""

from __future__ import annotations

import json

import pyarrow as pa
import pyorc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidctl.orc import render
from acidctl.orc.javafmt import java_decode_utf8


def _oracle(b: bytes | None, *, rtrim: bool = False) -> str | None:
    if b is None:
        return None
    s = java_decode_utf8(b)
    if rtrim:
        s = s.rstrip(" ")
    return json.dumps(s, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _render(values: list, td) -> list:
    arr = pa.array(values, pa.binary()).view(pa.string())
    return render.render_column(arr, td).to_pylist()


pieces = st.sampled_from(
    ["a", "xyz", '"', "\\", "\n", "\t", "\x00", "\x01", "\x1f", "\x7f", "\u2028", "\u2029", "€", "é", " ", "\u00e2"]
).map(lambda s: s.encode())
invalid = st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\x80abc"])
value = st.lists(pieces | invalid, max_size=6).map(b"".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.none() | value, min_size=1, max_size=120), st.integers(0, 400))
def test_strings_match_filedump_rules(values, plain):
    # ``plain`` escape-free values dilute the column: escapes rare (memchr) or common (kernels)
    values = values + [b"plain text value"] * plain
    assert _render(values, pyorc.String()) == [_oracle(v) for v in values]
    assert _render(values, pyorc.Char(6)) == [_oracle(v, rtrim=True) for v in values]
    # a slice (dump renders slices of a stripe): offsets not starting at 0
    arr = pa.array(values, pa.binary()).view(pa.string()).slice(len(values) // 3)
    assert render.render_column(arr, pyorc.String()).to_pylist() == [_oracle(v) for v in values[len(values) // 3 :]]


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_every_value_escaped(n):
    values = [f'q"{i}\\\n\x02\u2028'.encode() for i in range(n)]
    assert _render(values, pyorc.String()) == [_oracle(v) for v in values]


def test_invalid_values_are_found_among_many_valid_ones():
    values = [b"ok%d" % i for i in range(5000)]
    for i in (0, 17, 2500, 4999):
        values[i] = b"bad\xff%d" % i
    raw = pa.array(values, pa.binary())
    assert render._invalid_utf8_positions(raw) == [0, 17, 2500, 4999]
    assert _render(values, pyorc.String()) == [_oracle(v) for v in values]


def test_a_sequence_cut_between_two_values_is_invalid_in_both():
    """b"\\xc3" + b"\\xa9" is "é" only when the values run together: each alone is malformed
    (Java decodes each value by itself)."""
    values = [b"a\xc3", b"\xa9b", b"ok", None, b"\xe2\x82", b"\xacz", "é€".encode()]
    raw = pa.array(values, pa.binary())
    assert render._invalid_utf8_positions(raw) == [0, 1, 4, 5]
    assert render._invalid_utf8_positions(raw.slice(1, 4)) == [0, 3]
    assert _render(values, pyorc.String()) == [_oracle(v) for v in values]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.none() | st.binary(max_size=6), min_size=1, max_size=40), st.integers(0, 5))
def test_invalid_values_found_wherever_they_are(values, cut):
    raw = pa.array(values, pa.binary()).slice(min(cut, len(values) - 1))
    want = []  # Arrow's own UTF-8 validation of each value alone is the oracle
    for i, v in enumerate(raw.to_pylist()):
        try:
            pa.array([v], pa.binary()).view(pa.string()).validate(full=True)
        except pa.ArrowInvalid:
            want.append(i)
    assert render._invalid_utf8_positions(raw) == want


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.none() | st.text(alphabet=st.sampled_from('ab"\\\n\t\x00\x1f\x7f\u2028\u2029é€\U0001f600'), max_size=8),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 5),
)
def test_common_escapes_in_one_pass(values, cut):
    """Escapes everywhere (the one-pass encoder, not the per-character kernels) on sliced
    columns with nulls: json.dumps (ensure_ascii off) plus U+2028/U+2029 per value."""
    arr = pa.array(values, pa.string()).slice(min(cut, len(values) - 1))
    want = [
        None
        if v is None
        else json.dumps(v, ensure_ascii=False)[1:-1].replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        for v in arr.to_pylist()
    ]
    assert render._escape_all(arr).to_pylist() == want


def test_invalid_bytes_in_a_null_slot_do_not_break_the_one_pass_escapes():
    """Arrow does not look into null slots: bytes there that do not decode make the one-pass
    encoder step aside (the kernels escape the values), and the null stays null."""
    import numpy as np

    data = b'a"\n' * 50 + b"\xff" + b"b\\\t" * 50
    offsets = np.array([0, 150, 151, 301], dtype=np.int32)
    validity = pa.array([True, False, True]).buffers()[1]
    arr = pa.Array.from_buffers(pa.string(), 3, [validity, pa.py_buffer(offsets), pa.py_buffer(data)])
    assert render._escape_all(arr) is None
    assert render.render_column(arr, pyorc.String()).to_pylist() == [
        json.dumps('a"\n' * 50),
        None,
        json.dumps("b\\\t" * 50),
    ]


@given(
    st.lists(st.none() | st.binary(max_size=8) | st.text(alphabet="ab -~09", max_size=8).map(str.encode), max_size=40),
    st.integers(0, 5),
)
@settings(max_examples=300, deadline=None)
def test_plain_ascii_is_ascii_without_a_byte_to_escape(values, cut):
    # the fast check equals its definition on the values' bytes (a slice too: offsets not 0)
    arr = pa.array(values, pa.binary()).view(pa.string())
    arr = arr.slice(min(cut, len(arr)))
    data = b"".join(v for v in values[min(cut, len(values)) :] if v is not None)
    want = data.isascii() and not any(b < 0x20 or b in b'"\\' for b in data)
    assert render._plain_ascii(arr) == want
    if want:  # printed as they are: what FileDump prints for them
        assert render._s_string(arr, None).to_pylist() == [
            None if v is None else json.dumps(v.decode(), ensure_ascii=False)[1:-1]
            for v in values[min(cut, len(values)) :]
        ]
