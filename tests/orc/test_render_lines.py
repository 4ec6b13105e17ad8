"""``render.render_lines`` (rows laid out by one ``take``, integers and doubles looked up from
tables of texts) gives the same bytes as the row-wise join of ``render.render_batch``, and its
looked-up texts are Java's: ``Long.toString`` for integers, and for doubles the scalar port of
``Double.toString`` (``java_double_to_string``, checked against Java 17 in
test_javafmt_double.py)."""

from __future__ import annotations

import pyarrow as pa
import pyorc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidctl.orc import render
from acidctl.orc.javafmt_double import java_double_to_string
from acidctl.orc.lines import lines_bytes


def _texts(pieces: list) -> list[str]:
    cols = [p.resolve().to_pylist() for p in pieces]
    return ["".join(t) for t in zip(*cols)]


def _java(v) -> str:
    return "null" if v is None else java_double_to_string(v)


#: doubles nearest to decimals of at most 3 places in the plain range (the looked-up case)
short_decimals = st.builds(
    lambda m, k, neg: (-1 if neg else 1) * m / 10**k,
    st.integers(1, 10**10 - 1),
    st.integers(0, 3),
    st.booleans(),
).filter(lambda v: 1e-3 <= abs(v) < 1e7)


@given(st.lists(short_decimals | st.just(0.0), min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
def test_short_decimals_are_looked_up_as_java_prints_them(values):
    pieces = render._double_pieces(pa.array(values, pa.float64()))
    assert pieces is not None
    assert _texts(pieces) == [_java(v) for v in values]


@given(
    st.lists(
        st.none()
        | short_decimals
        | st.floats()
        | st.sampled_from([0.0, -0.0, 1e7, 9999999.999, 1e-3, 0.0009999, 0.1 + 0.2, 1 / 3, 2.5e-3, 123456.789]),
        min_size=1,
        max_size=40,
    )
)
@settings(max_examples=400, deadline=None)
def test_double_pieces_are_java_or_declined(values):
    pieces = render._double_pieces(pa.array(values, pa.float64()))
    if pieces is not None:
        assert _texts(pieces) == [_java(v) for v in values]


def test_double_pieces_decline_what_they_cannot_print():
    for v in (-0.0, 1e7, 0.0009, 0.1 + 0.2, float("nan"), float("inf"), 0.0001):
        assert render._double_pieces(pa.array([1.5, v])) is None, v
    # spot checks worked out by hand from Double.toString's rules
    got = _texts(render._double_pieces(pa.array([0.001, 100.0, -0.5, 1234567.25, 10000.5, 0.0, None, 9999999.999])))
    assert got == ["0.001", "100.0", "-0.5", "1234567.25", "10000.5", "0.0", "null", "9999999.999"]


@given(st.lists(st.floats(width=32, allow_nan=False) | st.none(), min_size=1, max_size=30))
@settings(max_examples=200, deadline=None)
def test_float_pieces_widen_like_filedump(values):
    arr = pa.array(values, pa.float32())
    pieces = render._double_pieces(arr)
    if pieces is not None:
        widened = arr.cast(pa.float64()).to_pylist()
        assert _texts(pieces) == [_java(v) for v in widened]


@given(st.lists(st.none() | st.integers(-(10**8) + 1, 10**8 - 1), min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
def test_int_pieces_are_long_to_string(values):
    pieces = render._int_pieces(pa.array(values, pa.int64()))
    assert pieces is not None
    assert _texts(pieces) == ["null" if v is None else str(v) for v in values]


@given(
    st.sampled_from([(pa.int8(), 7), (pa.int16(), 15), (pa.int32(), 31), (pa.int64(), 63)]).flatmap(
        lambda tb: st.tuples(
            st.just(tb[0]),
            st.lists(st.integers(max(-(2 ** tb[1]), -(10**8) + 1), min(2 ** tb[1] - 1, 10**8 - 1)), min_size=1),
        )
    )
)
@settings(max_examples=300, deadline=None)
def test_int_pieces_with_known_bounds_are_long_to_string(typed):
    # the null-free path given the column's (min, max), every width (int8's -128 included)
    typ, values = typed
    pieces = render._int_pieces(pa.array(values, typ), (min(values), max(values)))
    assert pieces is not None
    assert _texts(pieces) == [str(v) for v in values]


def test_int_pieces_with_known_bounds_decline_ten_digit_values():
    assert render._int_pieces(pa.array([1, 10**8]), (1, 10**8)) is None
    assert render._int_pieces(pa.array([-(10**8), 1]), (-(10**8), 1)) is None
    assert _texts(render._int_pieces(pa.array([-128, 127], pa.int8()), (-128, 127))) == ["-128", "127"]


def test_int_pieces_decline_ten_digit_values():
    assert render._int_pieces(pa.array([1, 10**8])) is None
    assert render._int_pieces(pa.array([-(10**8), 1])) is None
    assert _texts(render._int_pieces(pa.array([10**8 - 1, -(10**8) + 1, 0, -7, 10000, 10001], pa.int32()))) == [
        "99999999",
        "-99999999",
        "0",
        "-7",
        "10000",
        "10001",
    ]


ROWID = pyorc.Struct(writeid=pyorc.BigInt(), bucketid=pyorc.Int(), rowid=pyorc.BigInt())
INNER = pyorc.Struct(x=pyorc.Int(), y=pyorc.String())
FIELDS = [
    ("row__id", ROWID),
    ("i", pyorc.Int()),
    ("l", pyorc.BigInt()),
    ("d", pyorc.Double()),
    ("f", pyorc.Float()),
    ("s", pyorc.String()),
    ("b", pyorc.Boolean()),
    ("st", INNER),
    ("li", pyorc.Array(pyorc.Double())),
    ("p", pyorc.String()),
]
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
doubles = short_decimals | st.floats() | st.just(0.0)


@st.composite
def batches(draw):
    n = draw(st.integers(1, 40))
    nullable = draw(st.booleans())

    def col(strategy, nulls=nullable):
        return [draw(st.none() | strategy) if nulls else draw(strategy) for _ in range(n)]

    same_writeid = draw(st.booleans())
    rowid = pa.StructArray.from_arrays(
        [
            pa.array([1] * n if same_writeid else col(st.integers(0, 2**40), False), pa.int64()),
            pa.array(col(st.sampled_from([536870912, 536936448, -1]), False), pa.int32()),
            pa.array(col(st.integers(0, 2**62), False) if draw(st.booleans()) else list(range(n)), pa.int64()),
        ],
        ["writeid", "bucketid", "rowid"],
    )
    inner = pa.StructArray.from_arrays(
        [pa.array(col(st.integers(-5, 5)), pa.int32()), pa.array(col(text), pa.string())],
        ["x", "y"],
        mask=pa.array([draw(st.booleans()) and nullable for _ in range(n)]),
    )
    cols = [
        rowid,
        pa.array(col(st.integers(-(2**31), 2**31 - 1)), pa.int32()),
        pa.array(col(st.integers(-(2**63), 2**63 - 1) | st.integers(-1000, 1000)), pa.int64()),
        pa.array(col(doubles), pa.float64()),
        pa.array(col(st.floats(width=32) | st.sampled_from([1.5, 0.25, 100.0])), pa.float32()),
        pa.array(col(text), pa.string()),
        pa.array(col(st.booleans()), pa.bool_()),
        inner,
        pa.array(col(st.lists(st.none() | doubles, max_size=3)), pa.list_(pa.float64())),
        pa.array([draw(st.sampled_from(["2024-01-01", 'a"b\\c']))] * n, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(cols, names=[name for name, _ in FIELDS])


@given(
    batches(),
    st.integers(0, 5),
    st.sampled_from([0, 20, render.PIECES_MIN_ROWS]),
    st.sampled_from([0, 2, 8]),
    st.sampled_from([(0, 0), (render._TRIM_BYTES, render.SLICE_ROWS_FULL), (2**62, 0)]),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_render_lines_equals_the_row_join(batch, cut, min_rows, absorb, trim):
    # a slice too: the arrays' offsets are not 0; lookups from 0 or 20 rows on (the default
    # threshold is above these batches), literals folded into up to 0, 2 or 8 tables; every
    # table trimmed to the texts the rows use / the default / none (with the larger tables of
    # whole slices allowed)
    saved = render.PIECES_MIN_ROWS, render._ABSORB_MAX_TABLES, render._TRIM_BYTES, render.SLICE_ROWS_FULL
    render.PIECES_MIN_ROWS, render._ABSORB_MAX_TABLES = min_rows, absorb
    render._TRIM_BYTES, render.SLICE_ROWS_FULL = trim
    try:
        for b in (batch, batch.slice(min(cut, batch.num_rows - 1))):
            want = bytes(lines_bytes(render.render_batch(b, FIELDS, terminator="\n")))
            assert bytes(render.render_lines(b, FIELDS)) == want
    finally:
        render.PIECES_MIN_ROWS, render._ABSORB_MAX_TABLES, render._TRIM_BYTES, render.SLICE_ROWS_FULL = saved


@pytest.mark.parametrize("n", [0, 1, 3])
def test_render_lines_without_columns(n):
    batch = pa.RecordBatch.from_arrays([], names=[]) if n == 0 else pa.record_batch({"x": [1] * n}).select([])
    assert bytes(render.render_lines(batch, [])) == b"{}\n" * batch.num_rows


def test_rows_are_laid_out_without_the_row_join(monkeypatch):
    """The usual merged row (ROW__ID, integers, a double, a string, nulls) takes the take path."""

    def no_join(*a, **k):
        raise AssertionError("joined row-wise")

    batch = pa.RecordBatch.from_arrays(
        [
            pa.StructArray.from_arrays(
                [
                    pa.array([1, 1, 1], pa.int64()),
                    pa.array([536870912] * 3, pa.int32()),
                    pa.array([0, 5, 9], pa.int64()),
                ],
                ["writeid", "bucketid", "rowid"],
            ),
            pa.array([7, None, -12345678], pa.int64()),
            pa.array([6369.62, None, 0.5]),
            pa.array(['a"b', None, "x"]),
        ],
        names=["row__id", "l", "d", "s"],
    )
    fields = [FIELDS[0], FIELDS[2], FIELDS[3], FIELDS[5]]
    monkeypatch.setattr(render, "_joined", no_join)
    monkeypatch.setattr(render, "PIECES_MIN_ROWS", 1)
    got = bytes(render.render_lines(batch, fields))
    assert got == (
        b'{"row__id":{"writeid":1,"bucketid":536870912,"rowid":0},"l":7,"d":6369.62,"s":"a\\"b"}\n'
        b'{"row__id":{"writeid":1,"bucketid":536870912,"rowid":5},"l":null,"d":null,"s":null}\n'
        b'{"row__id":{"writeid":1,"bucketid":536870912,"rowid":9},"l":-12345678,"d":0.5,"s":"x"}\n'
    )


def test_render_lines_from_many_threads(monkeypatch):
    """The render pool's threads share the lookup tables: built, dropped (a tiny byte budget
    forces it) and used at the same time, every thread still gets the row join's bytes."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    rng = np.random.default_rng(3)
    batches_ = []
    for i in range(16):
        n = 300
        batches_.append(
            pa.RecordBatch.from_arrays(
                [pa.array(rng.integers(-(10**7), 10**7, n)), pa.array(np.round(rng.uniform(-1e5, 1e5, n), i % 4))],
                names=["l", "d"],
            )
        )
    fields = [("l", pyorc.BigInt()), ("d", pyorc.Double())]
    want = [bytes(lines_bytes(render.render_batch(b, fields, terminator="\n"))) for b in batches_]
    monkeypatch.setattr(render, "PIECES_MIN_ROWS", 1)
    monkeypatch.setattr(render, "_TABLES_MAX_BYTES", 600_000)
    monkeypatch.setattr(render, "_TABLES", {})
    monkeypatch.setattr(render, "_LONGEST", {})
    with ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            got = list(pool.map(lambda b: bytes(render.render_lines(b, fields)), batches_ * 2))
            assert got == want * 2
