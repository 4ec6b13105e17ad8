"""One plain regression test per case of issue 21's "What was seen", on `acidctl demo`'s own
warehouse (SQLite metastore, Hive 3 and Hive 4) or a Recorder-built one; the rules behind them
are the property test (test_no_harm.py).

The case "acidctl workers fail each other" is tests/property/test_concurrent_workers.py.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path

import pytest
import sqlalchemy as sa

from acidctl.metastore.recorder import LockComponent, Recorder
from tests.conftest import run_cli
from tests.property.warehouse import RULE3_TABLES, normalise_output, visible


class Demo:
    """``acidctl demo DIR`` (run in-process) and acidctl against its metastore."""

    def __init__(self, tmp_path: Path, hive_version: int = 3):
        self.dir = tmp_path / "demo"
        r = run_cli("demo", "--hive-version", str(hive_version), str(self.dir))
        assert r.code == 0, r
        self.url = f"sqlite:///{self.dir}/metastore.db"
        self.wh = self.dir / "warehouse"
        self.rec = Recorder(self.url)

    def cli(self, *args):
        return run_cli("--metastore", self.url, *args)

    def json(self, *args, ok=(0,)):
        r = self.cli("-o", "json", *args)
        assert r.code in ok, r
        return json.loads(r.stdout)

    def doctor(self, *conf) -> list[dict]:
        return self.json("doctor", *conf, ok=(0, 4))["findings"]

    def tables(self) -> dict:
        out = {}
        with self.rec.engine.connect() as c:
            for name in RULE3_TABLES:
                t = getattr(self.rec.T, name)
                out[name] = sorted((tuple(r) for r in c.execute(sa.select(t.clause))), key=repr)
        return out

    def next_cq_id(self) -> int:
        n = self.rec.T.NEXT_COMPACTION_QUEUE_ID
        with self.rec.engine.connect() as c:
            return int(c.execute(sa.select(n.NCQ_NEXT)).scalar())

    def cc_states(self) -> list[str]:
        cc = self.rec.T.COMPLETED_COMPACTIONS
        with self.rec.engine.connect() as c:
            return [r[0] for r in c.execute(sa.select(cc.CC_STATE).order_by(cc.CC_ID))]

    def entries(self, rel: str) -> set[str]:
        return {e.name for e in (self.wh / rel).iterdir() if visible(e.name)}

    def why_part(self, spec: str) -> dict:
        (p,) = self.json("why", spec)["partitions"]
        return p


HIVE = pytest.mark.parametrize("hive_version", [3, 4], ids=["hive3", "hive4"])


# -- Refusals become failures --------------------------------------------------------------
def test_refused_minor_compaction_leaves_the_queue_as_found(tmp_path):
    """Hive 3 demo: ``compact --minor default.sales --partition ds=2026-01-01`` must publish a
    delta and a delete_delta (two renames): refused (exit 6) before anything is written; twice
    in a row, and the Initiator's failed threshold (2) is not reached because of it."""
    d = Demo(tmp_path, 3)
    before = d.tables()
    for _ in range(2):
        r = d.cli("compact", "--minor", "default.sales", "--partition", "ds=2026-01-01")
        assert r.code == 6, r
        assert len(r.stderr.strip().splitlines()) == 1
    assert d.tables() == before
    steps = d.why_part("default.sales/ds=2026-01-01")["initiator"]["steps"]
    (failed,) = [s for s in steps if s["rule"] == "failed threshold"]
    assert failed["outcome"] != "stop", failed


# -- A crash on real Hive 4 schemas ----------------------------------------------------------
def test_compact_beside_a_ready_for_cleaning_request_at_the_hwm_answers_clearly(tmp_path):
    """Hive 4 demo: the queue holds a compaction of default.employee in ``ready for cleaning``
    with CQ_HIGHEST_WRITE_ID = the table's high-water mark (3), recorded as Hive's Worker
    records it (its COMPACTION txn committed); the deltas are still on disk. Hive 4's
    ``compact()`` refuses a new request for it; ``compact --major default.employee`` must say
    so (exit 0 or 6, one line), never an internal error."""
    d = Demo(tmp_path, 4)
    rec = d.rec
    cq = rec.enqueue_compaction("default", "employee", compaction_type="major")
    rec.mark_working(cq, worker_id="hivehost-17")
    txn = rec.open_txn("hive", "hivehost", txn_type=3)
    rec.mark_compacted(cq, highest_write_id=3, txn_id=txn)
    rec.commit_txn(txn)
    before = d.tables()
    r = d.cli("compact", "--major", "default.employee")
    assert r.code in (0, 6), r
    assert "InternalError" not in r.stderr and "UnboundLocalError" not in r.stderr, r.stderr
    if r.code == 6:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert d.tables() == before


# -- Compacted files are unreadable by other users -------------------------------------------
@HIVE
def test_compacted_files_follow_the_umask(tmp_path, hive_version):
    d = Demo(tmp_path, hive_version)
    old = os.umask(0o022)
    try:
        before = {p for p in (d.wh / "employee").rglob("*")}
        r = d.cli("compact", "--major", "default.employee")
        assert r.code == 0, r
        new = [p for p in (d.wh / "employee").rglob("*") if p not in before]
    finally:
        os.umask(old)
    assert new
    bad = {
        str(p.relative_to(d.wh)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in new
        if stat.S_IMODE(p.stat().st_mode) != (0o755 if p.is_dir() else 0o644)
    }
    assert bad == {}


# -- doctor flags acidctl's own work, and its fixes do nothing -------------------------------
@HIVE
def test_doctor_does_not_flag_the_demos_own_compaction(tmp_path, hive_version):
    """``make demo``'s steps: ``compact --due default.sales`` compacts ds=2025-12-31; ``why``
    predicted exactly that output, ``doctor`` does not call it unexplained, and after ``clean``
    it does not report the compaction as having no output."""
    d = Demo(tmp_path, hive_version)
    worker = d.why_part("default.sales/ds=2025-12-31")["worker"]
    (out,) = [s for s in worker["steps"] if s["rule"] == "output"]
    before = d.entries("sales/ds=2025-12-31")
    r = d.cli("compact", "--due", "default.sales")
    assert r.code == 0, r
    wrote = sorted(normalise_output(n) for n in d.entries("sales/ds=2025-12-31") - before)
    assert wrote == sorted(out["values"]["outputs"])
    ours = ("UNEXPLAINED_COMPACTED_DIR", "COMPACTION_SUCCEEDED_NO_OUTPUT")
    assert [f for f in d.doctor() if f["code"] in ours] == []
    r = d.cli("clean", "default.sales", "--execute", "--min-age", "0")
    assert r.code == 0, r
    assert [f for f in d.doctor() if f["code"] in ours] == []


# -- doctor/why promise what clean does not do ---------------------------------------------
@HIVE
def test_clean_does_what_doctor_and_why_promise(tmp_path, hive_version):
    """The demo's aborted delta_0000004_0000004_0000 of ds=2026-01-01, judged by the Cleaner's
    rules (directory-state.md §7.2): Hive 4's Cleaner removes aborted directories, so doctor
    reports OBSOLETE_WAITING with ``acidctl clean`` as fix and ``why`` lists the delta as
    removable; Hive 3's removes an aborted delta only once a compaction covers it, so doctor
    reports ABORTED_WAITING_COMPACTION ("a major compaction, then clean") and ``why`` lists it
    as not yet removable. On Hive 3 the demo's open txn holds a lock on the partition, which the
    Cleaner of a compaction registered now would wait for (operations.md §5.1): no fix is
    printed until that txn ends. The printed fix, run as printed (each ``&&`` part in turn),
    removes the delta; right before its ``clean`` part ``why`` predicts exactly what that clean
    removes; afterwards neither doctor nor ``why`` names the delta."""
    aborted = "delta_0000004_0000004_0000"
    spec = "default.sales/ds=2026-01-01"
    d = Demo(tmp_path, hive_version)

    def removable_step() -> dict:
        (rem,) = [s for s in d.why_part(spec)["cleaner"]["steps"] if s["rule"] == "removable"]
        return rem["values"]

    def findings() -> list[dict]:
        return [
            f
            for f in d.doctor()
            if f["partition"] == "ds=2026-01-01" and aborted in (f.get("evidence") or {}).get("dirs", [])
        ]

    assert aborted in removable_step()["aborted"]
    (f,) = findings()
    if hive_version >= 4:
        assert f["code"] == "OBSOLETE_WAITING"
        assert aborted in removable_step()["removable"]
    else:
        assert f["code"] == "ABORTED_WAITING_COMPACTION"
        assert aborted not in removable_step()["removable"]
        (nyr,) = [s for s in d.why_part(spec)["cleaner"]["steps"] if s["rule"] == "not yet removable"]
        assert aborted in nyr["values"]["names"]
        # the open txn's lock on the partition: no fix until a person ends it
        assert f["fix"] is None and f["evidence"]["lock_ids"]
        hl = d.rec.T.HIVE_LOCKS
        with d.rec.engine.connect() as c:
            txns = sorted(
                {
                    int(t)
                    for (t,) in c.execute(
                        sa.select(hl.HL_TXNID).where(hl.HL_LOCK_EXT_ID.in_(f["evidence"]["lock_ids"]))
                    )
                }
            )
        assert txns and 0 not in txns
        r = d.cli("abort", "transactions", *map(str, txns), "--execute")
        assert r.code == 0, r
        (f,) = findings()
        assert f["code"] == "ABORTED_WAITING_COMPACTION"
    assert f["fix"], f
    parts = [shlex.split(p) for p in f["fix"].split(" && ")]
    assert all(w[0] == "acidctl" for w in parts)
    assert parts[-1][1] == "clean" and "--execute" in parts[-1]
    for words in parts[:-1]:
        r = d.cli(*words[1:])
        assert r.code == 0, r
    promised = set(removable_step()["removable"])
    assert aborted in promised
    before = d.entries("sales/ds=2026-01-01")
    r = d.cli(*parts[-1][1:])
    assert r.code == 0, r
    assert before - d.entries("sales/ds=2026-01-01") == promised
    assert findings() == []
    rem = removable_step()
    assert aborted not in set(rem["aborted"]) | set(rem["obsolete"]) | set(rem["removable"])


# -- Previews that write, fixes that preview -----------------------------------------------
@HIVE
def test_enqueue_dry_run_writes_nothing(tmp_path, hive_version):
    d = Demo(tmp_path, hive_version)
    before, ncq = d.tables(), d.next_cq_id()
    r = d.cli("compact", "--enqueue", "--major", "default.employee", "--dry-run")
    assert r.code in (0, 2), r  # a dry run of the enqueue, or refused as a usage error
    assert d.tables() == before and d.next_cq_id() == ncq


@HIVE
def test_cleaner_blocked_fix_aborts_for_real(tmp_path, hive_version):
    """After a compaction of ds=2026-01-01 the demo's open txn 10 holds the Cleaner back (Hive 3:
    its lock; Hive 4: txn below CQ_NEXT_TXN_ID); the printed fix aborts it and the finding
    goes."""
    d = Demo(tmp_path, hive_version)
    assert d.cli("compact", "--major", "default.sales/ds=2026-01-01").code == 0
    code = "CLEANER_BLOCKED_BY_LOCK" if hive_version == 3 else "CLEANER_BLOCKED_BY_TXN"
    (f,) = [f for f in d.doctor() if f["code"] == code]
    words = shlex.split(f["fix"])
    r = d.cli(*words[1:])
    assert r.code == 0, r
    assert [g for g in d.doctor() if g["code"] == code] == []


@HIVE
def test_revert_is_not_a_failed_compaction(tmp_path, hive_version):
    d = Demo(tmp_path, hive_version)
    assert d.cli("compact", "--major", "default.employee").code == 0
    states = d.cc_states()
    r = d.cli("revert", "default.employee", "--execute")
    assert r.code == 0, r
    new = d.cc_states()[len(states) :]
    assert "f" not in new, new


# -- Findings without a fix ----------------------------------------------------------------


@HIVE
def test_working_too_long_without_compactor_txn_has_a_fix(tmp_path, hive_version):
    """A request ``working`` longer than hive.compactor.worker.timeout (no compactor txn):
    the Initiator's revokeTimedoutWorkers puts it back; doctor prints a command that does it
    (``initiator --once``) and it clears the finding."""
    d = Demo(tmp_path, hive_version)
    cq = d.rec.enqueue_compaction("default", "employee", compaction_type="major")
    d.rec.mark_working(cq, worker_id="hivehost-17", now_ms=1000)
    conf = ("--conf", "hive.compactor.worker.timeout=1")
    (f,) = [f for f in d.doctor(*conf) if f["code"] == "COMPACTION_WORKING_TOO_LONG"]
    assert f.get("fix"), f
    words = shlex.split(f["fix"])
    assert words[0] == "acidctl"
    r = d.cli(*words[1:])
    assert r.code == 0 or len(r.stderr.strip().splitlines()) == 1, r
    if r.code == 0:
        assert [g for g in d.doctor(*conf) if g["code"] == "COMPACTION_WORKING_TOO_LONG"] == []


@pytest.mark.parametrize("finished", ["aborted", "committed"])
@HIVE
def test_lock_of_finished_txn_has_a_fix(tmp_path, hive_version, finished):
    """A HIVE_LOCKS row left behind by a txn that is aborted, or committed (Hive 3: its TXNS row
    gone): doctor's LOCK_OF_FINISHED_TXN prints a command that removes it."""
    d = Demo(tmp_path, hive_version)
    rec = d.rec
    txn = rec.open_txn("hive", "hivehost")
    rec.add_write(txn, "default", "employee", operation="i")
    lock = rec.lock(LockComponent("default", "employee", None, "shared_write"), txn_id=txn)
    t = rec.T.TXNS
    with rec.engine.begin() as c:
        if finished == "aborted":
            c.execute(sa.update(t.clause).where(t.TXN_ID == txn).values({t.TXN_STATE.name: "a"}))
        elif hive_version == 3:
            c.execute(sa.delete(t.clause).where(t.TXN_ID == txn))
        else:
            c.execute(sa.update(t.clause).where(t.TXN_ID == txn).values({t.TXN_STATE.name: "c"}))
    found = [f for f in d.doctor() if f["code"] == "LOCK_OF_FINISHED_TXN"]
    assert found, "doctor does not report the lock"
    (f,) = found
    assert f.get("fix"), f
    r = d.cli(*shlex.split(f["fix"])[1:])
    assert r.code == 0, r
    assert [g for g in d.doctor() if g["code"] == "LOCK_OF_FINISHED_TXN"] == []
    h = rec.T.HIVE_LOCKS
    with rec.engine.connect() as c:
        assert c.execute(sa.select(h.HL_LOCK_EXT_ID).where(h.HL_LOCK_EXT_ID == lock)).first() is None


@HIVE
def test_write_id_above_hwm_has_a_fix(tmp_path, hive_version):
    """A delta whose write ids are above the table's NEXT_WRITE_ID (employee: hwm 3): doctor's
    WRITE_ID_ABOVE_HWM prints a command that moves it aside (with a record), and the finding
    goes; readers' rows do not change."""
    d = Demo(tmp_path, hive_version)
    stray = d.wh / "employee" / "delta_0000009_0000009_0000"
    src = d.wh / "employee" / "delta_0000001_0000001_0000"
    stray.mkdir()
    for f in src.iterdir():
        (stray / f.name).write_bytes(f.read_bytes())
    rows = d.cli("-o", "json", "dump", "--merged", "default.employee").stdout
    (f,) = [f for f in d.doctor() if f["code"] == "WRITE_ID_ABOVE_HWM"]
    assert f.get("fix"), f
    r = d.cli(*shlex.split(f["fix"])[1:])
    assert r.code == 0, r
    assert [g for g in d.doctor() if g["code"] == "WRITE_ID_ABOVE_HWM"] == []
    assert d.cli("-o", "json", "dump", "--merged", "default.employee").stdout == rows
