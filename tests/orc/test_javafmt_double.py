"""Tests for acidctl.orc.javafmt_double (Java 17 Double.toString).

Expected strings come from the golden README (Java 17 FileDump output) and from the golden
FileDump dumps themselves; the properties compare against Python's own float parsing /
shortest repr, never against values copied from this module's output."""

from __future__ import annotations

import gzip
import math
import re
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acidctl.orc import javafmt_double
from acidctl.orc.javafmt_double import format_double_array, java_double_to_string
from tests.conftest import GOLDEN


def f32(v: float) -> float:
    """The float32 nearest to v, widened to double (what FileDump prints for a float)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


# (value, Java 17 Double.toString) - from the golden README's double/float rows.
DOUBLE_CASES = [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.0, "1.0"),
    (100.0, "100.0"),
    (0.001, "0.001"),
    (0.1, "0.1"),
    (-2.5, "-2.5"),
    (9999999.0, "9999999.0"),
    (0.30000000000000004, "0.30000000000000004"),
    (1.0e7, "1.0E7"),
    (1.23456789e7, "1.23456789E7"),
    (1.0e-4, "1.0E-4"),
    (1.2345678912345679e8, "1.2345678912345679E8"),
    (1.0e21, "1.0E21"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (2.2250738585072014e-308, "2.2250738585072014E-308"),
    (5e-324, "4.9E-324"),
    # digit choice: not the shortest round-trip digits
    (2e23, "1.9999999999999998E23"),
    (1e23, "9.999999999999999E22"),
    (8.41e21, "8.409999999999999E21"),
    (2.82879384806159e17, "2.82879384806159008E17"),
    (5.9604644775390625e-8, "5.9604644775390625E-8"),
    (float("nan"), "NaN"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
]

FLOAT_CASES = [
    (f32(0.1), "0.10000000149011612"),
    (f32(3.3), "3.299999952316284"),
    (f32(0.001), "0.0010000000474974513"),
    (f32(1e-4), "9.999999747378752E-5"),
    (f32(123456.789), "123456.7890625"),
    (f32(1e7), "1.0E7"),
    (f32(16777217.0), "1.6777216E7"),
    (f32(3.4028234663852886e38), "3.4028234663852886E38"),
    (f32(1.401298464324817e-45), "1.401298464324817E-45"),
    (f32(2e23), "1.9999999556392617E23"),
]


@pytest.mark.parametrize(
    ("value", "expected"), DOUBLE_CASES + FLOAT_CASES, ids=[e for _, e in DOUBLE_CASES + FLOAT_CASES]
)
def test_examples(value, expected):
    assert java_double_to_string(value) == expected


def test_examples_vectorised():
    values = [v for v, _ in DOUBLE_CASES + FLOAT_CASES]
    expected = [e for _, e in DOUBLE_CASES + FLOAT_CASES]
    assert format_double_array(pa.array(values, pa.float64())).to_pylist() == expected


def test_float32_input_is_widened():
    cases = FLOAT_CASES + [(float("nan"), "NaN"), (float("-inf"), "-Infinity"), (-0.0, "-0.0"), (0.5, "0.5")]
    arr = pa.array([v for v, _ in cases] + [None], pa.float32())
    assert format_double_array(arr).to_pylist() == [e for _, e in cases] + [None]


def test_nulls_slices_chunks_and_empty():
    arr = pa.array([None, 1.5, None, 0.1, 1e300, None, -0.0, float("nan")])
    expected = [None, "1.5", None, "0.1", "1.0E300", None, "-0.0", "NaN"]
    out = format_double_array(arr)
    assert out.type == pa.string()
    assert out.to_pylist() == expected
    assert format_double_array(arr.slice(3, 4)).to_pylist() == expected[3:7]
    chunked = pa.chunked_array([arr.slice(0, 3), arr.slice(3)])
    assert format_double_array(chunked).to_pylist() == expected
    assert format_double_array(pa.array([], pa.float64())).to_pylist() == []
    assert format_double_array(pa.array([None, None], pa.float64())).to_pylist() == [None, None]


def _sig_digits(s: str) -> str:
    mant = re.split("[eE]", s.lstrip("-"))[0].replace(".", "")
    return mant.lstrip("0").rstrip("0") or "0"


finite_doubles = st.floats(allow_nan=False, allow_infinity=False)
any_bits = st.integers(min_value=0, max_value=2**64 - 1).map(from_bits)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(finite_doubles, any_bits.filter(math.isfinite)))
@example(2e23)
@example(5e-324)
@example(1.7976931348623157e308)
@example(2.0**-1074 * 3)
@example(9007199254740993.0)
def test_round_trips_and_never_shorter_than_shortest(x):
    s = java_double_to_string(x)
    assert float(s) == x
    assert math.copysign(1.0, float(s)) == math.copysign(1.0, x)
    assert len(_sig_digits(s)) >= len(_sig_digits(repr(x)))
    # plain notation exactly for 1e-3 <= |x| < 1e7 (and zero), else d.dddE<exp>
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        assert re.fullmatch(r"-?(0|[1-9]\d*)\.\d+", s), s
    else:
        assert re.fullmatch(r"-?[1-9]\.\d+E-?[1-9]\d*", s), s


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(2**53), max_value=2**53))
def test_integers(n):
    x = float(n)
    s = java_double_to_string(x)
    if abs(n) < 10**7:
        assert s == f"{n}.0"
    else:
        assert re.fullmatch(r"-?[1-9]\.\d+E[1-9]\d*", s), s
    assert float(s) == x


# "Short decimal" doubles: the values the vectorised fast path is meant for.
short_decimals = st.one_of(
    st.builds(lambda k, j: k / 2.0**j, st.integers(-(2**40), 2**40), st.integers(0, 30)),
    st.builds(lambda n: n / 100, st.integers(-(10**12), 10**12)),
    st.builds(lambda n, d: n / 10.0**d, st.integers(-(10**15), 10**15), st.integers(0, 20)),
    st.integers(-(10**16), 10**16).map(float),
    st.sampled_from(
        [
            0.0,
            -0.0,
            0.001,
            -0.001,
            0.0009999999999999998,
            9999999.999999998,
            1e7,
            -1e7,
            0.1,
            0.2,
            0.3,
            1e-3 * 3,
            2.0**-9,
            2.0**-10,
            2.0**23,
            123456789012345.6,
            12345678.9,
            0.0012345678901234567,
            float("nan"),
            float("inf"),
            float("-inf"),
        ]
    ),
)
vector_values = st.one_of(short_decimals, finite_doubles, any_bits, st.none(), st.floats(width=32))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(vector_values, max_size=60))
def test_vectorised_equals_scalar(values):
    out = format_double_array(pa.array(values, pa.float64())).to_pylist()
    assert out == [None if v is None else java_double_to_string(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.floats(width=32), st.none()), max_size=40))
def test_vectorised_float32_equals_scalar(values):
    out = format_double_array(pa.array(values, pa.float32())).to_pylist()
    assert out == [None if v is None else java_double_to_string(v) for v in values]


def test_fast_path_covers_ordinary_data(monkeypatch):
    """arange*0.5, 2-decimal prices and small integers never reach the scalar port."""
    calls = []
    real = javafmt_double.java_double_to_string

    def spy(x):
        calls.append(x)
        return real(x)

    monkeypatch.setattr(javafmt_double, "java_double_to_string", spy)
    n = 20_000
    halves = pc.multiply(pa.array(range(n), pa.float64()), 0.5)
    out = format_double_array(halves).to_pylist()
    assert out[:4] == ["0.0", "0.5", "1.0", "1.5"] and out[-1] == "9999.5"
    prices = pa.array([(i * 7919 % 10_000_000) / 100 * (-1) ** i for i in range(n)])
    out = format_double_array(prices).to_pylist()
    assert out[:3] == ["0.0", "-79.19", "158.38"]
    # 16-17 significant digits in 10**-3 .. 10**7 (measurements, i / 7) are fast too
    out = format_double_array(pa.array([0.1 + 0.2, 1 / 7, 666666.6666666666])).to_pylist()
    assert out == ["0.30000000000000004", "0.14285714285714285", "666666.6666666666"]
    assert calls == []
    # and the others do: integral values from 2**63, NaN (1e7: Java's integer path and
    # 0.0009999999999999998: its shortest digits, both vectorised; tests below)
    format_double_array(pa.array([1e7, 2e23, 0.0009999999999999998, float("nan")]))
    assert len(calls) == 2


def _long_digit_values(seed: int, n: int) -> list[float]:
    """Doubles in 10**-3 .. 10**7 whose shortest decimal has 16 or 17 significant digits:
    random bit patterns, i / 7 and i / 3 series, and neighbours of every power of ten and two
    in the range (where dtoa's decimal-exponent estimate and tolerance change)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    e = rng.integers(1023 - 10, 1023 + 24, n)
    bits = (e.astype(np.int64) << 52) | rng.integers(0, 1 << 52, n, dtype=np.int64)
    vals = bits.view(np.float64).tolist() + [i / 7 for i in range(1, n)] + [-i / 3 * 1e-3 for i in range(1, n)]
    for c in [10.0**p for p in range(-3, 8)] + [2.0**p for p in range(-10, 24)]:
        for direction in (math.inf, -math.inf):
            v = c
            for _ in range(200):
                v = math.nextafter(v, direction)
                vals.append(v)
    keep = []
    for v in vals:
        r = repr(abs(v))
        if 1e-3 <= abs(v) < 1e7 and "e" not in r and len(r.replace(".", "").lstrip("0")) >= 16:
            keep.append(v)
    return keep


def test_long_digit_doubles_vectorised_equals_scalar():
    """The fast path's argument for 16-17 digit values (format_double_array's docstring),
    checked against the scalar port of Java's dtoa (itself checked against Java 17 output:
    test_golden_*), on a few thousand values of every kind named there."""
    values = _long_digit_values(14, 3000)
    assert len(values) > 5000
    out = format_double_array(pa.array(values, pa.float64())).to_pylist()
    assert out == [java_double_to_string(v) for v in values]


# --- the real oracle: Java 17 FileDump output ----------------------------------------------


def _rows(path: Path) -> list[bytes]:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return [line for line in raw.split(b"\n") if line.startswith(b"{")]


def test_golden_alltypes():
    pyorc = pytest.importorskip("pyorc")
    lines = _rows(GOLDEN / "filedump" / "alltypes" / "bucket_00000.d.jsonl")
    with open(GOLDEN / "alltypes" / "bucket_00000", "rb") as fh:
        rows = list(pyorc.Reader(fh))
    assert len(lines) == len(rows)
    pat = re.compile(rb'"c_bigint":[^,]*,"c_float":([^,}]*),"c_double":([^,}]*),')
    floats, doubles, exp_f, exp_d = [], [], [], []
    for line, row in zip(lines, rows):
        if row[5] is None:  # delete event
            assert line.endswith(b'"row":null}')
            continue
        m = pat.search(line)
        assert m, line[:120]
        floats.append(row[5][5])
        doubles.append(row[5][6])
        exp_f.append(m.group(1).decode())
        exp_d.append(m.group(2).decode())
    assert len(doubles) >= 30

    def scalar(v):
        return "null" if v is None else java_double_to_string(v)

    assert [scalar(v) for v in doubles] == exp_d
    assert [scalar(v) for v in floats] == exp_f
    vec_d = format_double_array(pa.array(doubles, pa.float64())).to_pylist()
    vec_f = format_double_array(pa.array(floats, pa.float32())).to_pylist()
    assert ["null" if s is None else s for s in vec_d] == exp_d
    assert ["null" if s is None else s for s in vec_f] == exp_f


def test_golden_multistripe_scores():
    pyorc = pytest.importorskip("pyorc")
    lines = _rows(GOLDEN / "filedump" / "alltypes_multistripe" / "bucket_00000.d.jsonl.gz")
    with open(GOLDEN / "alltypes_multistripe" / "bucket_00000", "rb") as fh:
        rows = list(pyorc.Reader(fh))
    assert len(lines) == len(rows) == 300_000
    pat = re.compile(rb'"score":([^,}]*)\}\}$')
    expected, scores = [], []
    for line, row in zip(lines, rows):
        if row[5] is None:
            assert line.endswith(b'"row":null}')
            continue
        expected.append(pat.search(line).group(1).decode())
        scores.append(row[5][2])
    out = format_double_array(pa.array(scores, pa.float64())).to_pylist()
    assert ["null" if s is None else s for s in out] == expected


def test_every_exponent_vectorised_equals_scalar(monkeypatch):
    """Outside 10**-3 .. 10**7 non-integral values with 2+ shortest digits are laid out from
    the shortest digits (``_from_shortest``); the others (integral, one digit, powers of two,
    subnormals, NaN/Infinity) go to the port. Both against the scalar port, on random bit
    patterns of every exponent and decimal draws scaled by 10**-300 .. 10**300."""
    import numpy as np

    rng = np.random.default_rng(5)
    n = 4000
    e = rng.integers(0, 2048, n, dtype=np.int64)
    mant = np.where(
        rng.integers(0, 4, n) == 0,
        rng.integers(0, 1 << 10, n, dtype=np.int64) << 42,
        rng.integers(0, 1 << 52, n, dtype=np.int64),
    )
    sign = rng.integers(0, 2, n, dtype=np.int64) << 63
    vals = ((e << 52) | mant | sign).view(np.float64).tolist()
    vals += (rng.uniform(1, 10, n).round(6) * 10.0 ** rng.integers(-300, 300, n)).tolist()
    vals += [
        2.0**-24,
        2.82879384806159e17,
        2e23,
        1e23,
        1e-5,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        3.1450586214885035e25,
        1.2345678901234567e-05,
        0.0009999999999999998,
    ]
    ported = []
    real = javafmt_double.java_double_to_string

    def spy(x):
        ported.append(x)
        return real(x)

    with monkeypatch.context() as mp:
        mp.setattr(javafmt_double, "java_double_to_string", spy)
        out = format_double_array(pa.array(vals, pa.float64())).to_pylist()
    assert out == [java_double_to_string(v) for v in vals]
    # both ways were exercised: most values laid out from their shortest digits, the
    # integral / one-digit / power-of-two / subnormal / NaN ones by the port
    assert 0 < len(ported) < len(vals) // 2
    assert 2.0**-24 in ported and 2e23 in ported and 5e-324 in ported
    assert out[-11:-8] == ["5.9604644775390625E-8", "2.82879384806159008E17", "1.9999999999999998E23"]
    assert out[-7:-5] == ["1.0E-5", "4.9E-324"]  # Java 17 (the module docstring; Double.MIN_VALUE)


def test_integral_values_vectorised_equals_scalar(monkeypatch):
    """Integral values 10**7 <= |x| < 2**63 follow Java's integer path (insignificant digits
    rounded away: 2.82879384806159008E17) on whole arrays, never the scalar port."""
    import numpy as np

    rng = np.random.default_rng(9)
    ints = rng.integers(10**7, 2**62, 3000).astype(float) * rng.choice([1, -1], 3000)
    vals = ints.tolist() + [2.82879384806159e17, 1e8, 12345678.0, 2.0**62, 2.0**53 + 2, 9.2e18, 1e16]
    vals += [float(2**k) for k in range(24, 63)] + [float(10**k) for k in range(7, 19)]
    expected = [java_double_to_string(v) for v in vals]
    calls = []
    monkeypatch.setattr(javafmt_double, "java_double_to_string", lambda x: calls.append(x) or "")
    assert format_double_array(pa.array(vals, pa.float64())).to_pylist() == expected
    assert calls == []
    assert expected[3000:3002] == ["2.82879384806159008E17", "1.0E8"]  # Java 17 (the module docstring)


plain_values = st.one_of(
    st.none(),
    st.just(0.0),
    st.just(-0.0),
    st.integers(-(10**7) + 1, 10**7 - 1).map(float),  # integral: Java adds ".0"
    st.integers(-(10**9), 10**9).map(lambda i: i / 100).filter(lambda v: v == 0 or 0.001 <= abs(v) < 1e7),
    st.floats(min_value=0.001, max_value=9999999.999),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(plain_values, max_size=50), st.integers(0, 10))
def test_plain_columns_equal_scalar(values, cut):
    """Columns whose every value lies in 10**-3 .. 10**7 (or is zero or null) take the one-pass
    plain path (integral values get ".0" appended on the buffers); the text is the scalar
    port's, whole or sliced."""
    arr = pa.array(values, pa.float64())
    expected = [None if v is None else java_double_to_string(v) for v in values]
    assert format_double_array(arr).to_pylist() == expected
    assert format_double_array(arr.slice(min(cut, len(values)))).to_pylist() == expected[min(cut, len(values)) :]


def test_plain_column_examples():
    vals = [12.0, None, -0.0, 0.5, 9999999.0, 0.001, 100.25, 3.0]
    expected = ["12.0", None, "-0.0", "0.5", "9999999.0", "0.001", "100.25", "3.0"]  # Java 17
    assert format_double_array(pa.array(vals, pa.float64())).to_pylist() == expected
    assert format_double_array(pa.array(vals, pa.float64()).slice(2)).to_pylist() == expected[2:]
