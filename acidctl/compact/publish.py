"""Staging, verification of the staged output, publication, and recovery.

Every partition's output is built under ``<partition>/.acidctl-staging-<id>/<final name>/``
(readers ignore names starting with ``.``) next to a manifest
``_acidctl_manifest.json`` (state ``staging`` → ``publishing``). Publication moves each
output directory into the partition with one rename each. Inputs are never touched.

When is that atomic (:func:`safety`)? A major compaction, or a minor one with only one kind of
delta, is one rename — atomic on POSIX filesystems and HDFS. Hive 4 output named ``_v<txn>``
with a compactor txn that commits only after publication is invisible to readers until the
commit, so it is atomic whatever the number of renames or the store. Otherwise — a Hive 3 minor
compaction producing both ``delta_x_y`` and ``delete_delta_x_y`` (no single-rename layout
exists: each alone makes the other kind's inputs obsolete), or an object store whose "rename"
copies file by file — a reader listing during publication, or a crash in the middle, would see
a wrong snapshot. The runner refuses such a publication unless the user allows it
(``--allow-non-atomic-publish``: what Hive's own compactor does).

Crash safety: a crash before publication leaves only the hidden staging directory (the table
reads the same; ``clean`` removes it). A crash in the middle of a non-atomic publication leaves
a manifest in state ``publishing`` with outputs still staged: :func:`recover` (run by
``compact`` and ``clean --execute`` before anything else) finishes the moves.
"""

from __future__ import annotations

import json
import os
import socket
import time

from acidctl.acid.dirname import PUBLISHED_DIR, is_hidden
from acidctl.compact.planner import STAGING_PREFIX, PartitionPlan
from acidctl.errors import RefusedError, WriteVerificationFailed
from acidctl.faults import crash_point
from acidctl.fs import join_path

MANIFEST = "_acidctl_manifest.json"
#: publication order: insert data before delete events, bases alone
_ORDER = {"base": 0, "delta": 1, "delete_delta": 2}


def _manifest(plan: PartitionPlan, state: str) -> bytes:
    return json.dumps(
        {
            "state": state,
            "type": plan.mode,
            "partition": plan.partition,
            "outputs": [o.name for o in sorted(plan.outputs, key=lambda o: _ORDER[o.kind])],
            "inputs": plan.inputs,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "time": time.time(),
        },
        indent=1,
    ).encode()


ATOMIC, HIDDEN, NON_ATOMIC = "atomic", "hidden-until-commit", "non-atomic"


def safety(tfs, plan: PartitionPlan, *, hidden_until_commit: bool) -> tuple[str, str | None]:
    """How the plan's publication looks to a concurrent reader: (mode, why it is not atomic)."""
    if hidden_until_commit:
        return HIDDEN, None
    why = []
    if len(plan.outputs) > 1:
        why.append(
            f"{' and '.join(o.name for o in plan.outputs)} are {len(plan.outputs)} renames, "
            "each visible to readers on its own"
        )
    if not tfs.atomic_rename:
        why.append(f"a directory rename on {tfs.protocol}:// copies file by file")
    return (NON_ATOMIC, "; ".join(why)) if why else (ATOMIC, None)


def prepare(tfs, plan: PartitionPlan) -> None:
    """Create the staging directory, every output directory and its markers."""
    tfs.makedirs(plan.staging)
    tfs.write_bytes(join_path(plan.staging, MANIFEST), _manifest(plan, "staging"))
    for o in plan.outputs:
        d = join_path(plan.staging, o.name)
        tfs.makedirs(d)
        for name, content in o.markers.items():
            tfs.write_bytes(join_path(d, name), content)


def check_staged(tfs, plan: PartitionPlan, metrics: list[dict]) -> None:
    """The staged directories hold exactly the markers and the files the tasks reported."""
    written = {p for m in metrics for p in m.get("files_out", [])}
    for o in plan.outputs:
        d = join_path(plan.staging, o.name)
        names = {e.name for e in tfs.ls(d)}
        want_markers = set(o.markers)
        if not want_markers <= names:
            raise WriteVerificationFailed(f"staged {o.name} lacks {sorted(want_markers - names)}")
        data = {n for n in names if not is_hidden(n)}
        expected = {p.rsplit("/", 1)[-1] for p in written if p.startswith(d + "/")}
        if data != expected:
            raise WriteVerificationFailed(f"staged {o.name} holds {sorted(data)}, the tasks wrote {sorted(expected)}")
        for n in names - data - want_markers:
            raise WriteVerificationFailed(f"unexpected file {n} in staged {o.name}")
        for name, content in o.markers.items():
            if tfs.read_bytes(join_path(d, name)) != content:
                raise WriteVerificationFailed(f"marker {name} of staged {o.name} does not hold {content!r}")


def publish(tfs, plan: PartitionPlan) -> list[str]:
    """Rename the staged outputs into the partition; returns the published paths."""
    assert plan.staging is not None  # planned to run
    tfs.write_bytes(join_path(plan.staging, MANIFEST), _manifest(plan, "publishing"))
    done = []
    outs = sorted(plan.outputs, key=lambda o: _ORDER[o.kind])
    for i, o in enumerate(outs):
        target = join_path(plan.path, o.name)
        if tfs.exists(target):
            raise RefusedError(
                f"{tfs.display(target)} appeared while compacting; not overwriting it",
                hint=f"the staged output stays in {tfs.display(plan.staging)}",
            )
        tfs.move_dir(join_path(plan.staging, o.name), target)
        done.append(tfs.display(target))
        if i + 1 < len(outs):
            crash_point("between-renames")
    crash_point("after-rename")
    write_record(tfs, plan)
    discard(tfs, plan.staging)
    return done


#: per partition: one JSON record per published compaction (hidden from every reader), what
#: ``acidctl revert`` needs to undo it while its inputs are still there
RECORDS_DIR = PUBLISHED_DIR


def write_record(tfs, plan: PartitionPlan) -> None:
    """The durable record of a publication: outputs, and each input with its files and sizes."""
    rec = {
        "version": 1,
        "type": plan.mode,
        "partition": plan.partition,
        "time": time.time(),
        "host": socket.gethostname(),
        "staging_id": plan.staging_id,
        "outputs": [o.name for o in sorted(plan.outputs, key=lambda o: _ORDER[o.kind])],
        "inputs": plan.input_files,
    }
    try:
        tfs.makedirs(join_path(plan.path, RECORDS_DIR))
        tfs.write_bytes(
            join_path(plan.path, RECORDS_DIR, plan.outputs[0].name + ".json"), json.dumps(rec, indent=1).encode()
        )
    except Exception:
        pass  # the publication stands; only the undo record is missing (revert then refuses)


def read_records(tfs, partition_path: str) -> list[dict]:
    """The publication records of a partition, newest first (each with its ``record_path``)."""
    d = join_path(partition_path, RECORDS_DIR)
    if not tfs.exists(d):
        return []
    out = []
    for e in tfs.ls(d):
        if e.is_dir or not e.name.endswith(".json"):
            continue
        try:
            rec = json.loads(tfs.read_bytes(e.path))
        except Exception:
            continue
        rec["record_path"] = e.path
        out.append(rec)
    return sorted(out, key=lambda r: r.get("time", 0), reverse=True)


def remove_empty_records_dir(tfs, partition_path: str) -> None:
    """Remove a partition's records directory when no record is left in it (revert, clean)."""
    d = join_path(partition_path, RECORDS_DIR)
    try:
        if tfs.exists(d) and not tfs.ls(d):
            tfs.rm(d, recursive=True)
    except Exception:
        pass  # bookkeeping only: an empty hidden directory is harmless


def discard(tfs, staging: str) -> None:
    """Remove a staging directory (never anything else)."""
    if STAGING_PREFIX not in staging.rsplit("/", 1)[-1]:
        raise RefusedError(f"refusing to remove {staging}: not an acidctl staging directory")
    try:
        if tfs.exists(staging):
            tfs.rm(staging, recursive=True)
    except Exception:
        pass


def publish_registered(tfs, p: PartitionPlan, *, published: set[str], registrar=None) -> None:
    """Publish one partition (:func:`publish`), between the registrar's ``before_publish`` and
    ``published`` (Hive's Worker protocol, :mod:`acidctl.compact.register`); its staging
    directory is added to ``published`` so that a later failure does not discard it."""
    if registrar is not None:
        registrar.before_publish(p)
    p.published = publish(tfs, p)
    if p.staging is not None:
        published.add(p.staging)
    if registrar is not None:
        registrar.published(p)


def recheck_inputs(tfs, p: PartitionPlan, *, required: list[str]) -> None:
    """Right before publication: list the partition again. A name of ``required`` that is gone
    (full-ACID: everything the output makes obsolete; insert-only: the inputs), or a
    reader-visible file that appeared in anything the output makes obsolete (a streaming writer,
    a copy by hand), was not read, so publishing would hide it: refused (the caller discards
    the staging)."""
    from acidctl.acid.layout import list_partition
    from acidctl.compact.coverage import unread_files

    lst = list_partition(tfs, p.path, partition=p.partition)
    by_name = {e.name: e for e in lst.entries}
    gone = [n for n in required if n not in by_name]
    if gone:
        raise RefusedError(f"{p.display}: input {gone[0]} disappeared during the compaction; nothing was published")
    skipped = {sk["path"] for sk in p.skipped}
    unread = [
        u
        for u in unread_files(((n, by_name[n]) for n in p.obsoletes if n in by_name), p.read_paths, p.path)
        if u["path"] not in skipped
    ]
    if unread:
        raise RefusedError(
            f"{p.display}: {unread[0]['path']} appeared during the compaction and was not read; nothing was published",
            hint="run the compaction again",
        )


def discard_unpublished(
    tfs, plans: list[PartitionPlan], published: set[str], error: BaseException, *, registrar=None
) -> None:
    """After ``error``: remove every staging directory not yet published and tell the
    registrar (the metastore request is marked failed with the message, or the error's type
    for anything that is not an acidctl error, e.g. KeyboardInterrupt)."""
    from acidctl.errors import AcidctlError

    for p in plans:
        if p.runs and p.staging and p.staging not in published:
            discard(tfs, p.staging)
            if registrar is not None:
                registrar.failed(p, str(error) if isinstance(error, AcidctlError) else type(error).__name__)


def read_manifest(tfs, staging: str) -> dict | None:
    try:
        return json.loads(tfs.read_bytes(join_path(staging, MANIFEST)))
    except Exception:
        return None


def staging_dirs(tfs, partition_path: str) -> list:
    """``.acidctl-staging-*`` entries of one partition directory."""
    return [e for e in tfs.ls(partition_path) if e.name.startswith(STAGING_PREFIX)]


def interrupted(tfs, partition_path: str) -> list[dict]:
    """Staging directories whose publication started but did not finish."""
    out = []
    for e in staging_dirs(tfs, partition_path):
        m = read_manifest(tfs, e.path)
        if not m or m.get("state") != "publishing":
            continue
        published = [n for n in m.get("outputs", []) if tfs.exists(join_path(partition_path, n))]
        staged = [n for n in m.get("outputs", []) if tfs.exists(join_path(e.path, n))]
        out.append(
            {
                "staging": e.path,
                "display": tfs.display(e.path),
                "published": published,
                "staged": staged,
                "outputs": m.get("outputs", []),
                "partial": bool(published) and bool(staged),
            }
        )
    return out


def recover(tfs, partition_path: str, *, execute: bool = True) -> list[dict]:
    """Finish publications a crash interrupted (after at least one rename); staging
    directories of publications that had not renamed anything are left for ``clean``."""
    actions = []
    for it in interrupted(tfs, partition_path):
        if not it["partial"]:
            if not it["staged"]:  # everything published; only the staging shell is left
                actions.append({"action": "remove empty staging", "path": it["display"]})
                if execute:
                    discard(tfs, it["staging"])
            continue
        for n in it["outputs"]:
            if n in it["staged"]:
                target = join_path(partition_path, n)
                actions.append(
                    {
                        "action": "complete publish",
                        "path": tfs.display(target),
                        "from": tfs.display(join_path(it["staging"], n)),
                    }
                )
                if execute:
                    # on a store whose rename copies, a half-copied target is finished by
                    # copying again; an atomic rename never leaves a half-moved directory
                    if tfs.atomic_rename and tfs.exists(target):
                        raise RefusedError(f"cannot finish the interrupted publish: {tfs.display(target)} exists")
                    tfs.move_dir(join_path(it["staging"], n), target)
        if execute:
            discard(tfs, it["staging"])
    return actions
