"""Recording acidctl's compactions in a metastore the way Hive's Worker does
(../shared/spec/metastore.md §9.2, §10), through :class:`acidctl.metastore.recorder.Recorder`.

One COMPACTION_QUEUE row per compacted partition: enqueued (``i``), claimed (``w``), and after
publication marked compacted (``r``, ``CQ_HIGHEST_WRITE_ID`` = the compactor hwm) so that the
Cleaner removes the directories the compaction made obsolete. Hive 4 additionally opens a
compactor txn (type COMPACTION = 3) whose id names the output (``_v<txn>``), records it on the
queue row (plus the ``TXN_COMPONENTS`` ``c`` row) and commits it after publication. A failure
marks the row failed (``f``) and aborts the txn.

The Recorder writes only into databases created by ``acidctl metastore init`` (or test
databases); for any other metastore it raises ``RefusedError`` and ``compact`` reports that the
compaction was not registered.
"""

from __future__ import annotations

import socket


class Registrar:
    def __init__(self, recorder, db: str, table: str, *, compactor_hwm: int):
        self.rec = recorder
        self.db, self.table = db, table
        self.hwm = compactor_hwm
        self.hive_version = recorder.hive_version
        self.entries: dict = {}
        self.worker = f"{socket.gethostname()}-acidctl"

    def _queued(self, partition, mode: str) -> int | None:
        """An ``initiated`` request of this type for the partition (claimed like Hive's Worker
        claims one); a request a worker is already ``working`` on is refused (exit 6)."""
        from acidctl.errors import RefusedError
        from acidctl.metastore.queries import show_compactions

        rows = show_compactions(self.rec.ms, db=self.db, table=self.table, partition=partition,
                                states=["initiated", "working"]).compactions
        ours = {e["cq_id"] for e in self.entries.values()}
        rows = [r for r in rows if (r.get("partname") or None) == partition and int(r["compactionid"]) not in ours]
        for r in rows:
            if r["state"] == "working":
                raise RefusedError(f"compaction {r['compactionid']} of {self.db}.{self.table}"
                                   f"{'/' + partition if partition else ''} is being worked on by {r.get('workerid') or r.get('worker')}")
        for r in rows:
            if str(r["type"]).lower() == mode:
                return int(r["compactionid"])
        return None

    def check(self, partition, mode: str) -> None:
        """Refuse early (before any work) when a worker holds this partition."""
        self._queued(partition, mode)

    def _begin(self, partition, mode: str) -> dict:
        e = self.entries.get(partition)
        if e is None:
            cq = self._queued(partition, mode)
            claimed = cq is not None
            if cq is None:
                cq = self.rec.enqueue_compaction(self.db, self.table, partition=partition, compaction_type=mode,
                                                 initiator_id=f"{socket.gethostname()}-manual")
            self.rec.mark_working(cq, worker_id=self.worker)
            e = self.entries[partition] = {"cq_id": cq, "txn_id": None, "state": "working", "claimed": claimed}
        return e

    def visibility(self, partition, mode: str) -> int:
        """Hive 4: the compactor txn of this partition's compaction (opened on first use)."""
        e = self._begin(partition, mode)
        if e["txn_id"] is None:
            e["txn_id"] = self.rec.open_txn("acidctl", socket.gethostname(), txn_type=3)
        return e["txn_id"]

    def before_publish(self, plan) -> None:
        self._begin(plan.partition, plan.mode)

    def published(self, plan) -> None:
        e = self._begin(plan.partition, plan.mode)
        self.rec.mark_compacted(e["cq_id"], highest_write_id=self.hwm,
                                txn_id=e["txn_id"] if self.hive_version >= 4 else None)
        if e["txn_id"] is not None:
            self.rec.commit_txn(e["txn_id"])
        e["state"] = "ready for cleaning"
        plan.registration = {"cq_id": e["cq_id"], "txn_id": e["txn_id"], "state": e["state"],
                             "highest_write_id": self.hwm, "claimed_request": e["claimed"]}

    def failed(self, plan, message: str) -> None:
        e = self.entries.get(plan.partition)
        if e is None or e["state"] != "working":
            return
        try:
            self.rec.mark_failed(e["cq_id"], error_message=message[:2000])
            if e["txn_id"] is not None:
                self.rec.abort_txn(e["txn_id"])
        except Exception:
            pass
        e["state"] = "failed"
        plan.registration = {"cq_id": e["cq_id"], "txn_id": e["txn_id"], "state": "failed"}
