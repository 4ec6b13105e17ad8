"""Property: the vectorised (Arrow) renderer equals the exact row-at-a-time renderer.

The Python path is checked byte for byte against FileDump on every golden file; this test
extends that guarantee to random data of every type the Arrow path can hold, including
timestamps (the goldens' timestamps are outside Arrow's range, so only this test covers the
vectorised timestamp code)."""

from __future__ import annotations

import decimal

import pyorc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acidctl.dump import DumpOptions, dump
from acidctl.fs import TableFS
from acidctl.orc.render import python_converters

ROW = (
    "struct<b:boolean,i:int,l:bigint,f:float,d:double,dec:decimal(12,4),s:string,c:char(4),"
    "v:varchar(6),bin:binary,dt:date,ts:timestamp,tsl:timestamp with local time zone,"
    "li:array<string>,m:map<string,double>,st:struct<x:int,y:string>,u:uniontype<int,string>>"
)
SCHEMA = (
    "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:%s>" % ROW
)

# Arrow holds timestamps as int64 nanoseconds: 1677-09-22 .. 2262-04-11
TS_MIN, TS_MAX = -9_223_372_036, 9_223_372_035
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
nulls = lambda s: st.none() | s  # noqa: E731

row = st.tuples(
    nulls(st.booleans()),
    nulls(st.integers(-(2**31), 2**31 - 1)),
    nulls(st.integers(-(2**63), 2**63 - 1)),
    nulls(st.floats(width=32)),
    nulls(st.floats() | st.sampled_from([0.1, 1e7, 1e-3, 123.5, -0.0, 2e23, 1e21])),
    nulls(st.decimals(min_value=-(10**7), max_value=10**7, places=4, allow_nan=False, allow_infinity=False)),
    nulls(text),
    nulls(st.text(alphabet="ab \t", max_size=4)),
    nulls(st.text(max_size=6, alphabet=st.characters(blacklist_categories=("Cs",)))),
    nulls(st.binary(max_size=6)),
    nulls(st.integers(-800_000, 3_000_000)),
    nulls(st.tuples(st.integers(TS_MIN, TS_MAX), st.integers(0, 999_999_999))),
    nulls(st.tuples(st.integers(TS_MIN, TS_MAX), st.integers(0, 999_999_999))),
    nulls(st.lists(nulls(text), max_size=3)),
    nulls(st.dictionaries(text, nulls(st.floats()), max_size=3)),
    nulls(st.tuples(nulls(st.integers(-5, 5)), nulls(text))),
    nulls(st.integers(-5, 5) | text),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.none() | row, min_size=1, max_size=25))
def test_arrow_and_python_renderers_agree(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("prop") / "bucket_00000"
    with open(path, "wb") as f:
        with pyorc.Writer(f, SCHEMA, converters=python_converters()) as w:
            for i, r in enumerate(rows):
                op = 2 if r is None else 0
                if r is not None and r[5] is not None:
                    r = r[:5] + (decimal.Decimal(r[5]),) + r[6:]
                w.write((op, 1, 536870912, i, 1, r))
    t = TableFS(str(path))
    fast = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(), framing=True))
    slow = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(engine="python"), framing=True))
    assert fast == slow
