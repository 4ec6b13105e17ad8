"""The rules of issue 21 as separate checks (see tests/property/harness.py for the steps).

* :class:`WhyPredictsCompactAndClean` — rule 1: ``why`` predicts exactly the directories
  ``compact`` then writes and the set ``clean --execute`` then removes.
* :class:`DoctorReportsNoHarm` — rule 2a: no new damage finding after an acidctl command.
* :class:`DoctorFixesConverge` — rule 2b: each printed fix clears its finding on the next
  ``doctor`` or exits non-zero with a one-line reason.
* :class:`RefusalsLeaveNoTrace` — rule 3: a refused, dry-run or interrupted command leaves
  COMPACTION_QUEUE, COMPLETED_COMPACTIONS, TXNS and HIVE_LOCKS as it found them (a dry run also
  the compaction id sequence) — except that an interrupted command may leave its own Hive 4
  compaction txn in TXNS as aborted (``TXN_TYPE`` 3, state ``a``): Hive's own Worker aborts its
  compactor txn when it fails or gives up (operations.md §3.2 step 8), and the row cannot be
  deleted safely (Hive 4 derives the txn high-water mark from ``MAX(TXN_ID)``); and no acidctl
  command adds a ``failed`` compaction (which counts toward
  hive.compactor.initiator.failed.compacts.threshold).
* :class:`FilesFollowUmask` — rule 5: what acidctl creates is 0644 / 0755 under umask 022.
* :class:`ReaderSeesModel` — the merged snapshot (``dump --merged``) equals the reference
  model after every step.

Rule 4 (concurrent workers on different partitions) is tests/property/test_concurrent_workers.py.
"""

from __future__ import annotations

import shlex

from tests.property.harness import Check, Outcome, Step
from tests.property.warehouse import RULE3_TABLES, Warehouse, normalise_output


# -- rule 1 --------------------------------------------------------------------------------
def predicted_outputs(why_part: dict, mode: str) -> list[str] | None:
    """What ``why``'s Worker section says ``compact --MODE`` writes for this partition; None
    when ``why`` predicts another type than ``mode`` asks for (no prediction to compare)."""
    steps = why_part["worker"]["steps"]
    nothing_due = any(s["rule"] == "type" for s in steps)
    out = next((s for s in steps if s["rule"] == "output"), None)
    enough = next((s for s in steps if s["rule"] == "enough to compact"), None)
    kind = out["values"]["type"] if out else ("major" if nothing_due else None)
    if mode == "due":
        if nothing_due:
            return []
        return list(out["values"]["outputs"]) if out else []
    if kind is None:  # "enough to compact" stop: the type is in its text
        kind = "major" if enough and enough["detail"].startswith("major") else "minor"
    if kind != mode:
        return None
    return list(out["values"]["outputs"]) if out else []


def predicted_removals(why_part: dict) -> set[str]:
    """What ``why``'s Cleaner section says ``clean --execute --min-age 0`` removes: the
    ``removable`` list of its "removable" step, unless a step stops the Cleaner (a lock, an
    open txn, NO_CLEANUP, ...) — except the "queue" stop, which says `acidctl clean` removes
    them directly. The step's ``obsolete`` and ``aborted`` lists are what the reader snapshot
    classifies so, not what is removable now: on Hive 3 an aborted delta no compaction covers
    yet is listed as aborted and as "not yet removable" (directory-state.md §7.2)."""
    steps = why_part["cleaner"]["steps"]
    if any(s["outcome"] == "stop" and s["rule"] != "queue" for s in steps):
        return set()
    rem = next(s for s in steps if s["rule"] == "removable")["values"]
    return set(rem["removable"])


class WhyPredictsCompactAndClean(Check):
    name = "rule 1: why predicts compact's output and clean's removals"

    def before(self, wh: Warehouse, step: Step) -> None:
        self.why = self.listing = None
        if step.kind in ("compact", "clean", "worker") and not step.flag:
            self.why = wh.why()
            self.listing = wh.listing()

    def after(self, wh: Warehouse, out: Outcome) -> None:
        if self.why is None or out.code != 0:
            return
        after = wh.listing()
        if out.step.kind == "worker":
            import json

            reqs = json.loads(out.stdout)["requests"] if out.stdout.strip() else []
            per_part = [r["partition"] for r in reqs]
            for r in reqs:
                part = r["partition"]
                if r["state"] != "ready for cleaning" or per_part.count(part) > 1 or part not in self.why:
                    continue
                want = predicted_outputs(self.why[part], str(r["type"]).lower())
                if want is None:
                    continue
                wrote = sorted(normalise_output(n) for n in after[part] - self.listing[part])
                if wrote != sorted(want):
                    self.fail(
                        out,
                        f"request {r['cq_id']} ({r['type']}): why predicted {sorted(want)} for "
                        f"{part or 'the table'}, the worker wrote {wrote}",
                    )
        elif out.step.kind == "compact":
            part = out.part
            want = predicted_outputs(self.why[part], out.step.mode)
            if want is None:
                return
            wrote = sorted(normalise_output(n) for n in after[part] - self.listing[part])
            if wrote != sorted(want):
                self.fail(out, f"why predicted {sorted(want)} for {part or 'the table'}, compact wrote {wrote}")
        else:
            for part, names in self.listing.items():
                removed = names - after[part]
                want = predicted_removals(self.why[part])
                if removed != want:
                    self.fail(
                        out,
                        f"{part or 'table'}: why predicted removal of {sorted(want)}, clean removed {sorted(removed)}",
                    )


# -- rule 2 --------------------------------------------------------------------------------
#: findings that report damage: after an acidctl command none may be new
HARM_CODES = {
    "UNEXPLAINED_COMPACTED_DIR",
    "COMPACTION_SUCCEEDED_NO_OUTPUT",
    "COMPACTION_ORPHANED",
    "COMPACTION_WORKING_TOO_LONG",
    "INITIATOR_SKIPS_FAILED",
    "WRITE_ID_ABOVE_HWM",
    "LOCK_OF_FINISHED_TXN",
    "LOCK_EXPIRED",
    "LOCK_WAITING",
    "CLEANER_RETRYING",
    "LISTING_FAILED",
    "LOCATION_MISSING",
    "PARTITION_NOT_IN_METASTORE",
}


def finding_key(f: dict) -> tuple:
    ev = f.get("evidence") or {}
    return (f["code"], f.get("subject"), ev.get("dir"))


def is_harm(f: dict) -> bool:
    return f["code"] in HARM_CODES or f["code"].startswith("STATE_")


class DoctorReportsNoHarm(Check):
    name = "rule 2: doctor reports nothing acidctl caused"

    def start(self, wh: Warehouse) -> None:
        self.prev = None

    def before(self, wh: Warehouse, step: Step) -> None:
        if step.kind.startswith("hive_"):
            self.prev = None
        elif self.prev is None:
            self.prev = {finding_key(f) for f in wh.doctor()}

    def after(self, wh: Warehouse, out: Outcome) -> None:
        if not out.acidctl:
            return
        now = wh.doctor()
        for f in now:
            if is_harm(f) and finding_key(f) not in self.prev:
                self.fail(out, f"doctor now reports {f['code']} {f.get('subject')}: {f.get('message')}")
        self.prev = {finding_key(f) for f in now}


def fix_argv(fix: str | None) -> list[str] | None:
    if not fix:
        return None
    words = shlex.split(fix)
    if not words or words[0] != "acidctl" or any(w in (";", "&&", "||", "|") for w in words):
        return None
    return words[1:]


#: Hive 4's metastore.txn.opentxn.timeout: a txn started less than this long ago counts as
#: possibly open for the Cleaner's watermark (operations.md §2.1; acidctl.metastore.cleaner)
OPEN_TXN_WINDOW_S = 1.0


def same_finding(f: dict, g: dict) -> bool:
    """``g`` is (still) the finding ``f``: same code, subject and directory — and, for a finding
    about a list of directories (OBSOLETE_WAITING, ABORTED_WAITING_COMPACTION, ...), one that
    still names one of ``f``'s directories. A fix clears its finding when the directories it
    named are no longer reported; a directory that only becomes removable because the fix ran
    (an aborted delta above the compaction ``clean`` just marked cleaned) is a new finding with
    its own fix."""
    if finding_key(f) != finding_key(g):
        return False
    a, b = (f.get("evidence") or {}).get("dirs"), (g.get("evidence") or {}).get("dirs")
    return a is None or b is None or bool(set(a) & set(b))


def _tried_key(f: dict) -> tuple:
    return (finding_key(f), tuple((f.get("evidence") or {}).get("dirs") or ()), f["fix"])


class DoctorFixesConverge(Check):
    name = "rule 2: every printed fix clears its finding or exits non-zero with the reason"
    max_fixes = 4

    def _settle(self, wh: Warehouse) -> None:
        """On Hive 4 wait past the open-txn window before asking doctor: a txn started less than
        metastore.txn.opentxn.timeout (1 s) ago counts as possibly open, so right after a step
        that opened one (a compaction txn, a Hive write) the Cleaner — and with it ``clean`` and
        doctor, which ask the same ``cleaner_waits`` — holds a ready compaction back for up to
        1 s. Without the wait whether doctor prints a fix at all depends on how fast the
        backend is (SQLite usually inside the window, MariaDB outside)."""
        if wh.hive_version >= 4:
            import time

            time.sleep(OPEN_TXN_WINDOW_S + 0.2)

    def finish(self, wh: Warehouse) -> None:
        tried: set = set()
        for _ in range(self.max_fixes):
            self._settle(wh)
            findings = wh.doctor()
            todo = [f for f in findings if fix_argv(f.get("fix")) and _tried_key(f) not in tried]
            if not todo:
                return
            f = todo[0]
            tried.add(_tried_key(f))
            r = wh.cli(*fix_argv(f["fix"]))
            wh.sync_txn_states()
            what = f"fix of {f['code']} {f.get('subject')} `{f['fix']}`"
            if r.code != 0:
                lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
                if not lines or "Traceback" in r.stderr:
                    self.fail(None, f"{what} exited {r.code} without a one-line reason: {r.stderr[-300:]!r}")
                continue
            left = [g for g in wh.doctor() if same_finding(f, g)]
            if left:
                self.fail(None, f"{what} exited 0 but doctor still reports: {left[0].get('message')}")


# -- rule 3 --------------------------------------------------------------------------------
def _diff(a: dict, b: dict) -> str:
    out = []
    for name in a:
        gone = [r for r in a[name] if r not in b[name]]
        new = [r for r in b[name] if r not in a[name]]
        for r in gone:
            out.append(f"{name} -{_short(r)}")
        for r in new:
            out.append(f"{name} +{_short(r)}")
    return "; ".join(out)


def _short(row: tuple) -> str:
    keep = (
        "CQ_ID",
        "CC_ID",
        "CQ_STATE",
        "CC_STATE",
        "TXN_ID",
        "TXN_STATE",
        "TXN_TYPE",
        "HL_LOCK_EXT_ID",
        "CQ_WORKER_ID",
        "CC_WORKER_ID",
        "CQ_PARTITION",
        "CC_PARTITION",
        "CC_ERROR_MESSAGE",
        "CQ_HIGHEST_WRITE_ID",
    )
    d = dict(row)
    return "{" + ", ".join(f"{k}={d[k]!r}" for k in keep if k in d) + "}"


#: TXNS.TXN_TYPE of a Hive 4 COMPACTION txn (TxnType.COMPACTION, operations.md §2.1)
COMPACTION_TXN_TYPE = 3


def own_aborted_compaction_txns(before: list, now: list) -> list:
    """The TXNS rows in ``now`` that are new since ``before`` and are aborted compaction txns
    (``TXN_TYPE`` 3, ``TXN_STATE`` 'a') — what an interrupted command may leave: its own
    compactor txn, aborted as Hive's Worker aborts its own when it fails or gives up
    (operations.md §3.2 step 8). Rows that existed before the command never qualify."""
    old_ids = {dict(r)["TXN_ID"] for r in before}
    return [
        r
        for r in now
        if r not in before
        and dict(r)["TXN_ID"] not in old_ids
        and dict(r).get("TXN_TYPE") == COMPACTION_TXN_TYPE
        and dict(r)["TXN_STATE"] == "a"
    ]


class RefusalsLeaveNoTrace(Check):
    name = "rule 3: refused, dry-run and interrupted commands leave the queue, txns and locks as found"

    def before(self, wh: Warehouse, step: Step) -> None:
        self.snap = None
        if not step.kind.startswith("hive_"):
            self.snap = wh.tables()
            self.ncq = wh.next_compaction_id()
            self.failed = wh.failed_rows()

    def after(self, wh: Warehouse, out: Outcome) -> None:
        if self.snap is None:
            return
        now = wh.tables()
        why = "refused" if out.refused else ("dry run" if out.dry_run else None)
        if out.interrupted:
            why = "interrupted"
            # the one trace an interrupted command may leave: its own compaction txn, aborted
            allowed = own_aborted_compaction_txns(self.snap["TXNS"], now["TXNS"])
            now = {**now, "TXNS": [r for r in now["TXNS"] if r not in allowed]}
        if why is not None and now != self.snap:
            self.fail(out, f"{why}, yet changed {_diff(self.snap, now)}")
        if out.dry_run and wh.next_compaction_id() != self.ncq:
            self.fail(out, f"dry run consumed compaction ids {self.ncq}..{wh.next_compaction_id() - 1}")
        new_failed = wh.failed_rows() - self.failed
        if new_failed:
            msgs = [_short(r) for r in now["COMPLETED_COMPACTIONS"] if dict(r).get("CC_ID") in new_failed]
            self.fail(out, f"recorded failed compaction(s), which count toward the Initiator's threshold: {msgs}")


# -- rule 5 --------------------------------------------------------------------------------
class FilesFollowUmask(Check):
    name = "rule 5: files and directories acidctl creates follow the umask (0644/0755 under 022)"

    def before(self, wh: Warehouse, step: Step) -> None:
        self.modes = None if step.kind.startswith("hive_") else wh.modes()

    def after(self, wh: Warehouse, out: Outcome) -> None:
        if self.modes is None:
            return
        bad = []
        for p, (is_dir, mode) in wh.modes().items():
            if self.modes.get(p) == (is_dir, mode):
                continue
            want = 0o755 if is_dir else 0o644
            if mode != want:
                bad.append(f"{p.split('/t/', 1)[-1]} {mode:04o} (want {want:04o})")
        if bad:
            self.fail(out, "; ".join(sorted(bad)[:6]) + (f" (+{len(bad) - 6} more)" if len(bad) > 6 else ""))


# -- the reader ----------------------------------------------------------------------------
class ReaderSeesModel(Check):
    name = "reader: dump --merged equals the reference model"

    def start(self, wh: Warehouse) -> None:
        self._compare(wh, None)

    def after(self, wh: Warehouse, out: Outcome) -> None:
        self._compare(wh, out)

    def _compare(self, wh: Warehouse, out: Outcome | None) -> None:
        got, want = wh.merged(), wh.model()
        if got != want:
            missing = sorted(set(want) - set(got), key=repr)[:4]
            extra = sorted(set(got) - set(want), key=repr)[:4]
            changed = [k for k in set(got) & set(want) if got[k] != want[k]][:4]
            self.fail(out, f"merged read differs from the model: missing {missing} extra {extra} changed {changed}")


ALL_CHECKS = {
    "why": WhyPredictsCompactAndClean,
    "doctor-harm": DoctorReportsNoHarm,
    "doctor-fixes": DoctorFixesConverge,
    "refusals": RefusalsLeaveNoTrace,
    "modes": FilesFollowUmask,
    "reader": ReaderSeesModel,
}

__all__ = ["ALL_CHECKS", "RULE3_TABLES"]
