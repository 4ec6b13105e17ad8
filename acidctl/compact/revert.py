"""``acidctl revert``: undo a compaction acidctl published, while nothing it made obsolete has
been cleaned.

Publication leaves a record per compaction in ``<partition>/.acidctl-published/<output>.json``
(hidden from every reader): its outputs, and every input directory or original file with the
names and sizes of the files a reader could treat as data. A revert is possible only when each
input is still there with exactly those files, and no later compaction consumed the output.
Removal is crash-safe: each output is first renamed to a hidden ``.acidctl-reverting-<name>``
(readers immediately see the inputs again, as before the compaction), then deleted; a crash in
between leaves only a hidden directory that the next ``revert --execute`` or ``clean --execute``
removes. Dry run unless ``execute``.
"""

from __future__ import annotations

from acidctl.compact import publish as pub
from acidctl.compact.coverage import reader_files
from acidctl.compact.lock import TableLock, table_root
from acidctl.errors import NotFoundError, RefusedError
from acidctl.fs import join_path

REVERTING_PREFIX = ".acidctl-reverting-"


def _wanted(partition: str | list[str] | None) -> list[str]:
    return [partition] if isinstance(partition, str) else list(partition or [])


def plan_revert(tfs, *, partition: str | list[str] | None = None, output: str | None = None) -> dict:
    """What a revert would do, per partition (``partition``: one or several, default all): the
    newest record (or the one of ``output``)."""
    from acidctl.acid.layout import list_table

    wanted = _wanted(partition)
    items = []
    for lst in list_table(tfs):
        if wanted and lst.partition not in wanted:
            continue
        part_path = lst.fs_path or lst.path
        records = pub.read_records(tfs, part_path)
        if output:
            records = [r for r in records if output in r.get("outputs", [])]
        if not records:
            continue
        rec = records[0]
        by_name = {e.name: e for e in lst.entries}
        problem = _blocker(rec, by_name, pub.read_records(tfs, part_path))
        items.append(
            {
                "partition": lst.partition,
                "path": tfs.display(part_path),
                "type": rec.get("type"),
                "outputs": rec.get("outputs", []),
                "inputs": sorted(rec.get("inputs", {})),
                "published_at": rec.get("time"),
                "revertible": problem is None,
                "reason": problem or "every input is still there with the files the compaction read",
                "_record": rec,
                "_part_path": part_path,
                "leftovers": [e.name for e in lst.entries if e.name.startswith(REVERTING_PREFIX)],
            }
        )
    if not items:
        where = f"partition {', '.join(wanted)}" if wanted else tfs.display(tfs.root)
        raise NotFoundError(
            f"no compaction published by acidctl to revert in {where}" + (f" with output {output}" if output else ""),
            hint="acidctl keeps a record per published compaction in .acidctl-published/",
        )
    return {"path": tfs.display(tfs.root), "items": items, "executed": False}


def _blocker(rec: dict, by_name: dict, all_records: list[dict]) -> str | None:
    for out in rec.get("outputs", []):
        if out not in by_name:
            return f"output {out} no longer exists"
        for other in all_records:
            if other is not rec and out in other.get("inputs", {}):
                return (
                    f"output {out} was compacted again (into {', '.join(other.get('outputs', []))}): revert that first"
                )
    for name, files in rec.get("inputs", {}).items():
        e = by_name.get(name)
        if e is None:
            return f"input {name} has been cleaned: the rows exist only in the output now"
        now = sorted([f.name, f.size] for f in reader_files(e))
        if now != sorted(files):
            return f"input {name} changed since the compaction (files differ)"
    return None


def revert(
    tfs,
    *,
    partition: str | list[str] | None = None,
    output: str | None = None,
    execute: bool = False,
    break_lock: bool = False,
) -> dict:
    report = plan_revert(tfs, partition=partition, output=output)
    blocked = [i for i in report["items"] if not i["revertible"]]
    if blocked:
        i = blocked[0]
        raise RefusedError(f"cannot revert {', '.join(i['outputs'])} in {i['path']}: {i['reason']}")
    if execute:
        with TableLock(tfs, command="revert", break_lock=break_lock, table_root=table_root(tfs.root)):
            for i in report["items"]:
                part = i["_part_path"]
                # re-check under the lock
                from acidctl.acid.layout import list_partition

                by_name = {e.name: e for e in list_partition(tfs, part, partition=i["partition"]).entries}
                problem = _blocker(i["_record"], by_name, pub.read_records(tfs, part))
                if problem:
                    raise RefusedError(f"cannot revert {', '.join(i['outputs'])} in {i['path']}: {problem}")
                for out in reversed(i["outputs"]):
                    hidden = join_path(part, REVERTING_PREFIX + out)
                    tfs.rename(join_path(part, out), hidden)  # readers see the inputs again from here
                    tfs.rm(hidden, recursive=True)
                tfs.rm(i["_record"]["record_path"])
                pub.remove_empty_records_dir(tfs, part)
                for left in i["leftovers"]:
                    tfs.rm(join_path(part, left), recursive=True)
        report["executed"] = True
    for i in report["items"]:
        i.pop("_record", None)
        i.pop("_part_path", None)
    return report


# ---------------------------------------------------------------------------------------
# compactions registered in a metastore
# ---------------------------------------------------------------------------------------


def _request_for(requests: list[dict], item: dict) -> dict | None:
    """The ``ready for cleaning`` request that registered ``item``'s output: same partition,
    Hive 4 ``CQ_TXN_ID`` = the output's ``_v`` txn, else same type with ``CQ_HIGHEST_WRITE_ID``
    at or above the output's write id (the compactor hwm of the table); the newest such."""
    from acidctl.acid.dirname import BaseDir, parse_acid_dir
    from acidctl.compact import naming

    best = None
    for out in item["outputs"]:
        d = parse_acid_dir(out)
        if d is None:
            continue
        wid = d.write_id if isinstance(d, BaseDir) else d.max_write_id
        for r in requests:
            if r["partition"] != item["partition"]:
                continue
            # the one naming rule: could this request's compaction have named its output so?
            ok = naming.row_explains(
                r,
                kind=d.kind,
                max_write_id=wid,
                visibility=d.visibility or None,
                hive_version=4 if d.visibility else 3,
            ) and (bool(d.visibility) or not r.get("txn_id"))
            if ok and (best is None or r["id"] > best["id"]):
                best = r
    return best


def revert_registered(
    tfs,
    ms,
    *,
    db: str,
    table: str,
    partition: str | list[str] | None = None,
    output: str | None = None,
    execute: bool = False,
    break_lock: bool = False,
) -> dict:
    """:func:`revert` of a table whose compactions may be registered in a metastore.

    A reverted compaction must leave the ``ready for cleaning`` state: Hive's Cleaner would
    find nothing obsolete once the output is gone and mark it cleaned — and ``markCleaned``
    forgets the aborted txns' ``TXN_COMPONENTS`` up to its highest write id, whose empty
    ``TXNS`` rows then go, so the aborted deltas the revert brought back would read as
    committed (metastore.md §7.3). So the request moves to history (Hive's ``markFailed`` step,
    message "reverted by acidctl revert: ...") before the output is removed (a crash in between
    leaves a history row and a standing compaction: nothing wrong is read), in the state
    :data:`acidctl.metastore.admin.REVERTED_STATE` (``a``), which no failure threshold counts — a
    revert never pushes the partition toward ``hive.compactor.initiator.failed.compacts.threshold``.
    Refused when the metastore may not be written (``--read-only``).
    """
    from acidctl.metastore.admin import record_reverted
    from acidctl.metastore.cleaner import ready_requests
    from acidctl.metastore.steps import check_writable

    plan = revert(tfs, partition=partition, output=output, execute=False)
    requests = ready_requests(ms, db, table)
    matched = {}
    for i in plan["items"]:
        r = _request_for(requests, i)
        if r is not None:
            matched[i["partition"]] = r
    if execute and matched:
        check_writable(
            ms, what="revert a compaction registered in the metastore (its request moves to history as reverted)"
        )
        for part, r in matched.items():
            outs = next(i["outputs"] for i in plan["items"] if i["partition"] == part)
            record_reverted(
                ms, r["id"], expect_state="r", message=f"reverted by acidctl revert: {', '.join(outs)} removed"
            )
    report = revert(tfs, partition=partition, output=output, execute=execute, break_lock=break_lock)
    for i in report["items"]:
        r = matched.get(i["partition"])
        i["metastore"] = (
            None
            if r is None
            else {
                "cq_id": r["id"],
                "state_before": "ready for cleaning",
                "action": "recorded as reverted" if execute else "would record as reverted",
            }
        )
    return report
