"""``acidctl why DB.TABLE[/PART]``: replay the decisions Hive makes about one partition.

Pure: the metastore facts (:class:`~acidctl.doctor.facts.Warehouse`) and the partition's scan
(:class:`~acidctl.doctor.collect.PartitionScan`) in, a list of steps out. The order of the
Initiator's checks is operations.md §4.3 for the version in use (§7.2); the Worker's outcome
follows §3.2 and directory-state.md §8; the Cleaner's blockers §5.1/§5.2 (§7.3).

Each step: ``{"rule", "outcome", "detail"}`` with outcome ``ok`` (passes), ``stop`` (the
component stops here), ``note``, or ``unknown`` (the rule needs a fact the metastore source does not
give — a ``thrift://`` metastore has no TXN_COMPONENTS, ...: not judged, never passed). ``verdict``
is the first stop (or what happens, naming the rules not judged).
"""

from __future__ import annotations

from acidctl.doctor.findings import (
    hive_name,
    RECOMMENDATION_FIGURES,
    Limits,
    TYPES,
    blocked_by_txn,
    blocking_locks,
    cleaner_hold,
    failure_block,
    fix_clean,
    history_rows,
    human_age,
    queue_rows,
)
from acidctl.units import noun, plural, size


def _step(rule: str, outcome: str, detail: str, **values) -> dict:
    return {"rule": rule, "outcome": outcome, "detail": detail, "values": values}


def replay(wh, table, ps, *, limits: Limits | None = None) -> dict:
    """Initiator, Worker and Cleaner replay for one partition (``ps`` from the collector)."""
    lim = limits or Limits()
    return {
        "table": table.full_name,
        "partition": ps.partition,
        "path": ps.path,
        "hive_version": wh.hive_version,
        "initiator": initiator(wh, table, ps, lim),
        "worker": worker(wh, table, ps),
        "cleaner": cleaner(wh, table, ps, lim),
    }


def _verdict(steps: list[dict], otherwise: str) -> str:
    for s in steps:
        if s["outcome"] == "stop":
            return s["detail"]
    unknown = [s["rule"] for s in steps if s["outcome"] == "unknown"]
    if unknown and otherwise:
        return f"{otherwise}, unless a rule not judged stops it ({', '.join(unknown)})"
    return otherwise


def _unknown(rule: str, facts: list[str], what: str) -> dict:
    return _step(
        rule,
        "unknown",
        f"not judged: {what} needs {', '.join(facts)}, which this metastore source does not give "
        "(point --metastore at the metastore's database for it)",
        needs=facts,
    )


def initiator(wh, t, ps, lim: Limits) -> dict:
    hv = wh.hive_version
    part = ps.partition
    key = (t.db, t.table, part)
    steps: list[dict] = []
    ctc = wh.completed_components.get(key)
    ab = wh.aborted_components.get(key) or {}
    rec = ps.recommendation or {}
    thr = rec.get("thresholds") or {}
    ab_thr = thr.get("hive.compactor.abortedtxn.threshold", 1000)
    hist = sorted(
        (r for r in history_rows(wh) if (r["database"], r["table"], r["partition"]) == key), key=lambda r: -int(r["id"])
    )
    queued = [
        r for r in queue_rows(wh) if (r["database"], r["table"], r["partition"]) == key and r["state"] in ("i", "w")
    ]

    # candidates (§4.2)
    lacking = [f for f in ("COMPLETED_TXN_COMPONENTS", "TXN_COMPONENTS") if not wh.has(f)]
    if lacking:
        steps.append(_unknown("candidate", lacking, "whether anything was written since its last compaction"))
    else:
        steps.append(_candidate_step(wh, ctc, ab, ab_thr, hist))

    def queue_check():
        if queued:
            r = queued[0]
            steps.append(
                _step(
                    "queued",
                    "stop",
                    f"compaction {r['id']} is already {'initiated' if r['state'] == 'i' else 'working'}",
                    compaction_id=int(r["id"]),
                )
            )
        else:
            steps.append(_step("queued", "ok", "no initiated/working compaction for it"))

    def failure_check():
        blk = failure_block(wh, t.db, t.table, part, lim=lim)
        if blk:
            d = (
                f"the newest {blk['threshold']} compactions failed ({', '.join(map(str, blk['failed_ids']))}): "
                "hive.compactor.initiator.failed.compacts.threshold reached"
            )
            if blk.get("retry_at_ms"):
                d += f"; retried after {human_age((blk['retry_at_ms'] - wh.now_ms) / 1000)}"
            steps.append(_step("failed threshold", "stop", d, **blk))
        else:
            steps.append(_step("failed threshold", "ok", f"fewer than {lim.failed_threshold} consecutive failures"))

    def no_auto_check():
        skip, level = t.no_auto_compaction(hv)
        if skip:
            what = f"database {t.db} property" if level == "database" else "table property"
            steps.append(_step("no_auto_compaction", "stop", f"{what} no_auto_compaction=true"))
        elif level == "database":
            steps.append(
                _step(
                    "no_auto_compaction",
                    "ok",
                    f"database {t.db} sets no_auto_compaction=false (decides over the table)",
                )
            )
        else:
            steps.append(_step("no_auto_compaction", "ok", "no_auto_compaction not set on the table"))

    def partition_check():
        if part is not None and not ps.in_metastore:
            steps.append(_step("partition", "stop", "the metastore does not list this partition"))

    if hv >= 4:
        queue_check()
        failure_check()
        no_auto_check()
        if t.insert_only:
            steps.append(
                _step("insert-only", "ok", "insert-only table; hive.compactor.compact.insert.only=true (default)")
            )
        partition_check()
    else:
        no_auto_check()
        queue_check()
        failure_check()
        partition_check()
    # thresholds (directory-state.md §8.2)
    kind = rec.get("type", "none")
    steps.append(_thresholds_step(rec, thr))
    if not wh.has("TXN_COMPONENTS"):
        steps.append(_unknown("aborted threshold", ["TXN_COMPONENTS"], "the aborted-txn count of the partition"))
    # is any Initiator running at all?
    steps += _initiator_activity_steps(wh)
    return {"steps": steps, "verdict": _verdict(steps, f"the Initiator would request a {kind.upper()} compaction now")}


def _candidate_step(wh, ctc, ab: dict, ab_thr, hist: list) -> dict:
    """Whether the Initiator looks at the partition at all (operations.md §4.2)."""
    hv = wh.hive_version
    many_aborts = ab.get("rows", 0) > ab_thr  # §4.2: TXN_COMPONENTS rows of aborted txns
    if ctc is None and not (many_aborts and hv <= 3):  # 2.3 and 3: findPotentialCompactions
        return _step(
            "candidate",
            "stop",
            "not a candidate: no COMPLETED_TXN_COMPONENTS rows for it (nothing written since its last "
            "cleaned compaction)"
            + (
                f"; {plural(ab.get('rows', 0), 'aborted-txn component row')} <= abortedtxn.threshold {ab_thr}"
                if ab
                else ""
            ),
            completed_txn_components=0,
            aborted_txns=ab.get("txns", 0),
        )
    elif (
        hv >= 4
        and wh.initiator_last_cycle_ms
        and ctc is not None
        and (ctc.get("newest") or 0) < wh.initiator_last_cycle_ms
        and not (hist and hist[0]["state"] in ("a", "f"))
    ):
        return _step(
            "candidate",
            "stop",
            f"no write since the Initiator's previous cycle ({human_age((wh.now_ms - wh.initiator_last_cycle_ms) / 1000)} ago): "
            "Hive 4 only revisits partitions written since then (or whose newest compaction failed)",
            newest_write_ms=ctc.get("newest"),
            last_cycle_ms=wh.initiator_last_cycle_ms,
        )
    else:
        return _step(
            "candidate",
            "ok",
            plural(ctc["rows"] if ctc else 0, "COMPLETED_TXN_COMPONENTS row")
            + (f", {plural(ab.get('rows', 0), 'aborted-txn component row')} > {ab_thr}" if many_aborts else ""),
            completed_txn_components=ctc["rows"] if ctc else 0,
            aborted_txns=ab.get("txns", 0),
        )


def _thresholds_step(rec: dict, thr: dict) -> dict:
    """The Initiator's thresholds (directory-state.md §8.2) and what it would request."""
    kind = rec.get("type", "none")
    reasons = "; ".join(rec.get("reasons") or [])
    vals = {k: rec.get(k) for k in RECOMMENDATION_FIGURES}
    vals["thresholds"] = {k: v for k, v in thr.items() if k != "source"}
    vals["threshold_source"] = thr.get("source")
    if kind == "none":
        return _step("thresholds", "stop", f"thresholds not met: {reasons}", **vals)
    else:
        return _step("thresholds", "ok", f"would request {kind.upper()}: {reasons}", **vals)


def _initiator_activity_steps(wh) -> list[dict]:
    """A note when every compaction row was requested manually (Hive 4): the Initiator is
    probably off."""
    hv = wh.hive_version
    steps: list[dict] = []
    recent = [r for r in queue_rows(wh) + history_rows(wh) if r.get("initiator_id")]
    if hv >= 4 and recent and all(str(r["initiator_id"]).endswith("manual") for r in recent):
        steps.append(
            _step(
                "initiator activity",
                "note",
                "every compaction row was requested manually: the Initiator is probably off "
                "(hive.compactor.initiator.on=false)",
            )
        )
    return steps


def worker(wh, t, ps) -> dict:
    """The Worker's outcome, named by the one rule of :mod:`acidctl.compact.naming` from what the
    compactor reads (``ps.compactor``): exactly the directories ``acidctl compact`` writes."""
    from acidctl.compact import naming

    rec = ps.recommendation or {}
    kind = rec.get("type", "none")
    wl = wh.write_id_list(t.db, t.table).for_compactor()
    hwm = wl.hwm
    steps = [
        _step(
            "compactor snapshot",
            "note",
            f"compactor write-id list {wl}: high-water mark {hwm} (below the lowest open write id), "
            f"aborted ids skipped",
            write_ids=str(wl),
            highest_write_id=hwm,
        )
    ]
    key = (t.db, t.table, ps.partition)
    queued = sorted(
        (r for r in queue_rows(wh) if (r["database"], r["table"], r["partition"]) == key and r["state"] in ("i", "w")),
        key=lambda r: int(r["id"]),
    )
    if queued and queued[0].get("type") in ("a", "i"):
        kind = "major" if queued[0]["type"] == "a" else "minor"
        steps.append(_step("type", "note", f"the Worker takes the queued {kind.upper()} request {queued[0]['id']}"))
    elif kind == "none":
        steps.append(
            _step("type", "note", "no compaction is due; a manual MAJOR would still fold the current directories")
        )
        kind = "major"
    comp = ps.compactor
    if comp is None:
        steps.append(_step("inputs", "stop", "the partition could not be read as the compactor reads it"))
        return {"steps": steps, "verdict": _verdict(steps, "")}
    kind = "major" if kind == "major" else "minor"
    inputs = [d["name"] for d in comp["deltas"]]
    if kind == "major":
        inputs = ([comp["base"]] if comp.get("base") else []) + list(comp.get("originals") or []) + inputs
    out, why_not = naming.predict_from(comp, kind, hive_version=wh.hive_version)
    if out is None:
        steps.append(
            _step(
                "enough to compact",
                "stop",
                f"{kind} compaction: {why_not} ({len(inputs)} input director{'y' if len(inputs) == 1 else 'ies'})",
                inputs=inputs,
            )
        )
        return {"steps": steps, "verdict": _verdict(steps, "")}
    rule = (
        "named after the compactor high-water mark (insert-only: a query-based compaction)"
        if comp.get("insert_only")
        else "named after the write ids of the deltas it reads (Hive's MR compactor)"
    )
    steps.append(
        _step(
            "output",
            "ok",
            f"{kind.upper()} would read {len(inputs)} director{'y' if len(inputs) == 1 else 'ies'} "
            f"and write {', '.join(out.names)}: {rule}",
            inputs=inputs,
            outputs=list(out.names),
            type=kind,
            min_write_id=out.min_write_id,
            max_write_id=out.max_write_id,
        )
    )
    return {"steps": steps, "verdict": _verdict(steps, f"{kind.upper()} → {', '.join(out.names)}")}


def cleaner(wh, t, ps, lim: Limits) -> dict:
    hv = wh.hive_version
    key = (t.db, t.table, ps.partition)
    steps: list[dict] = []
    obsolete = [d for d in ps.dirs if d["role"] == "obsolete"]
    aborted = [d for d in ps.dirs if d["role"] == "aborted"]
    # what `clean --execute --min-age 0` removes: clean's own decisions (ps.clean)
    decided = {c["name"]: c for c in ps.clean}
    removable = [d["name"] for d in obsolete + aborted if decided.get(d["name"], {}).get("action") == "delete"]
    kept = [d["name"] for d in obsolete + aborted if d["name"] in decided and d["name"] not in removable]
    not_yet = [d["name"] for d in obsolete + aborted if d["name"] not in decided]
    total = sum(d["bytes"] for d in obsolete + aborted)
    steps.append(
        _step(
            "removable",
            "note",
            f"{len(obsolete)} obsolete and {len(aborted)} aborted director{'y' if len(aborted) == 1 else 'ies'} "
            f"({size(total)}) for the current reader snapshot",
            obsolete=[d["name"] for d in obsolete],
            aborted=[d["name"] for d in aborted],
            removable=removable,
            bytes=total,  # JSON keeps the raw number, text shows units (acidctl.units)
        )
    )
    if not_yet:
        steps.append(
            _step(
                "not yet removable",
                "note",
                f"{', '.join(not_yet)}: "
                + (
                    f"{hive_name(hv)}'s Cleaner removes an aborted delta only once a "
                    "compaction covers it (a major compaction, then `acidctl clean`)"
                    if hv < 4
                    else "not obsolete by the Cleaner's rules yet"
                ),
                names=not_yet,
            )
        )
    if kept:
        steps.append(_step("kept", "note", "; ".join(f"{n}: {decided[n]['action']}" for n in kept), names=kept))
    ready = sorted(
        (r for r in queue_rows(wh) if (r["database"], r["table"], r["partition"]) == key and r["state"] == "r"),
        key=lambda r: int(r.get("highest_write_id") or 0),
    )
    hold = cleaner_hold(wh, t.db, t.table, ps.partition)
    # the command as printed runs: with the table (and partition) it cleans (report #5, new-user 4)
    clean_cmd = fix_clean(t.db, t.table, ps.partition, min_age_zero=True)
    what = f"`{clean_cmd}` removes {', '.join(removable)}" if removable else ""
    if not ready:
        if removable:
            steps.append(
                _step(
                    "queue",
                    "ok",
                    "no compaction is ready for cleaning here"
                    + (
                        "; Hive 4's Cleaner removes aborted directories on its own"
                        if hv >= 4 and aborted
                        else "; Hive's Cleaner only runs after a compaction"
                    )
                    + f"; {what}",
                    removable=removable,
                )
            )
            return {"steps": steps, "verdict": what}
        steps.append(_step("queue", "ok", "nothing `acidctl clean` removes now"))
        return {"steps": steps, "verdict": "nothing to clean"}
    r = ready[0]
    if len(ready) > 1:
        steps.append(
            _step(
                "order",
                "note",
                f"{len(ready)} ready-for-cleaning rows: the Cleaner takes the lowest "
                f"CQ_HIGHEST_WRITE_ID first (compaction {r['id']})",
                compaction_ids=[int(x["id"]) for x in ready],
            )
        )
    if t.flag("NO_CLEANUP"):
        steps.append(_step("NO_CLEANUP", "stop", "table property NO_CLEANUP=true: the Cleaner refuses the row"))
    steps += _h4_cleaner_steps(wh, r) if hv >= 4 else _h3_cleaner_steps(wh, r)
    if r.get("error_message"):
        steps.append(_step("last error", "note", str(r["error_message"])))
    if hold is not None and not any(x["outcome"] == "stop" for x in steps):
        # what `clean` itself sees (acidctl.metastore.cleaner.cleaner_waits), e.g. a txn younger
        # than metastore.txn.opentxn.timeout that Hive 4's Cleaner still counts as open
        steps.append(_step("held back", "stop", f"compaction {hold[0]['id']} is held back: {hold[1]}"))
    if hold is None:
        steps.append(
            _step(
                "removes",
                "ok",
                (what or "nothing obsolete is left") + f"; compaction {r['id']} is then marked cleaned",
                removable=removable,
            )
        )
    return {
        "steps": steps,
        "verdict": _verdict(
            steps,
            f"the Cleaner can clean compaction {r['id']} ({TYPES.get(r.get('type'), r.get('type'))}) now"
            + (f": {what}" if what else ""),
        ),
    }


def _h4_cleaner_steps(wh, r: dict) -> list[dict]:
    """Hive 4's Cleaner on a ready-for-cleaning row: its compaction txn, an open txn below
    CQ_NEXT_TXN_ID, MIN_HISTORY_LEVEL, the retry after an error."""
    steps: list[dict] = []
    lacking = [f for f in ("CQ_TXN_ID", "CQ_NEXT_TXN_ID") if not wh.has(f)]
    if lacking:
        return [_unknown("compaction txn", lacking, "its compaction txn and the open txns below CQ_NEXT_TXN_ID")]
    tx = blocked_by_txn(wh, r)
    if r.get("next_txn_id") is None and r.get("txn_id"):
        st = wh.txns.get(int(r["txn_id"]), {}).get("state", "committed or gone")
        if st in ("a", "committed or gone"):
            steps.append(
                _step(
                    "compaction txn",
                    "stop",
                    f"compaction txn {r['txn_id']} is {'aborted' if st == 'a' else st} "
                    "and CQ_NEXT_TXN_ID is NULL: the row is orphaned (HIVE-29572)",
                )
            )
        else:
            steps.append(
                _step(
                    "compaction txn",
                    "stop",
                    f"compaction txn {r['txn_id']} is still open (the Worker has not committed)",
                )
            )
    if tx is not None:
        steps.append(
            _step(
                "open txn",
                "stop",
                f"txn {tx['txn_id']} ({tx.get('user')}@{tx.get('host')}, open "
                f"{human_age((wh.now_ms - int(tx['started'])) / 1000) if tx.get('started') else '?'}) is below "
                f"CQ_NEXT_TXN_ID {r.get('next_txn_id')}: the Cleaner waits for it (HIVE-26704)",
                txn_id=tx["txn_id"],
                next_txn_id=r.get("next_txn_id"),
            )
        )
    else:
        steps.append(_step("open txn", "ok", f"no open txn below CQ_NEXT_TXN_ID {r.get('next_txn_id')}"))
    if wh.min_history_level is not None and r.get("next_txn_id") and wh.min_history_level < int(r["next_txn_id"]):
        steps.append(
            _step(
                "reader snapshot",
                "note",
                f"MIN_HISTORY_LEVEL {wh.min_history_level}: a reader snapshot below it caps what is removed",
                min_history_level=wh.min_history_level,
            )
        )
    ret = int(r.get("retry_retention") or 0)
    ct = r.get("commit_time")
    if ret and ct and int(ct) + ret > wh.now_ms:
        steps.append(
            _step(
                "retry",
                "stop",
                f"after a Cleaner error the next attempt is in "
                f"{human_age((int(ct) + ret - wh.now_ms) / 1000)}: {r.get('error_message')}",
            )
        )
    return steps


def _h3_cleaner_steps(wh, r: dict) -> list[dict]:
    """Hive 3's Cleaner on a ready-for-cleaning row: the locks on the partition."""
    steps: list[dict] = []
    locks = blocking_locks(wh, r)
    if locks:
        ids = sorted({int(x["HL_LOCK_EXT_ID"]) for x in locks})
        steps.append(
            _step(
                "locks",
                "stop",
                f"{hive_name(wh.hive_version)}'s Cleaner waits for {noun(len(ids), 'lock')} {', '.join(map(str, ids))} on the partition to go",
                lock_ids=ids,
            )
        )
    else:
        steps.append(_step("locks", "ok", "no lock on the partition"))
    return steps
