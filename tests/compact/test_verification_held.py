"""The verification's old side built from the compaction's own reads
(acidctl.compact.verification.HeldOldSide): the same events as the reader's merged read of the
old files read back from storage (the pre-issue-#14 old side), on random histories (open and
aborted write ids: reader and compactor snapshots differ) and the fixture tables; a
compaction that loses a row is still refused; over the memory limit the inputs are re-read.
The written file's own checks run on the verification's read of it (PendingVerify): a bad
file is still refused, and no second read is made when the verification read it whole."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from acidctl.compact import transform, verification
from acidctl.errors import WriteVerificationFailed
from tests.compact.helpers import compact, fixture_tables
from tests.histories import histories


class _Spy:
    """Wraps verify_streaming: for every task with a held old side, the held events must be
    the reader's merged read of the old files as read back from storage."""

    def __init__(self, monkeypatch):
        self.held = self.reread = self.dropped = 0
        self.reread_merges = 0  # merged batches of the spy's own read of the old files
        real = verification.verify_streaming

        def spy(task, held=None, pending=None):
            if held is not None and held.ok:
                self.held += 1
                kept = list(held.batches)
                args = (task.reader, task.columns, task.columns_coln_only)
                from_storage = list(verification.merged_stream(task.tfs, task.verify_old, *args, missing_ok=False))
                self.reread_merges += len(from_storage)
                assert _rows(kept) == _rows(from_storage)
            else:
                self.reread += 1
                self.dropped += held is not None
            return real(task, held, pending)

        monkeypatch.setattr(verification, "verify_streaming", spy)


def _rows(tables) -> list:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return []
    cols = ["originalTransaction", "bucket", "rowId", "currentTransaction", "row"]
    return pa.concat_tables([t.select(cols) for t in tables]).to_pylist()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(h=histories)
def test_held_old_side_is_the_reread_one(monkeypatch, h):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "t"
        root.mkdir()
        h.play(root)
        with monkeypatch.context() as mp:
            _Spy(mp)  # asserts inside: held == re-read (an aborted-only delta the reader skips
            # but the compaction reads makes the sources differ: that bucket re-reads)
            compact(root, "major", str(h.snapshot()), engine="local")


def test_fixture_tables_held(tmp_path, monkeypatch):
    spy = _Spy(monkeypatch)
    for _name, root, wids, cols in fixture_tables(tmp_path):
        compact(root, "major", wids, engine="local", columns=cols)
    assert spy.held > 0


def _one_bucket_table(root: Path) -> str:
    from tests.histories import V1, _write_acid

    _write_acid(
        root / "delta_0000001_0000001_0000" / "bucket_00000", [(0, 1, V1, i, 1, (i, f"r{i}")) for i in range(50)]
    )
    _write_acid(
        root / "delta_0000002_0000002_0000" / "bucket_00000", [(0, 2, V1, i, 2, (100 + i, f"s{i}")) for i in range(5)]
    )
    _write_acid(root / "delete_delta_0000003_0000003_0000" / "bucket_00000", [(2, 1, V1, 7, 3, None)])
    return "db.t:3:9223372036854775807::"


def test_lost_row_is_refused_with_held_old_side(tmp_path, monkeypatch):
    """A compaction that drops a live row (here: a broken transform) fails the verification
    on the held old side; nothing is published."""
    wids = _one_bucket_table(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    real = transform.live_inserts

    def lossy(t, *a, **kw):
        out = real(t, *a, **kw)
        return out.slice(1) if out.num_rows else out

    monkeypatch.setattr(transform, "live_inserts", lossy)
    spy = _Spy(monkeypatch)
    with pytest.raises(WriteVerificationFailed, match="differs after compaction"):
        compact(tmp_path, "major", wids, engine="local")
    assert spy.held == 1
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == before


@pytest.mark.parametrize("expansion", [verification.EXPANSION, 0])
def test_over_the_limit_reads_inputs_again(tmp_path, monkeypatch, expansion):
    """Inputs too big to be expected to fit are not held at all; an old side that outgrows the
    limit while streaming (EXPANSION 0: every bucket expected to fit) is dropped; both
    re-read the inputs and verify as before."""
    wids = _one_bucket_table(tmp_path)
    monkeypatch.setattr(verification, "HOLD_BYTES", 64)
    monkeypatch.setattr(verification, "EXPANSION", expansion)
    spy = _Spy(monkeypatch)
    rep = compact(tmp_path, "major", wids, engine="local")
    assert (spy.held, spy.reread, spy.dropped) == (0, 1, 1 if expansion == 0 else 0)
    assert rep["summary"]["rows_out"] == 54  # 55 inserted, row 7 of write id 1 deleted


def test_written_file_checks_run_on_the_verification_read(tmp_path, monkeypatch):
    from acidctl.orc import writer

    wids = _one_bucket_table(tmp_path)
    full = []
    real_verify = writer.verify
    monkeypatch.setattr(writer, "verify", lambda *a, **k: (full.append(a[1]), real_verify(*a, **k))[1])
    rep = compact(tmp_path, "major", wids, engine="local")
    assert rep["summary"]["rows_out"] == 54
    assert full == []  # the verification's read of the output carried the file checks


def test_bad_key_index_is_refused_by_the_deferred_checks(tmp_path, monkeypatch):
    """A written file whose hive.acid.key.index names another last key (F04, an event check)
    fails the task before anything is published."""
    from acidctl.orc import writer

    wids = _one_bucket_table(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    real = writer.AcidFileWriter._key_index

    def wrong_last_key(self, tmp, stripe_rows):
        entries = real(self, tmp, stripe_rows).rstrip(";").split(";")
        ot, bk, rid = entries[-1].split(",")
        return ";".join(entries[:-1] + [f"{ot},{bk},{int(rid) + 1000}"]) + ";"

    monkeypatch.setattr(writer.AcidFileWriter, "_key_index", wrong_last_key)
    with pytest.raises(WriteVerificationFailed, match="fails F04"):
        compact(tmp_path, "major", wids, engine="local")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == before


def test_same_validity():
    from acidctl.acid.writeids import WriteIdList

    aborted_only = WriteIdList.parse("db.t:5:9223372036854775807::4")
    with_open = WriteIdList.parse("db.t:5:3:3:4")
    # a compactor list keeps the aborted ids and ends below the lowest open one
    assert verification.same_validity(aborted_only, aborted_only.for_compactor())
    assert not verification.same_validity(with_open, with_open.for_compactor())
    assert not verification.same_validity(aborted_only, WriteIdList.parse("db.t:5:9223372036854775807::"))
    assert not verification.same_validity(aborted_only, WriteIdList.parse("db.t:6:9223372036854775807::4"))


@pytest.mark.parametrize(
    ("wids", "shared", "kernel_calls"),
    [
        # same validity: the held old side's merge is the compaction's: one merge of the input
        # batch, one of the output read back
        ("db.t:3:9223372036854775807::", True, 2),
        # write id 4 open: the reader's list differs from the compactor's (hwm 3): the
        # compaction merges the batch itself as well
        ("db.t:4:4:4:", False, 3),
    ],
)
def test_compaction_merge_shared_with_held_old_side(tmp_path, monkeypatch, wids, shared, kernel_calls):
    from acidctl.acid import merge

    _one_bucket_table(tmp_path)
    calls = []
    real_apply = merge.apply
    monkeypatch.setattr(merge, "apply", lambda *a, **k: (calls.append(1), real_apply(*a, **k))[1])
    seen = []
    real_init = verification.HeldOldSide.__init__

    def init(self, *a, **k):
        real_init(self, *a, **k)
        seen.append(self.shared)

    monkeypatch.setattr(verification.HeldOldSide, "__init__", init)
    spy = _Spy(monkeypatch)  # held == the old files' merged read from storage
    rep = compact(tmp_path, "major", wids, engine="local")  # one bucket: runs in this process
    assert rep["summary"]["rows_out"] == 54  # 55 inserted, row 7 of write id 1 deleted
    assert seen == [shared] and spy.held == 1
    assert len(calls) - spy.reread_merges == kernel_calls
