"""``OrcFile(..., arrow_footer=True)`` (compaction's streamed inputs): the ACID verdict from
the footer Arrow parses agrees with pyorc's (:func:`is_acid_schema`) on every ORC file of the
real fixtures, and pyorc is not asked for an ACID file at all."""

from __future__ import annotations

import pytest

from acidctl.fs import TableFS
from acidctl.orc.reader import OrcFile, is_acid_schema, key_column_stripes
from tests.conftest import FIXTURES


def _orc_files():
    out = []
    for p in sorted(FIXTURES.rglob("*")):
        if not p.is_file() or p.stat().st_size < 4 or p.name.startswith((".", "_")):
            continue
        with open(p, "rb") as f:
            if f.read(3) == b"ORC":
                out.append(p)
    return out


FILES = _orc_files()


def test_fixtures_hold_both_kinds():
    kinds = set()
    for p in FILES:
        import pyorc

        with open(p, "rb") as f:
            kinds.add(is_acid_schema(pyorc.Reader(f).schema))
    assert kinds == {True, False}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_arrow_verdict_is_pyorcs(path):
    import pyorc

    with open(path, "rb") as f:
        want = is_acid_schema(pyorc.Reader(f).schema)
    tfs = TableFS(str(path.parent))
    # a fresh process has no footer cached: clear what earlier tests cached
    from acidctl.orc import reader

    reader._FOOTERS.clear()
    with OrcFile(tfs, str(path), arrow_footer=True) as f:
        assert f.is_acid == want
        if want:
            assert f._reader is None  # pyorc never parsed the footer
        assert is_acid_schema(f.schema) == want  # and it is still there when asked for


@pytest.mark.parametrize("path", [p for p in FILES if "delete_delta" in str(p)][:6], ids=str)
def test_key_columns_without_pyorc_equal_the_whole_read(path):
    """The delete keys read through Arrow's footer equal the file's first five columns read
    by pyorc's footer path."""
    from acidctl.orc import reader

    reader._FOOTERS.clear()
    tfs = TableFS(str(path.parent))
    got = list(key_column_stripes(tfs, str(path)))
    with OrcFile(tfs, str(path)) as f:
        want = [f.read_stripe_arrow(i) for i in range(f.num_stripes())]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.num_rows == w.num_rows
        for j in range(5):
            assert g.column(j).to_pylist() == w.column(j).to_pylist()
