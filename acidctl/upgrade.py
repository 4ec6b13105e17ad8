"""``acidctl upgrade-check``: is every ACID table of a Hive 2 metastore ready for Hive 3?

(../shared/spec/insert-only-and-hive2.md C.) ACID v1 tables must be fully compacted before the
upgrade ("if tables are not compacted, data loss is highly likely"): Hive 3 reads a Hive 2
legacy table as split-update and ignores its update/delete events (C.4). For every table whose
``transactional`` parameter is ``true`` (ignoring case) and every partition:

* the **compactor** snapshot of the moment (B.2: hwm = lowest open txn − 1, aborted txns as
  exceptions) and Hive 2.3's ``getAcidState`` decide what is current;
* ``ready`` = no current delta or delete delta (only a base and/or original files) and no delta
  of an open txn waiting; ``compact`` = current deltas left — the partition gets
  ``ALTER TABLE ... COMPACT 'major';``; ``blocked`` = deltas of open txns (above the compactor's
  high-water mark: no compaction may fold them — let the txns finish first);
* ``preupgrade_tool`` says whether Hive's PreUpgradeTool would flag it too (C.2 step 4: a file
  ``bucket_*`` of a current delta, visited in listing order until a ``*_flush_length`` file,
  whose ``hive.acid.stats`` counts updates or deletes) — acidctl also recounts the operations
  from the rows when the stats disagree (Hive 2.3's split-update stats are wrong, B.5.2) and
  reports missing stats as an error finding instead of aborting;
* findings (C.5): ``transactional`` not stored exactly as ``true`` (the schema upgrade gives such
  a table no NEXT_WRITE_ID row, C.3), ``transactional_properties=legacy`` (Hive 3 refuses the
  value), ``delete_delta`` directories in a legacy table, ``_copy_N`` originals and several
  originals of one bucket next to deltas (Hive 2 and 3 number their rows differently), open txns
  writing the table, compactions still queued; obsolete directories the Cleaner has not removed
  yet (harmless for Hive 3, listed for the record).

:func:`execute` runs every needed major compaction on Spark in **one** application (the
existing runner with Hive 2.3 output, :mod:`acidctl.compact.hive2`), registered in the 2.3
metastore with Hive 2.3's Worker protocol, cleans them as 2.3's Cleaner does, and checks again:
the report it returns is the sign-off (every partition ``ready``, only a base left in each
compacted one) or says exactly what is not.
"""

from __future__ import annotations

import dataclasses
import shlex
import datetime as _dt
import time
from urllib.parse import unquote

from acidctl.acid.dirname import OriginalFile
from acidctl.acid.hive2 import LEGACY, Hive2TxnList
from acidctl.units import noun, plural

READY, COMPACT, BLOCKED, ERROR = "ready", "compact", "blocked", "error"


@dataclasses.dataclass
class PartitionCheck:
    table: str
    partition: str | None
    path: str
    mode: str  # legacy | split-update
    status: str = READY
    reasons: list[str] = dataclasses.field(default_factory=list)
    preupgrade_tool: bool = False  # PreUpgradeTool would flag it
    current: list[str] = dataclasses.field(default_factory=list)  # base + current deltas
    blocked_by: list[str] = dataclasses.field(default_factory=list)  # deltas of open txns
    leftover: list[str] = dataclasses.field(default_factory=list)  # obsolete/aborted, for the Cleaner
    files: list[dict] = dataclasses.field(default_factory=list)  # files with update/delete events
    findings: list[dict] = dataclasses.field(default_factory=list)
    bytes: int = 0
    command: str | None = None
    uncovered_aborted: bool = False  # a leftover is an aborted delta no compaction covers yet

    @property
    def spec(self) -> str:
        """``DB.TABLE[/PART]``: the argument of a table command for this partition."""
        return self.table + (f"/{self.partition}" if self.partition else "")

    def finding(self, severity: str, check: str, message: str) -> None:
        self.findings.append({"severity": severity, "check": check, "message": message})

    def to_dict(self) -> dict:
        return {
            "table": self.table,
            "partition": self.partition,
            "path": self.path,
            "mode": self.mode,
            "status": self.status,
            "reasons": list(self.reasons),
            "preupgrade_tool": self.preupgrade_tool,
            "current": list(self.current),
            "blocked_by": list(self.blocked_by),
            "leftover": list(self.leftover),
            "files": list(self.files),
            "findings": list(self.findings),
            "bytes": self.bytes,
            "command": self.command,
        }


# -- ALTER TABLE ... COMPACT 'major' (C.2 steps 5/6) -------------------------------------------


def _quote(v: str) -> str:
    # Hive string literal: backslash escapes (BaseSemanticAnalyzer.unescapeSQLString); derived
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


def partition_literal(value: str, hive_type: str) -> str:
    """A partition value as PreUpgradeTool writes it for its column type (C.2 step 6)."""
    t = (hive_type or "string").strip().lower()
    base = t.split("(", 1)[0]
    if base in ("string", "char", "varchar"):
        return _quote(value)
    if base == "tinyint":
        return value + "Y"
    if base == "smallint":
        return value + "S"
    if base == "int":
        return value
    if base == "bigint":
        return value + "L"
    if base == "decimal":
        return value + "BD"
    if base in ("date", "timestamp"):
        return f"{base} {_quote(value)}"
    return _quote(value)


def compact_command(db: str, table: str, partition: str | None, keys: list[tuple[str, str]]) -> str:
    """``ALTER TABLE db.t [PARTITION(k=v,...)] COMPACT 'major';`` for a PART_NAME."""
    spec = ""
    if partition:
        types = {k.lower(): t for k, t in keys}
        parts = []
        for kv in partition.split("/"):
            k, _, v = kv.partition("=")
            parts.append(f"{unquote(k)}={partition_literal(unquote(v), types.get(unquote(k).lower(), 'string'))}")
        spec = " PARTITION(" + ",".join(parts) + ")"
    return f"ALTER TABLE {db}.{table}{spec} COMPACT 'major';"


# -- one partition (C.2 step 4, C.5) --------------------------------------------------------


def _count_ops(tfs, path: str) -> tuple[int, int, int]:
    import numpy as np

    from acidctl.orc.reader import OrcFile

    counts = np.zeros(3, dtype=np.int64)
    with OrcFile(tfs, path) as f:
        op = list(f.schema.fields)[0]
        for i in range(f.num_stripes()):
            a = f.read_stripe_arrow(i, columns=[op]).column(0).to_numpy(zero_copy_only=False)
            counts += np.bincount(a.astype(np.int64), minlength=3)[:3]
    return int(counts[0]), int(counts[1]), int(counts[2])


def _stats(tfs, path: str):
    from acidctl.orc.acidfile import parse_acid_stats
    from acidctl.orc.reader import OrcFile

    with OrcFile(tfs, path) as f:
        raw = f.user_metadata.get("hive.acid.stats")
    if raw is None:
        return None
    d = parse_acid_stats(raw.decode())
    return d["inserts"], d["updates"], d["deletes"]


def check_partition(tfs, listing, *, table: str, mode: str, compactor, keys: list[tuple[str, str]]) -> PartitionCheck:
    from acidctl.acid.acidstate import Kind, Role, get_acid_state

    base_path = listing.fs_path or listing.path
    pc = PartitionCheck(table=table, partition=listing.partition, path=listing.path, mode=mode)
    pc.bytes = sum(e.total_bytes for e in listing.entries)
    has_delta_dir = any(e.is_dir and e.name.startswith(("delta_", "delete_delta_")) for e in listing.entries)
    st = get_acid_state(listing, compactor, hive_version=2)
    if st.base is not None:
        pc.current.append(st.base.name)
    pc.current += [d.name for d in st.deltas]
    pc.blocked_by = [c.name for c in st.not_visible if c.kind in (Kind.DELTA, Kind.DELETE_DELTA)]
    pc.leftover = [
        c.name
        for c in st.entries
        if c.role in (Role.OBSOLETE, Role.ABORTED) and c.kind in (Kind.BASE, Kind.DELTA, Kind.DELETE_DELTA)
    ]
    # an aborted delta no base covers yet: Hive 2's Cleaner (and `clean`) removes it only once a
    # compaction covers it (getAcidState's obsolete list, as Hive 3's: doctor's ABORTED_WAITING_COMPACTION)
    covered_to = st.base_write_id or 0
    pc.uncovered_aborted = any(
        c.role == Role.ABORTED and c.kind in (Kind.DELTA, Kind.DELETE_DELTA) and c.delta_dir.max_write_id > covered_to
        for c in st.entries
    )
    if st.not_enough_history or st.reader_errors:
        pc.status = ERROR
        pc.reasons.append(st.not_enough_history or st.reader_errors[0])
        return pc

    # PreUpgradeTool's rule over the current deltas, files in listing order until *_flush_length
    if has_delta_dir:
        for d in st.deltas:
            for f in sorted(d.entry.files, key=lambda x: x.name):
                if f.name.endswith("_flush_length"):
                    break
                if not f.name.startswith("bucket_") or f.size == 0:
                    continue
                path = f"{base_path.rstrip('/')}/{d.name}/{f.name}"
                stats = _stats(tfs, path)
                counted = _count_ops(tfs, path)
                rel = f"{d.name}/{f.name}"
                if stats is None:
                    pc.finding(
                        "error",
                        "U01",
                        f"AcidStats missing in {rel} (PreUpgradeTool aborts here); the rows were counted instead",
                    )
                elif stats != counted:
                    pc.finding(
                        "warn",
                        "U02",
                        f"{rel}: hive.acid.stats says {','.join(map(str, stats))} but the file "
                        f"holds {','.join(map(str, counted))} (inserts,updates,deletes); counted",
                    )
                if stats is not None and (stats[1] or stats[2]):
                    pc.preupgrade_tool = True
                if counted[1] or counted[2]:
                    pc.files.append(
                        {
                            "path": rel,
                            "inserts": counted[0],
                            "updates": counted[1],
                            "deletes": counted[2],
                            "stats": list(stats) if stats else None,
                        }
                    )
    # C.5 step 5
    if mode == LEGACY and any(d.kind is Kind.DELETE_DELTA for d in st.deltas):
        pc.finding("warn", "U03", "delete_delta directories in a legacy table (written under another mode)")
    originals = [o for o in st.originals]
    copies = [
        o.rel
        for o in originals
        if (OriginalFile.parse(o.rel.rsplit("/", 1)[-1]) or OriginalFile(0, 0)).copy is not None
    ]
    if copies:
        pc.finding(
            "warn",
            "U04",
            f"_copy_N original files ({', '.join(copies[:3])}): Hive 2 cannot read them as ACID originals (bucket -1)",
        )
    per_bucket: dict = {}
    for o in originals:
        per_bucket.setdefault(o.bucket, []).append(o.rel)
    if st.deltas and any(len(v) > 1 for v in per_bucket.values()):
        pc.finding(
            "error",
            "U05",
            "several original files of one bucket next to deltas: Hive 2 numbers their "
            "rows per file, Hive 3 across files, so updates/deletes would hit other rows",
        )

    if pc.blocked_by:
        pc.status = BLOCKED
        pc.reasons.append(
            f"{', '.join(pc.blocked_by)} {'holds' if len(pc.blocked_by) == 1 else 'hold'} txns that are still "
            "open: wait for them, then compact"
        )
    if st.deltas:
        if pc.status == READY:
            pc.status = COMPACT
        why = (
            "update/delete events in current deltas (PreUpgradeTool rule)"
            if pc.files or pc.preupgrade_tool
            else "current deltas left (insert events only)"
        )
        pc.reasons.append(f"{plural(len(st.deltas), 'current delta')}: {why}")
    if pc.leftover:
        pc.finding(
            "info",
            "U06",
            f"{plural(len(pc.leftover), 'obsolete/aborted directory')} not cleaned yet: "
            f"{', '.join(pc.leftover[:3])}{', ...' if len(pc.leftover) > 3 else ''} "
            + (
                "(aborted, covered by no compaction yet: the major compaction, then Hive 2's Cleaner, "
                "removes them; `acidctl upgrade-check --execute` does both)"
                if pc.uncovered_aborted
                else f"(Hive 2's Cleaner, or `acidctl clean {shlex.quote(pc.spec)} --execute --min-age 0`, removes them)"
            ),
        )
    return pc


# -- the whole metastore --------------------------------------------------------------------


def check(settings, url: str, *, db_glob: str = "*", now: float | None = None) -> dict:
    """The upgrade-check report of every ACID table of the Hive 2 metastore at ``url``."""
    from acidctl.acid.hive2 import table_mode
    from acidctl.acid.layout import list_table
    from acidctl.metastore import hive2 as ms2
    from acidctl.target import location_url

    ms2.require_hive2(url)
    tl = ms2.txn_list(url)
    compactor = tl.for_compactor()
    pending = ms2.pending_compactions(url)
    open_by_table = ms2.open_txn_components(url)
    tables, parts = [], []
    for t in ms2.list_tables(url, db_glob=db_glob):
        tfinds: list[dict] = []
        value = t.transactional_value
        if value != "true":
            tfinds.append(
                {
                    "severity": "warn",
                    "check": "U07",
                    "message": f"transactional={value!r} is not exactly 'true': the Hive 3 schema upgrade gives this "
                    "table no NEXT_WRITE_ID row, so its first write ids could reuse old directory names; "
                    "set it to 'true' before upgrading",
                }
            )
        try:
            mode = table_mode(t.params)
        except Exception as e:  # e.g. insert_only: not a Hive 2 ACID mode
            tfinds.append({"severity": "error", "check": "U08", "message": str(e)})
            tables.append({"table": t.full_name, "mode": None, "findings": tfinds, "partitions": 0})
            continue
        if (t.params.get("transactional_properties") or "").strip().lower() == "legacy":
            tfinds.append(
                {
                    "severity": "warn",
                    "check": "U09",
                    "message": "transactional_properties=legacy: Hive 3 refuses this value; remove the property "
                    "after the compaction (Hive 3 reads the table as split-update)",
                }
            )
        opens = open_by_table.get((t.db.lower(), t.table.lower()), [])
        if opens:
            tfinds.append(
                {
                    "severity": "warn",
                    "check": "U10",
                    "message": f"open {noun(len(opens), 'txn')} {', '.join(map(str, opens[:5]))} "
                    f"{'writes' if len(opens) == 1 else 'write'} this table: stop writers "
                    "(and HiveServer2) before compacting for the upgrade",
                }
            )
        if not t.location:
            tfinds.append({"severity": "error", "check": "U11", "message": "no location in the metastore"})
            tables.append({"table": t.full_name, "mode": mode, "findings": tfinds, "partitions": 0})
            continue
        tfs = settings.table_fs(location_url(t.location))
        listings = list_table(tfs)
        known = {p for p, _ in t.partitions}
        n = 0
        for lst in listings:
            if t.partition_keys and lst.partition not in known and lst.partition is not None:
                continue  # a directory the metastore does not know: not a partition Hive reads
            pc = check_partition(tfs, lst, table=t.full_name, mode=mode, compactor=compactor, keys=t.partition_keys)
            for q in pending.get((t.db.lower(), t.table.lower(), lst.partition), []):
                pc.finding("info", "U12", f"compaction already queued: {q['type']} {q['state']}")
            if pc.status in (COMPACT, BLOCKED):
                pc.command = compact_command(t.db, t.table, lst.partition, t.partition_keys)
            parts.append(pc)
            n += 1
        tables.append({"table": t.full_name, "mode": mode, "findings": tfinds, "partitions": n, "location": t.location})
    return _report(url, tl, compactor, db_glob, tables, parts, now)


def _report(url, tl: Hive2TxnList, compactor, db_glob, tables, parts: list[PartitionCheck], now) -> dict:
    from acidctl.errors import redact

    now = time.time() if now is None else now
    counts = {s: sum(1 for p in parts if p.status == s) for s in (READY, COMPACT, BLOCKED, ERROR)}
    errors = sum(1 for p in parts for f in p.findings if f["severity"] == "error") + sum(
        1 for t in tables for f in t["findings"] if f["severity"] == "error"
    )
    ready = counts[READY] == len(parts) and not errors
    return {
        "metastore": redact(url),
        "checked_at": _dt.datetime.fromtimestamp(now, _dt.timezone.utc).isoformat(),
        "db": db_glob,
        "txns": str(tl),
        "compactor_txns": f"{compactor.hwm}:{compactor.min_open}:" + ":".join(map(str, compactor.aborted)),
        "ready": ready,
        "summary": {
            "tables": len(tables),
            "partitions": len(parts),
            **counts,
            "errors": errors,
            "bytes_to_compact": sum(p.bytes for p in parts if p.status == COMPACT),
        },
        "tables": tables,
        "partitions": [p.to_dict() for p in parts],
        "commands": [p.command for p in parts if p.command],
    }


def execute(
    settings,
    url: str,
    report: dict,
    *,
    master: str = "local[*]",
    spark_conf: dict | None = None,
    engine: str = "auto",
    local_max_bytes: str | int | None = None,
    spark=None,
    register: bool = True,
) -> dict:
    """Run the major compactions of ``report`` (status ``compact``) with Hive 2.3 output on one
    Spark application, registered in the 2.3 metastore as Hive 2.3's Worker registers them
    (:class:`acidctl.compact.register.Registrar`: the request queued for the partition — or one
    enqueued as ``ALTER TABLE ... COMPACT 'major'`` would — claimed, ``setRunAs``,
    ``setCompactionHighestTxnId``, ``markCompacted``), then clean them as 2.3's Cleaner does
    (:func:`acidctl.compact.clean.clean_registered`: the obsolete directories for the list capped
    at ``CQ_HIGHEST_TXN_ID``, unless a lock present on the partition holds the request back;
    ``markCleaned``), and check again. Metastore writes not allowed (``--read-only``, or
    ``register=False``): the compactions run unregistered and the directories are cleaned
    without the queue, a partition with a lock on it keeping them (the Cleaner's guard). Returns {"runs", "spark_applications", "cleaned", "registered",
    "notes", "only_bases", "after"}; ``only_bases`` lists the compacted partitions whose
    directory holds anything but one base afterwards (empty = verified)."""
    from acidctl.compact.register import Registrar, location_owner, run_registered
    from acidctl.compact.runner import CompactOptions
    from acidctl.errors import RefusedError
    from acidctl.metastore import hive2 as ms2
    from acidctl.metastore.steps import check_writable
    from acidctl.target import location_url

    todo: dict[str, list[str | None]] = {}
    for p in report["partitions"]:
        if p["status"] == COMPACT:
            todo.setdefault(p["table"], []).append(p["partition"])
    ms = ms2.connect_hive2(url)
    notes: list[str] = []
    registered = False
    if todo and register:
        try:
            check_writable(ms, what="register the upgrade compactions")
            registered = True
        except RefusedError as e:
            notes.append(f"not registered in the metastore: {e}")
    tl = ms2.txn_list(ms)
    reader = tl.to_write_ids()
    runs, cleaned = [], []
    if todo and engine == "spark" and spark is None:
        from acidctl.compact.spark import get_or_create_session

        # one application for every table; like `compact`, the session ends with the process
        spark = get_or_create_session(master, spark_conf)
    locations = {t["table"]: t.get("location") for t in report["tables"]}
    for table, partitions in todo.items():
        db, _, name = table.partition(".")
        tfs = settings.table_fs(location_url(locations[table]))
        opts = CompactOptions(
            mode="major",
            reader=reader,
            hive_version=2,
            engine=engine,
            local_max_bytes=local_max_bytes,
            master=master,
            spark_conf=spark_conf,
            partitions=[p for p in partitions if p is not None] or None,
        )
        reg = (
            Registrar(ms, db, name, compactor_hwm=tl.for_compactor().hwm, run_as=location_owner(tfs))
            if registered
            else None
        )
        rep = run_registered(tfs, opts, registrar=reg, spark=spark if engine == "spark" else None)
        runs.append(
            {
                "table": table,
                "partitions": list(partitions),
                "compacted": [p["partition"] for p in rep["partitions"] if p["status"] == "compact"],
                "rows_in": sum(p.get("rows_in", 0) for p in rep["partitions"]),
                "rows_out": sum(p.get("rows_out", 0) for p in rep["partitions"]),
                "spark_app_id": (rep.get("spark") or {}).get("app_id"),
                "compaction_ids": [
                    (p.get("metastore") or {}).get("cq_id") for p in rep["partitions"] if p.get("metastore")
                ],
            }
        )
        cleaned.append(_clean_upgraded(tfs, ms, db, name, table, partitions, registered=registered))
    after = check(settings, url, db_glob=report["db"])
    done = {(p["table"], p["partition"]) for p in report["partitions"] if p["status"] == COMPACT}
    only_bases = [
        {"table": p["table"], "partition": p["partition"], "current": p["current"], "leftover": p["leftover"]}
        for p in after["partitions"]
        if (p["table"], p["partition"]) in done
        and (len(p["current"]) != 1 or not p["current"][0].startswith("base_") or p["leftover"])
    ]
    apps = sorted({r["spark_app_id"] for r in runs if r["spark_app_id"]})
    return {
        "runs": runs,
        "spark_applications": apps,
        "cleaned": cleaned,
        "registered": registered,
        "notes": notes,
        "only_bases": only_bases,
        "after": after,
    }


def _clean_upgraded(tfs, ms, db: str, name: str, table: str, partitions: list, *, registered: bool) -> dict:
    """Clean one table after its upgrade compactions as 2.3's Cleaner does (registered: the
    requests finished; else the same lock guard without the queue); what was deleted."""
    from acidctl.compact.clean import clean_registered, clean_table
    from acidctl.metastore import cleaner
    from acidctl.metastore import hive2 as ms2

    scope = set(partitions)
    # the snapshot after the compaction: what the Cleaner's getAcidState must keep readable
    after_reader = ms2.txn_list(ms).to_write_ids()
    kw = dict(reader=after_reader, hive_version=2, min_age=0.0, execute=True, partitions=scope)
    if registered:
        cl = clean_registered(tfs, ms, db=db, table=name, **kw)  # type: ignore[arg-type]
    else:
        # no request to finish, but the same guard as 2.3's Cleaner: a partition with a lock
        # on it (a reader may be in its old deltas) keeps its obsolete directories
        fake = [{"id": i, "database": db, "table": name, "partition": p} for i, p in enumerate(partitions)]
        waits = cleaner.cleaner_waits(ms, fake)
        hold = {p: "; ".join(w["message"] for w in waits[i]) for i, p in enumerate(partitions) if waits[i]}
        cl = clean_table(tfs, hold=hold, **kw)  # type: ignore[arg-type]
    return {
        "table": table,
        "deleted": [i["path"] for i in cl["items"] if i["action"] == "delete"],
        "compactions": [
            {k: c.get(k) for k in ("cq_id", "partition", "action", "state", "reason")}
            for c in cl.get("compactions", [])
        ],
    }


def exit_ok(report: dict) -> bool:
    return bool(report.get("ready"))
