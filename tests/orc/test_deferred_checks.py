"""The event checks fed by another reader (acidctl.orc.meta.inspect_file_deferred, used by the
compaction's verification through acidctl.orc.writer.PendingVerify): every crafted case of
test_meta_checks.py (each breaking one check) and the real Hive files, run with the events fed
from a full read of the file (all six columns, as the verification reads it) instead of
inspect_file's own key-column read, must give the same reports."""

from __future__ import annotations

import pytest

import tests.orc.test_meta_checks as cases
from acidctl.orc import meta
from acidctl.orc.reader import OrcFile

CASES = sorted(
    (name, f) for name, f in vars(cases).items() if name.startswith("test_") and name != "test_parse_key_index"
)


CALLS = []


def _fed_by_a_full_read(tfs, path, *, statistics=True, table_columns=None, **kw):
    CALLS.append(path)
    report, ev = meta._inspect(
        tfs,
        path,
        statistics=statistics,
        table_columns=table_columns,
        dir_kind=kw.get("dir_kind"),
        dir_range=kw.get("dir_range"),
        expect_acid=kw.get("expect_acid"),
        hive_version=kw.get("hive_version", 3),
        defer_events=True,
    )
    if ev is not None:
        with OrcFile(tfs, path) as f:
            for batch in f.iter_batches(batch_rows=1000):  # other batch boundaries than its own
                ev.feed(batch)
        assert ev.rows == report.rows
        ev.finish()
    return report


@pytest.mark.parametrize("case", [f for _, f in CASES], ids=[n for n, _ in CASES])
def test_meta_check_cases_fed_by_a_full_read(case, tmp_path, monkeypatch):
    monkeypatch.setattr(cases, "inspect_file", _fed_by_a_full_read)
    before = len(CALLS)
    if "tmp_path" in case.__code__.co_varnames[: case.__code__.co_argcount]:
        case(tmp_path)
    else:
        case()
    assert len(CALLS) > before  # the case ran through the fed checks


def test_deferred_equals_inspect_file_on_real_files():
    from acidctl.fs import TableFS
    from tests.conftest import REAL

    n = 0
    for p in sorted(REAL.rglob("bucket_*")):
        t = TableFS(str(p))
        want = meta.inspect_file(t, t.root, statistics=False, expect_acid=True)
        got = _fed_by_a_full_read(t, t.root, statistics=False, expect_acid=True)
        assert got.to_dict() == want.to_dict(), p
        n += 1
    assert n > 10
