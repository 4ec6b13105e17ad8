"""``acidctl clean``: remove what Hive's Cleaner would (directory-state.md §7) plus acidctl's
own leftovers, never anything a reader of the current snapshot or the compactor needs.

Candidates, per partition:

* **obsolete** directories and original files: superseded by the current base or covered by a
  wider current delta, for the reader's snapshot; and — like Hive 3's Cleaner, which runs
  ``getAcidState`` with hwm = the compaction's highest write id and no exceptions — for the list
  ``hwm = H`` (H = the highest write id covered by a current base or compacted delta), which
  also makes **aborted** deltas that a compaction covered obsolete;
* Hive 4 rules (``--hive-version 4``): every aborted directory as well (Hive 4's Cleaner removes
  ``abortedDirectories``);
* ``.acidctl-staging-*`` directories of runs that died (not while a live compaction holds the
  lock); publications interrupted between two renames are finished first, not deleted;
* a stale ``.acidctl-compact.lock`` (its process is gone).

Guards: anything current for the reader's or the compactor's snapshot, or not yet visible (open
writes), is never a candidate; and a candidate is only deleted when it has been obsolete for at
least ``min_age`` seconds (the newer of its own mtime and the mtime of the directory that
covers it — Hive's retention), staging directories and locks by their own mtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from acidctl.acid.acidstate import Kind, Role, get_acid_state
from acidctl.acid.writeids import WriteIdList
from acidctl.compact import publish as pub
from acidctl.compact.lock import TableLock, all_locks
from acidctl.compact.coverage import not_compactor_readable
from acidctl.compact.planner import STAGING_PREFIX
from acidctl.compact.revert import REVERTING_PREFIX
from acidctl.errors import LockConflict, UsageError
from acidctl.fs import join_path


def _compacted_hwm(state) -> int | None:
    """H: the highest write id a current base or compacted (statement-less) delta covers."""
    hs = []
    if state.base is not None and state.base.parsed.write_id > 0:
        hs.append(state.base.parsed.write_id)
    for d in state.deltas:
        if d.statement_id is None and d.min_write_id != d.max_write_id:
            hs.append(d.max_write_id)
        elif d.statement_id is None and d.parsed.visibility:
            hs.append(d.max_write_id)
    return max(hs) if hs else None


def _cover(state, c):
    if (
        c.kind in (Kind.BASE, Kind.ORIGINAL_FILE, Kind.ORIGINAL_DIR)
        or state.base is not None
        and c.max_write_id is not None
        and state.base.parsed.write_id >= c.max_write_id
    ):
        if state.base is not None:
            return state.base
    for d in state.deltas:
        if c.min_write_id is not None and d.min_write_id <= c.min_write_id and d.max_write_id >= c.max_write_id:
            return d
    return state.base


def cleaner_decisions(
    lst,
    *,
    reader: WriteIdList,
    txns=None,
    hive_version: int = 3,
    min_age: float = 3600.0,
    now: float | None = None,
    insert_only=None,
    hold: dict | None = None,
    aborted_upto: dict | None = None,
    original_unreadable: Callable[[str], str | None] | None = None,
) -> dict:
    """What ``clean`` does with each directory of one partition listing — pure (no I/O), so that
    ``doctor`` and ``why`` judge with exactly the rules ``clean --execute`` acts on. Returns
    ``{"skipped": why or None, "items": [{"name", "kind", "reason", "age", "action", "role"}]}``
    with ``action`` ``delete`` or ``keep (...)``. The rules (directory-state.md §7.2,
    operations.md §5.1–§5.3):

    * obsolete for the reader's snapshot, or for the Cleaner list ``hwm = H`` (H = the highest
      write id a current base or compacted delta covers; no exceptions, so an aborted delta at
      or below H is obsolete: Hive 3's Cleaner removes aborted deltas only once a compaction
      output covers them);
    * Hive 4: every aborted directory (its Cleaner removes ``abortedDirectories``);
    * Hive 3: aborted directories up to a registered compaction's highest write id
      (``aborted_upto``) — never an uncovered aborted delta without one;
    * never anything current for the reader or the compactor; kept when younger than
      ``min_age``, when it holds files no compaction read, above a registered compaction's
      highest write id, or held back (``hold``).

    ``original_unreadable(name)``: why an original file (a plain file beside the ACID
    directories) is no ORC file a compaction could have read, or None — the one rule that needs
    the file's bytes, so the caller (clean, doctor, why) supplies the I/O; a stray file such as
    ``extra.csv`` is then kept."""
    now = time.time() if now is None else now
    compactor = reader.for_compactor()
    part = lst.partition
    rstate = get_acid_state(lst, reader, txns=txns, hive_version=hive_version)
    if rstate.not_enough_history or rstate.reader_errors:
        return {"skipped": str(rstate.not_enough_history or rstate.reader_errors[0]), "items": []}
    cstate = get_acid_state(lst, compactor, txns=txns, hive_version=hive_version)
    keep = set()
    for st in (rstate, cstate):
        for c in st.entries:
            if c.role.current or c.role in (Role.NOT_VISIBLE, Role.UNUSABLE, Role.INVALID):
                keep.add(c.name)
        for o in st.originals:
            keep.add(o.rel.split("/", 1)[0])
    cands: dict[str, tuple] = {}
    for c in rstate.obsolete:
        cands[c.name] = (c, f"obsolete: {c.reason}", _cover(rstate, c))
    h = _compacted_hwm(rstate)
    if h is not None:
        clstate = get_acid_state(lst, WriteIdList(table=reader.table, hwm=h), txns=txns, hive_version=hive_version)
        for c in clstate.obsolete:
            if c.name not in cands:
                orig = rstate.get(c.name)
                what = "aborted, covered" if orig.role is Role.ABORTED else "obsolete"
                cands[c.name] = (orig, f"{what}: {c.reason} (Cleaner list hwm {h})", _cover(clstate, c))
    if hive_version == 4:
        for c in rstate.aborted:
            cands.setdefault(c.name, (c, f"aborted: {c.reason}", None))
    elif aborted_upto and part in aborted_upto:
        for c in rstate.aborted:
            if c.max_write_id is not None and c.max_write_id <= aborted_upto[part]:
                cands.setdefault(
                    c.name,
                    (
                        c,
                        f"aborted: {c.reason} (up to the registered compaction's highest "
                        f"write id {aborted_upto[part]})",
                        None,
                    ),
                )
    items = []
    for name, (c, reason, cover) in sorted(cands.items()):
        if name in keep:
            continue
        mt = [x for x in (c.entry.mtime, cover.entry.mtime if cover is not None else None) if x is not None]
        age = now - max(mt) if mt else None
        kind = {
            Kind.BASE: "base",
            Kind.DELTA: "delta",
            Kind.DELETE_DELTA: "delete_delta",
            Kind.ORIGINAL_FILE: "original",
            Kind.ORIGINAL_DIR: "original",
        }.get(c.kind, c.kind.value)
        action = "keep (younger than --min-age)" if age is None or age < min_age else "delete"
        unread = _unreadable(c.kind, c.entry, insert_only)
        if unread:
            # no compaction by Hive's rules read these files: no output holds their rows
            action = "keep (holds files no compaction read)"
            reason += (
                "; kept: "
                + ", ".join(f.name for f in unread[:3])
                + (" ..." if len(unread) > 3 else "")
                + " would be lost (other engines read them)"
            )
        if action == "delete" and c.kind is Kind.ORIGINAL_FILE and insert_only is None and c.bytes:
            why = original_unreadable(name) if original_unreadable is not None else None
            if why is not None:
                # no compaction read it (compact refuses it or, with --skip-unreadable-files,
                # skips it): never deleted
                action = "keep (holds files no compaction read)"
                reason += f"; kept: {why}: no compaction read it (move it out of the table)"
        cap = aborted_upto.get(part) if aborted_upto else None
        if cap is not None and action == "delete" and (c.max_write_id or 0) > cap:
            action = "keep (above the highest write id)"
            reason += f"; kept: above the registered compaction's highest write id {cap}"
        if hold and part in hold and action == "delete":
            action = "keep (held back)"
            reason += f"; kept: {hold[part]}"
        items.append(
            {
                "name": name,
                "kind": kind,
                "reason": reason,
                "age": age,
                "action": action,
                "role": c.role.value,
                "_entry": c,
                "_cover": cover,
            }
        )
    return {"skipped": None, "items": items}


def clean_target(
    target,
    *,
    partitions: set[str] | None,
    min_age: float,
    execute: bool,
    trash,
    insert_only,
    quarantine: bool = False,
    use_min_history_write_id,
    notes: list[str],
) -> dict:
    """``acidctl clean`` on a resolved target (:func:`acidctl.target.resolve_target`):
    ``--quarantine-above-hwm`` (:func:`quarantine_above_hwm`, DB.TABLE with a metastore only),
    else the Cleaner with the table's metastore requests (:func:`clean_registered`) or on the
    directory alone (:func:`clean_table`); the report names the table and leads with ``notes``."""
    if quarantine:
        if target.table is None or target.metastore is None:
            raise UsageError(
                "--quarantine-above-hwm needs DB.TABLE and a metastore: the high-water mark is NEXT_WRITE_ID - 1"
            )
        report = quarantine_above_hwm(
            target.tfs,
            target.metastore,
            db=target.table.db,
            table=target.table.table,
            execute=execute,
            trash=trash,
            partitions=partitions,
        )
        report["table"] = target.table.full_name
        report["notes"] = notes + report["notes"]
        return report
    # what the Cleaner needs either way; a registered table adds its metastore requests
    common = dict(
        reader=target.write_ids,
        txns=target.txns,
        hive_version=target.hive_version,
        min_age=min_age,
        execute=execute,
        trash=trash,
        insert_only=insert_only,
        partitions=partitions,
    )
    if target.table is not None and target.metastore is not None:
        report = clean_registered(
            target.tfs,
            target.metastore,
            db=target.table.db,
            table=target.table.table,
            use_min_history_write_id=use_min_history_write_id,
            **common,
        )
    else:
        report = clean_table(target.tfs, **common)
    if target.table is not None:
        report["table"] = target.table.full_name
    report["notes"] = notes + report["notes"]
    return report


def plan_clean(
    tfs,
    *,
    reader: WriteIdList,
    txns=None,
    hive_version: int = 3,
    min_age: float = 3600.0,
    now: float | None = None,
    own_token: str | None = None,
    insert_only=None,
    partitions=None,
    hold: dict | None = None,
    aborted_upto: dict | None = None,
) -> dict:
    """``insert_only``: the table's :class:`acidctl.mm.context.MMContext` (plain data files: every
    non-hidden file of an MM base/delta is compactor-readable, covers are checked in their format).
    ``partitions``: only these (partition names; ``None`` = all). ``hold``: ``{partition:
    reason}`` — obsolete data there is kept (a registered compaction's Cleaner is held back).
    ``aborted_upto``: ``{partition: highest write id}`` of a registered compaction about to be
    finished — its aborted directories up to that write id are candidates too (Hive 3 rules
    included): ``markCleaned`` forgets those aborted txns, after which a leftover aborted delta
    would read as committed; and, as Hive's Cleaner caps its list at that write id, nothing
    above it is deleted there (a newer compaction may have made it obsolete after the Cleaner
    checked for readers: "keep (above the highest write id)").

    The stages: acidctl's locks (:func:`_lock_items`), then per partition the interrupted
    publications (:func:`_interrupted_items`), the Cleaner's decisions (:func:`_decided_items`)
    and acidctl's leftovers (:func:`_leftover_items`)."""
    from acidctl.acid.layout import list_table

    now = time.time() if now is None else now
    items, notes, live_lock = _lock_items(tfs, own_token, min_age)
    skipped: list = []
    for lst in list_table(tfs):
        if partitions is not None and lst.partition not in partitions:
            continue
        part_path = lst.fs_path or lst.path
        items.extend(_interrupted_items(tfs, lst, part_path))
        decided = cleaner_decisions(
            lst,
            reader=reader,
            txns=txns,
            hive_version=hive_version,
            min_age=min_age,
            now=now,
            insert_only=insert_only,
            hold=hold,
            aborted_upto=aborted_upto,
            original_unreadable=original_check(tfs, part_path),
        )
        if decided["skipped"]:
            notes.append(f"{lst.path}: skipped, the snapshot is unreadable ({decided['skipped']})")
            skipped.append(lst.partition)
            continue
        items.extend(_decided_items(tfs, lst, part_path, decided["items"], min_age, insert_only))
        items.extend(_leftover_items(tfs, lst, part_path, live_lock=live_lock, now=now, min_age=min_age))
    return {
        "path": tfs.display(tfs.root),
        "hive_version": hive_version,
        "write_ids": str(reader),
        "min_age_seconds": min_age,
        "items": items,
        "notes": notes,
        "executed": False,
        "skipped_partitions": skipped,
        "summary": _summary(items),
    }


def _lock_items(tfs, own_token: str | None, min_age: float) -> tuple[list[dict], list[str], bool]:
    """acidctl's locks (the table's and each partition's), our own (clean --execute) excluded: a
    stale one is an item, a live one a note (its staging directories are kept); and whether one
    is live."""
    items: list[dict] = []
    notes: list[str] = []
    locks = [lk for lk in all_locks(tfs) if own_token is None or lk.token != own_token]
    live_lock = any(not lk.stale for lk in locks)
    for lock in locks:
        if lock.stale:
            items.append(
                _item(
                    None,
                    lock.path,
                    "stale-lock",
                    f"stale compaction lock ({lock.describe()}, process gone)",
                    lock.age_seconds,
                    0,
                    min_age,
                    age_guard=False,
                )
            )
        else:
            notes.append(f"a compaction holds the lock ({lock.describe()}): its staging directories are kept")
    return items, notes, live_lock


def _interrupted_items(tfs, lst, part_path: str) -> list[dict]:
    """The staged outputs of an interrupted publication: completed, never deleted."""
    items = []
    for it in pub.interrupted(tfs, part_path):
        if it["partial"]:
            for n in it["staged"]:
                items.append(
                    {
                        "partition": lst.partition,
                        "path": tfs.display(join_path(part_path, n)),
                        "kind": "interrupted-publish",
                        "action": "complete",
                        "reason": f"publication of {', '.join(it['outputs'])} was interrupted; "
                        f"finish it from {it['display']}",
                        "age_seconds": None,
                        "bytes": 0,
                        "fs_path": join_path(part_path, n),
                    }
                )
    return items


def _decided_items(tfs, lst, part_path: str, decided: list[dict], min_age: float, insert_only) -> list[dict]:
    """:func:`cleaner_decisions`' items as the plan's, each with what to verify before deleting."""
    items = []
    for d in decided:
        c, cover = d.pop("_entry"), d.pop("_cover")
        it = _item(
            lst.partition,
            tfs.display(join_path(part_path, d["name"])),
            d["kind"],
            d["reason"],
            d["age"],
            c.bytes,
            min_age,
            fs_path=join_path(part_path, d["name"]),
            is_dir=c.entry.is_dir,
        )
        it["action"] = d["action"]
        it["_verify"] = (c.kind, c.entry, cover, insert_only)
        items.append(it)
    return items


def _leftover_items(tfs, lst, part_path: str, *, live_lock: bool, now: float, min_age: float) -> list[dict]:
    """A revert's hidden output and compactions' staging directories, while no compaction holds
    a lock; a partial publication's staging is completed (:func:`_interrupted_items`), never
    deleted."""
    items = []
    for e in tfs.ls(part_path):
        if e.name.startswith(REVERTING_PREFIX) and not live_lock:
            items.append(
                _item(
                    lst.partition,
                    tfs.display(e.path),
                    "revert-leftover",
                    "output of a revert that died after hiding it (readers ignore it)",
                    None,
                    _du(tfs, e.path),
                    min_age,
                    fs_path=e.path,
                    is_dir=True,
                    age_guard=False,
                )
            )
            continue
        if not e.name.startswith(STAGING_PREFIX):
            continue
        m = pub.read_manifest(tfs, e.path)
        if (
            m
            and m.get("state") == "publishing"
            and any(tfs.exists(join_path(part_path, n)) for n in m.get("outputs", []))
            and any(tfs.exists(join_path(e.path, n)) for n in m.get("outputs", []))
        ):
            continue  # partial publication: completed above, never deleted
        if live_lock:
            continue
        age = now - e.mtime if e.mtime is not None else None
        items.append(
            _item(
                lst.partition,
                tfs.display(e.path),
                "staging",
                "acidctl staging directory left by a compaction that did not finish",
                age,
                _du(tfs, e.path),
                min_age,
                fs_path=e.path,
                is_dir=True,
            )
        )
    return items


def _item(partition, path, kind, reason, age, size, min_age, *, fs_path=None, is_dir=False, age_guard=True) -> dict:
    young = age_guard and (age is None or age < min_age)
    return {
        "partition": partition,
        "path": path,
        "kind": kind,
        "reason": reason,
        "age_seconds": None if age is None else round(age, 1),
        "bytes": size,
        "action": "keep (younger than --min-age)" if young else "delete",
        "fs_path": fs_path if fs_path is not None else path,
        "is_dir": is_dir,
    }


def _du(tfs, path: str) -> int:
    try:
        return int(tfs.fs.du(path))
    except Exception:
        return 0


_DATA_KINDS = ("base", "delta", "delete_delta", "original")


def _summary(items) -> dict:
    by_kind: dict[str, int] = {}
    for i in items:
        if i["action"] in ("delete", "move to trash"):
            by_kind[i["kind"]] = by_kind.get(i["kind"], 0) + (i["bytes"] or 0)
    return {
        "candidates": len(items),
        "delete": sum(1 for i in items if i["action"] == "delete"),
        "trash": sum(1 for i in items if i["action"] == "move to trash"),
        "bytes_by_kind": by_kind,
        "complete": sum(1 for i in items if i["action"] == "complete"),
        "kept_young": sum(1 for i in items if i["action"] == "keep (younger than --min-age)"),
        "kept_unsafe": sum(1 for i in items if i["action"].startswith("keep") and "younger" not in i["action"]),
        "bytes": sum(i["bytes"] or 0 for i in items if i["action"] in ("delete", "move to trash")),
    }


HDFS_TRASH = "hdfs"


def trash_root(tfs, trash: str) -> str:
    """Where ``--trash`` moves things, as a path on the table's filesystem. ``hdfs`` is Hadoop's
    trash convention (what ``hadoop fs -rm`` does with trash enabled): ``/user/<user>/.Trash/
    Current`` of the user the filesystem acts as (``user`` fs option, ``HADOOP_USER_NAME``, or
    the login name). A URL of another filesystem is refused: moving must be a rename."""
    import getpass
    import os

    if trash == HDFS_TRASH:
        if tfs.protocol not in ("webhdfs", "hdfs"):
            raise UsageError("--trash hdfs needs an HDFS table (hdfs:// or webhdfs://); give a directory instead")
        user = tfs.options.get("user") or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
        return f"/user/{user}/.Trash/Current"
    if "://" in trash:
        from fsspec.utils import get_protocol

        proto = get_protocol(trash)
        if proto not in (tfs.protocol, "file" if tfs.protocol == "local" else tfs.protocol):
            raise UsageError(
                f"--trash {trash} is on another filesystem than the table ({tfs.protocol}): "
                "moving there would be a copy, not a rename"
            )
        trash = tfs.fs._strip_protocol(trash)
    elif tfs.protocol in ("file", "local"):
        trash = os.path.abspath(trash)
    return trash.rstrip("/") or "/"


def _trash_target(tfs, root: str, path: str) -> str:
    """``root`` + the item's absolute path (Hadoop's layout), never overwriting: a suffix is added
    when the target exists (Hadoop appends the time; a counter is enough here)."""
    rel = path.split("://", 1)[-1].lstrip("/")
    if tfs.protocol not in ("file", "local", "webhdfs", "hdfs") and "/" in rel:
        rel = rel  # bucket/key: keep the bucket as the first component
    target = f"{root}/{rel}"
    n, cand = 0, target
    while tfs.exists(cand):
        n += 1
        cand = f"{target}.{n}"
    return cand


def clean_table(
    tfs,
    *,
    reader: WriteIdList,
    txns=None,
    hive_version: int = 3,
    min_age: float = 3600.0,
    execute: bool = False,
    now: float | None = None,
    trash: str | None = None,
    insert_only=None,
    partitions=None,
    hold: dict | None = None,
    aborted_upto: dict | None = None,
) -> dict:
    """Plan (dry run) or execute the clean. Executing takes the compaction lock. With ``trash``,
    obsolete directories and files are moved under that root (see :func:`trash_root`) instead
    of deleted; acidctl's own leftovers (staging, locks) are deleted. ``partitions`` and
    ``hold``: see :func:`plan_clean`."""
    troot = trash_root(tfs, trash) if trash else None
    scope = {"partitions": partitions, "hold": hold, "aborted_upto": aborted_upto, "insert_only": insert_only}
    if not execute:
        report = plan_clean(tfs, reader=reader, txns=txns, hive_version=hive_version, min_age=min_age, now=now, **scope)
        report["trash"] = tfs.display(troot) if troot else None
        if troot:
            for i in report["items"]:
                if i["action"] == "delete" and i["kind"] in _DATA_KINDS:
                    i["action"] = "move to trash"
            report["summary"] = _summary(report["items"])
        for i in report["items"]:
            i.pop("fs_path", None)
            i.pop("_verify", None)
        return report
    for info in all_locks(tfs):
        if not info.stale:
            raise LockConflict(
                f"a compaction is running ({info.scope}, {info.describe()}): not cleaning {tfs.display(tfs.root)}",
                hint="wait for it to finish",
            )
    lock = TableLock(tfs, command="clean", break_stale=True)  # stale locks (of any scope) go
    with lock:
        report = plan_clean(
            tfs,
            reader=reader,
            txns=txns,
            hive_version=hive_version,
            min_age=min_age,
            now=now,
            own_token=lock.token,
            **scope,
        )
        for broken in reversed(lock.broken_all):  # the stale locks we replaced: report them as removed
            report["items"].insert(
                0,
                _item(
                    None,
                    broken.path,
                    "stale-lock",
                    f"stale compaction lock ({broken.describe()}, process gone)",
                    broken.age_seconds,
                    0,
                    min_age,
                    age_guard=False,
                ),
            )
        if lock.broken_all:
            report["summary"] = _summary(report["items"])
        deleted, completed, trashed = [], [], []
        from acidctl.acid.layout import list_table

        for lst in list_table(tfs):
            if partitions is not None and lst.partition not in partitions:
                continue
            for a in pub.recover(tfs, lst.fs_path or lst.path, execute=True):
                completed.append(a["path"])
        for it in report["items"]:
            if it["action"] != "delete":
                continue
            if it["kind"] == "stale-lock":
                deleted.append(it["path"])  # replaced by our own lock, released below
                continue
            p = it["fs_path"]
            if it["kind"] == "staging" and STAGING_PREFIX not in p.rsplit("/", 1)[-1]:
                continue
            if it["kind"] == "revert-leftover" and REVERTING_PREFIX not in p.rsplit("/", 1)[-1]:
                continue
            problem = _reverify(tfs, it)
            if problem:
                it["action"] = "keep (re-verification failed)"
                it["reason"] += f"; kept: {problem}"
                report["notes"].append(f"kept {it['path']}: {problem}")
                continue
            if troot and it["kind"] in _DATA_KINDS:
                if tfs.exists(p):
                    dest = _trash_target(tfs, troot, p)
                    tfs.makedirs(dest.rsplit("/", 1)[0])
                    tfs.rename(p, dest)
                    it["action"] = "move to trash"
                    it["trashed_to"] = tfs.display(dest)
                    trashed.append(it["path"])
                continue
            if tfs.exists(p):
                tfs.rm(p, recursive=it["is_dir"])
            deleted.append(it["path"])
        report["executed"] = True
        report["trash"] = tfs.display(troot) if troot else None
        report["trashed"] = trashed
        report["records_pruned"] = _prune_records(tfs)
        report["summary"] = _summary(report["items"])
        report["deleted"] = deleted
        report["completed"] = completed
        if lock.broken is not None:
            report["notes"].append(f"removed the stale lock of {lock.broken.describe()}")
    for i in report["items"]:
        i.pop("fs_path", None)
        i.pop("_verify", None)
    return report


def _prune_records(tfs) -> list[str]:
    """Remove publication records whose output is gone (nothing left to revert), and the records
    directory once empty. A record whose input was cleaned stays while its output does:
    ``acidctl revert`` then says that an input was cleaned, not that nothing was published."""
    from acidctl.acid.layout import list_table

    pruned = []
    for lst in list_table(tfs):
        part = lst.fs_path or lst.path
        names = {e.name for e in lst.entries}
        records = pub.read_records(tfs, part)
        for rec in records:
            if all(o in names for o in rec.get("outputs", [])):
                continue
            try:
                tfs.rm(rec["record_path"])
                pruned.append(tfs.display(rec["record_path"]))
            except Exception:
                pass
        pub.remove_empty_records_dir(tfs, part)
    return pruned


def _reverify(tfs, item: dict) -> str | None:
    """At execution time, before deleting an obsolete directory or original file: it must hold no
    file that no compaction reads (listed again now), and the output covering it must exist and
    be readable (every data file's footer, its ACID key index with one entry per stripe, and
    ``hive.acid.stats`` equal to its row count). Returns why not, or None."""
    from acidctl.acid.layout import list_partition
    from acidctl.compact.coverage import reader_files

    v = item.get("_verify")
    if v is None:
        return None
    kind, entry, cover, mm = v
    part_path, name = item["fs_path"].rsplit("/", 1)
    now = {e.name: e for e in list_partition(tfs, part_path, partition=item["partition"]).entries}
    if name not in now:
        return None  # already gone
    unread = _unreadable(kind, now[name], mm)
    if unread:
        return f"{name}/{unread[0].name} is not read by any compaction"
    if cover is None:
        return None  # Hive 4 aborted directories: no cover needed, nothing valid in them
    if cover.name not in now:
        return f"the output covering it, {cover.name}, no longer exists"
    rows_in_cover = 0
    for f in reader_files(now[cover.name]):
        if f.size == 0:
            continue
        problem = _readable(tfs, join_path(part_path, cover.name, f.name), mm)
        if isinstance(problem, str):
            return f"the covering output {cover.name}/{f.name} is not readable: {problem}"
        rows_in_cover += problem
    data = [f for f in reader_files(now[name]) if f.size > 0]
    if data and rows_in_cover == 0 and cover.kind is Kind.BASE and not _all_rows_gone(tfs, part_path, name, data, mm):
        return f"the covering output {cover.name} holds no rows while {name} holds data"
    return None


def _unreadable(kind, entry, mm) -> list:
    if mm is not None:  # insert-only table (acidctl.mm.coverage)
        from acidctl.mm.coverage import not_mm_readable

        return not_mm_readable(kind, entry, allow_originals=mm.allow_originals)
    return not_compactor_readable(kind, entry)


def original_check(tfs, part_path: str) -> Callable[[str], str | None]:
    """``cleaner_decisions``' ``original_unreadable`` for one partition directory."""

    def why(name: str) -> str | None:
        got = _readable(tfs, join_path(part_path, name))
        return got if isinstance(got, str) else None

    return why


def _readable(tfs, path: str, mm=None) -> int | str:
    """Row count of a readable ORC data file, or why it is not readable."""
    if mm is not None:  # insert-only table: a plain file in the table's format
        from acidctl.mm.coverage import row_count

        return row_count(tfs, path, mm.storage)
    from acidctl.errors import AcidctlError
    from acidctl.orc.acidfile import parse_acid_stats, parse_key_index
    from acidctl.orc.reader import OrcFile

    try:
        with OrcFile(tfs, path) as f:
            rows, stripes, meta = f.rows, f.num_stripes(), f.user_metadata
            if f.is_acid:
                idx = meta.get("hive.acid.key.index")
                if idx is None:
                    return "no hive.acid.key.index"
                n = len(parse_key_index(idx.decode()))
                # Hive 2.3 files (no hive.acid.version) never record the last stripe's key
                # (insert-only-and-hive2.md B.5.2): that is their convention, not damage
                if n != stripes and not (n == stripes - 1 and "hive.acid.version" not in meta):
                    return "hive.acid.key.index does not have one entry per stripe"
                st = meta.get("hive.acid.stats")
                if st is not None and sum(parse_acid_stats(st.decode()).values()) != rows:
                    return "hive.acid.stats does not match the row count"
            return rows
    except (AcidctlError, ValueError, OSError) as e:
        return str(e)


def _all_rows_gone(tfs, part_path: str, name: str, data, mm=None) -> bool:
    """An empty base may legitimately cover data whose rows were all deleted or aborted; without
    the snapshot at hand, accept it only when the covered files hold no rows at all."""
    total = 0
    for f in data:
        r = _readable(tfs, join_path(part_path, name, f.name), mm)
        if isinstance(r, str):
            return False
        total += r
    return total == 0


# ---------------------------------------------------------------------------------------
# registered compactions: Hive's Cleaner, queue side (metastore.md §9.3, operations.md §5)
# ---------------------------------------------------------------------------------------


def _blocked_reason(waits: list[dict]) -> str:
    return "; ".join(w["message"] for w in waits)


def clean_registered(
    tfs,
    ms,
    *,
    db: str,
    table: str,
    reader: WriteIdList,
    txns=None,
    hive_version: int = 3,
    min_age: float = 3600.0,
    execute: bool = False,
    trash: str | None = None,
    partitions=None,
    retention_ms: int = 0,
    use_min_history_write_id: bool = False,
    now: float | None = None,
    insert_only=None,
) -> dict:
    """``clean`` of a table with a metastore: the directories as :func:`clean_table`, and every
    ``ready for cleaning`` request of the table finished the way Hive's Cleaner finishes it.

    Per request, :func:`acidctl.metastore.cleaner.cleaner_waits` says whether Hive's Cleaner
    would clean it now; a partition with a held-back request keeps its obsolete data (the
    report names the txn or lock). With ``execute``: Hive 4 ``markCleanerStart`` on the ready
    requests, the directories are deleted, and a request whose partition has nothing obsolete
    left is finished with ``markCleaned`` (history ``succeeded``), lowest highest write id first,
    with the removal of the aborted txns it emptied; a request whose partition still
    holds obsolete data (kept by ``--min-age`` or for safety) stays ``ready for cleaning``
    (Hive 4: ``CQ_CLEANER_START = -1``), as Hive 4's Cleaner leaves it after its verify step.

    Metastore writes not allowed (``--read-only``, or a schema acidctl does not write): the
    directories are still cleaned — deleting what no reader can need is safe without the queue
    update, which Hive's own Cleaner (or a later ``clean``) makes: it finds nothing obsolete and
    marks the request cleaned — and the requests are reported as left ``ready for cleaning``.
    """
    import contextlib

    from acidctl.errors import RefusedError
    from acidctl.metastore import cleaner
    from acidctl.metastore.steps import check_writable

    writable, why_not = True, None
    try:
        check_writable(ms, what="finish compaction requests (markCleaned)")
    except RefusedError as e:
        writable, why_not = False, str(e)
    # like Hive's Cleaner, find and finish the requests under the metastore's Cleaner mutex
    with cleaner.cleaner_mutex(ms) if execute and writable else contextlib.nullcontext():
        return _clean_registered(
            tfs,
            ms,
            db=db,
            table=table,
            reader=reader,
            txns=txns,
            hive_version=hive_version,
            min_age=min_age,
            execute=execute,
            trash=trash,
            partitions=partitions,
            retention_ms=retention_ms,
            use_min_history_write_id=use_min_history_write_id,
            now=now,
            writable=writable,
            why_not=why_not,
            insert_only=insert_only,
        )


def _clean_registered(
    tfs,
    ms,
    *,
    db,
    table,
    reader,
    txns,
    hive_version,
    min_age,
    execute,
    trash,
    partitions,
    retention_ms,
    use_min_history_write_id,
    now,
    writable,
    why_not,
    insert_only=None,
) -> dict:
    from acidctl.metastore import cleaner

    requests = cleaner.ready_requests(ms, db, table, partitions=list(partitions) if partitions is not None else None)
    waits = cleaner.cleaner_waits(
        ms, requests, retention_ms=retention_ms, use_min_history_write_id=use_min_history_write_id
    )
    hold: dict = {}
    for r in requests:
        if waits[r["id"]] and r["partition"] not in hold:
            hold[r["partition"]] = f"compaction {r['id']} is held back: {_blocked_reason(waits[r['id']])}"
    ready = [r for r in requests if not waits[r["id"]]]
    started = []
    if execute and writable:
        for r in ready:
            if cleaner.mark_cleaner_start(ms, r["id"]):
                started.append(r["id"])
    try:
        upto: dict = {}
        for r in ready:
            if r["partition"] not in hold:
                upto[r["partition"]] = max(upto.get(r["partition"], 0), r.get("highest_write_id") or 0)
        report = clean_table(
            tfs,
            reader=reader,
            txns=txns,
            hive_version=hive_version,
            min_age=min_age,
            execute=execute,
            now=now,
            trash=trash,
            partitions=partitions,
            hold=hold,
            aborted_upto=upto,
            insert_only=insert_only,
        )
    except BaseException:
        for cq_id in started:  # as Hive 4's Cleaner after a failed attempt: not being cleaned
            try:
                cleaner.clear_cleaner_start(ms, cq_id)
            except Exception:
                pass
        raise
    left: dict = {}
    for i in report["items"]:
        if i["kind"] in _DATA_KINDS and i["action"].startswith("keep") and "above the highest" not in i["action"]:
            left.setdefault(i["partition"], []).append(i["path"].rsplit("/", 1)[-1])
    entries, emptied = [], []
    for r in requests:
        e, gone = _request_outcome(
            ms, r, waits[r["id"]], report, left, started, execute=execute, writable=writable, why_not=why_not
        )
        entries.append(e)
        emptied += gone
    report["compactions"] = entries
    report["metastore_writes"] = writable
    if not writable and requests:
        report["notes"].append(
            f"metastore not updated ({why_not}); Hive's Cleaner or a later clean finishes the requests"
        )
    if execute and writable:
        report["aborted_txns_removed"] = sorted(set(emptied))
    return report


def _request_outcome(
    ms, r: dict, wait: list, report: dict, left: dict, started: list, *, execute: bool, writable: bool, why_not
) -> tuple[dict, list[int]]:
    """A ready-for-cleaning request after the clean: held back, staying ready (a skipped
    partition, obsolete data kept, or no metastore writes), or marked cleaned (``markCleaned``);
    its entry and the aborted txns that left TXNS with it."""
    from acidctl.errors import NotFoundError
    from acidctl.metastore import cleaner

    e = {
        "cq_id": r["id"],
        "partition": r["partition"],
        "type": {"a": "MAJOR", "i": "MINOR"}.get(r["type"], r["type"]),
        "highest_write_id": r.get("highest_write_id"),
        "txn_id": r.get("txn_id"),
        "next_txn_id": r.get("next_txn_id"),
        "held_by": wait,
        "state": "ready for cleaning",
    }
    if wait:
        e["action"] = "held back"
        e["reason"] = _blocked_reason(wait)
    elif r["partition"] in report.get("skipped_partitions", []):
        e["action"] = "stays ready for cleaning"
        e["reason"] = "the partition was skipped (its snapshot is unreadable): nothing was verified clean"
        if execute and writable and r["id"] in started:
            cleaner.clear_cleaner_start(ms, r["id"])
    elif left.get(r["partition"]):
        e["action"] = "stays ready for cleaning"
        e["reason"] = (
            "obsolete data kept in the partition: "
            + ", ".join(left[r["partition"]][:5])
            + (" ..." if len(left[r["partition"]]) > 5 else "")
        )
        if execute and writable and r["id"] in started:
            cleaner.clear_cleaner_start(ms, r["id"])
    elif not writable:
        e["action"] = "stays ready for cleaning"
        e["reason"] = (
            f"directories {'cleaned' if execute else 'cleaned with --execute'}, but the queue is not updated: {why_not}"
        )
    else:
        e["action"] = "mark cleaned" if not execute else "marked cleaned"
        e["reason"] = "nothing obsolete left; no reader can need the old directories"
        if execute:
            try:
                res = cleaner.mark_cleaned(ms, r["id"])
            except NotFoundError:
                # another Cleaner (Hive's own) finished it meanwhile: nothing left to do
                e["action"], e["state"] = "already finished", None
                e["reason"] = "the request left the queue meanwhile (another Cleaner finished it)"
                return e, []
            e["state"] = "succeeded"
            e["mark_cleaned"] = res
            return e, list(res["aborted_txns_removed"])
    return e, []


# ---------------------------------------------------------------------------------------
# directories above the table's write-id high-water mark: moved aside, with a record
# ---------------------------------------------------------------------------------------

#: where ``clean --quarantine-above-hwm`` moves directories when no ``--trash`` is given: a hidden
#: directory of the table (readers, the Initiator and the Cleaner never look at hidden paths)
QUARANTINE_DIR = ".acidctl-quarantine"
QUARANTINE_RECORD_SUFFIX = ".acidctl-quarantine.json"


def table_high_water_mark(ms, db: str, table: str) -> int:
    """``NEXT_WRITE_ID - 1`` of the table, read now (0 when no write id was ever allocated)."""
    import sqlalchemy as sa

    nwi = ms.tables.NEXT_WRITE_ID
    with ms.read() as conn:
        nxt = conn.execute(sa.select(nwi.NWI_NEXT).where(nwi.NWI_DATABASE == db, nwi.NWI_TABLE == table)).scalar()
    return int(nxt) - 1 if nxt is not None else 0


def above_hwm_decisions(lst, hwm: int) -> list[dict]:
    """Pure: the ACID directories of one partition listing that name write ids above ``hwm``
    (the table's NEXT_WRITE_ID - 1). No write id above it was ever allocated, so no reader sees
    them and no txn can own them: ``move`` when the whole range is above the hwm; ``keep`` (a
    person decides) when the range straddles it — it may hold rows of allocated write ids."""
    from acidctl.acid.dirname import parse_acid_dir

    out = []
    for e in lst.entries:
        d = parse_acid_dir(e.name)
        if d is None or not (hwm < d.max_write_id < 2**62):
            continue
        if d.min_write_id > hwm:
            out.append(
                {"name": e.name, "action": "move", "min_write_id": d.min_write_id, "max_write_id": d.max_write_id}
            )
        else:
            out.append(
                {
                    "name": e.name,
                    "action": "keep (straddles the high-water mark)",
                    "min_write_id": d.min_write_id,
                    "max_write_id": d.max_write_id,
                }
            )
    return out


def quarantine_above_hwm(
    tfs, ms, *, db: str, table: str, execute: bool = False, trash: str | None = None, partitions=None
) -> dict:
    """``clean DB.TABLE --quarantine-above-hwm``: move every directory whose write ids are all
    above the table's high-water mark (doctor's WRITE_ID_ABOVE_HWM) out of the table — under
    ``trash`` (:func:`trash_root`) or the table's hidden ``.acidctl-quarantine/<time>/`` — with a
    JSON record beside each one (source path, table, partition, high-water mark, time, user).
    Refuses nothing silently: a straddling directory is kept and reported. With ``execute`` it
    works under the table lock and re-reads NEXT_WRITE_ID right before each move: a directory
    whose write id was allocated meanwhile stays."""
    import datetime
    import getpass
    import json

    from acidctl.acid.layout import list_table

    hwm = table_high_water_mark(ms, db, table)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    troot = trash_root(tfs, trash) if trash else join_path(tfs.root, QUARANTINE_DIR, stamp)
    items = []

    def plan() -> list[tuple]:
        found = []
        for lst in list_table(tfs):
            if partitions is not None and lst.partition not in partitions:
                continue
            part_path = lst.fs_path or lst.path
            for d in above_hwm_decisions(lst, hwm):
                found.append((lst.partition, part_path, d))
        return found

    def item(part, part_path, d, action) -> dict:
        if d["min_write_id"] > hwm:
            why = (
                f"write ids {d['min_write_id']}..{d['max_write_id']} above the table's high-water mark {hwm} "
                "(NEXT_WRITE_ID - 1): never allocated, invisible to readers"
            )
        else:
            why = (
                f"write ids {d['min_write_id']}..{d['max_write_id']} span the table's high-water mark {hwm}: the ids "
                f"up to {hwm} were allocated and may hold committed rows, so only a person can decide what to keep"
            )
        return {
            "partition": part,
            "path": tfs.display(join_path(part_path, d["name"])),
            "kind": "above-hwm",
            "reason": why,
            "age_seconds": None,
            "bytes": 0,
            "action": action,
            "is_dir": True,
        }

    if not execute:
        for part, part_path, d in plan():
            items.append(item(part, part_path, d, "would quarantine" if d["action"] == "move" else d["action"]))
        return _quarantine_report(tfs, hwm, troot, items, executed=False)
    for info in all_locks(tfs):  # the table's and every partition's
        if not info.stale:
            raise LockConflict(
                f"a compaction is running ({info.scope}, {info.describe()}): not moving anything in {tfs.display(tfs.root)}",
                hint="wait for it to finish",
            )
    with TableLock(tfs, command="clean", break_stale=True):
        for part, part_path, d in plan():
            if d["action"] != "move":
                items.append(item(part, part_path, d, d["action"]))
                continue
            now_hwm = table_high_water_mark(ms, db, table)
            if d["min_write_id"] <= now_hwm:
                it = item(part, part_path, d, "keep (write id allocated meanwhile)")
                it["reason"] += f"; the high-water mark is now {now_hwm}"
                items.append(it)
                continue
            src = join_path(part_path, d["name"])
            if trash:
                dest = _trash_target(tfs, troot, src)
            else:
                dest = join_path(troot, *(part.split("/") if part else []), d["name"])
            tfs.makedirs(dest.rsplit("/", 1)[0])
            tfs.rename(src, dest)
            record = {
                "source": tfs.display(src),
                "table": f"{db}.{table}",
                "partition": part,
                "high_water_mark": now_hwm,
                "min_write_id": d["min_write_id"],
                "max_write_id": d["max_write_id"],
                "moved_at": stamp,
                "user": getpass.getuser(),
                "restore": f"move {tfs.display(dest)} back to {tfs.display(src)} once write id "
                f"{d['max_write_id']} is allocated and committed (or delete it)",
            }
            tfs.write_bytes(dest + QUARANTINE_RECORD_SUFFIX, json.dumps(record, indent=1).encode())
            it = item(part, part_path, d, "quarantined")
            it["trashed_to"] = tfs.display(dest)
            items.append(it)
    return _quarantine_report(tfs, hwm, troot, items, executed=True)


def _quarantine_report(tfs, hwm: int, troot: str, items: list[dict], *, executed: bool) -> dict:
    moved = [i for i in items if i["action"] == "quarantined"]
    return {
        "path": tfs.display(tfs.root),
        "hive_version": None,
        "write_ids": f"high-water mark {hwm}",
        "min_age_seconds": 0,
        "items": items,
        "notes": [],
        "executed": executed,
        "quarantine": tfs.display(troot),
        "quarantined": [i["path"] for i in moved],
        "summary": {
            "candidates": len(items),
            "delete": 0,
            "trash": len(moved) if executed else sum(1 for i in items if i["action"] == "would quarantine"),
            "bytes_by_kind": {},
            "complete": 0,
            "kept_young": 0,
            "kept_unsafe": sum(1 for i in items if i["action"].startswith("keep")),
            "bytes": 0,
        },
    }
