"""The "nothing lost" rule for compaction and cleaning, as pure functions over listing models.

A compaction may make a directory (or an original file) obsolete only if it **read every file
in it that any reader could treat as data**, or the file is provably empty (0 bytes):

* Hive's readers read ``bucket_N`` files (limited by ``bucket_N_flush_length`` side files),
  original files ``NNNNNN_N[_copy_M]`` (in the partition, in original subdirectories such as
  ``HIVE_UNION_SUBDIR_n/``, in LOAD DATA deltas), any file under a base that is not a bucket
  file (raw base), and Hive 4 descends into nested directories of a base/delta;
* other engines read more: Impala reads **every non-hidden file** of a base/delta directory
  (e.g. a Hive Streaming file kept as ``delta_1_2/streaming.orc``).

So the reader-visible files of a directory are all its non-hidden files at any depth (a path
component starting with ``_`` or ``.`` hides; ``*_flush_length`` side files are metadata, not
data). :func:`unread_files` lists the ones a compaction did not read; the planner refuses (or,
with ``--skip-unreadable-files``, reports them as skipped) and :mod:`acidctl.compact.clean`
never deletes a directory that holds one (:func:`not_compactor_readable`), whoever compacted it.
"""

from __future__ import annotations

from typing import Iterable

from acidctl.acid.acidstate import Kind
from acidctl.acid.dirname import FLUSH_LENGTH_SUFFIX, BucketFile, OriginalFile, is_hidden_path
from acidctl.acid.listing import ChildEntry, FileInfo
from acidctl.fs import join_path


def reader_files(entry: ChildEntry) -> list[FileInfo]:
    """Every file of a child that some reader could treat as data (relative to the child for
    directories; the child itself for a file)."""
    if not entry.is_dir:
        return [] if is_hidden_path(entry.name) else [FileInfo(entry.name, entry.size, entry.mtime)]
    out = []
    for f in tuple(entry.files) + tuple(entry.nested):
        if is_hidden_path(f.name) or f.name.endswith(FLUSH_LENGTH_SUFFIX):
            continue
        out.append(f)
    return out


def compactor_reads(kind: Kind, rel: str) -> bool:
    """Whether acidctl's compactor (the same rules as Hive's: :func:`acidctl.acid.read.plan_sources`)
    reads the file ``rel`` of a directory of this kind."""
    if kind in (Kind.ORIGINAL_FILE, Kind.ORIGINAL_DIR):
        return True
    if "/" in rel:  # nested inside a base/delta: not read
        return False
    if kind is Kind.BASE:
        return True  # bucket files as ACID, anything else as a raw file
    if kind is Kind.DELTA:
        return BucketFile.parse(rel) is not None or OriginalFile.parse(rel) is not None
    if kind is Kind.DELETE_DELTA:
        return BucketFile.parse(rel) is not None
    return False


def unread_files(entries: Iterable[tuple[str, ChildEntry]], read: set[str], part_path: str) -> list[dict]:
    """Reader-visible, non-empty files of the given children (``(name, entry)``) whose full path is
    not in ``read``: each ``{"path", "bytes", "reason", "fix"}`` with ``path`` relative to the
    partition directory."""
    out = []
    for name, entry in entries:
        for f in reader_files(entry):
            full = join_path(part_path, name, f.name) if entry.is_dir else join_path(part_path, name)
            if full in read or f.size == 0:
                continue
            rel = join_path(name, f.name) if entry.is_dir else name
            out.append({"path": rel, "bytes": f.size, "reason": _why_unread(name, entry, f.name), "fix": _fix(rel)})
    return out


def not_compactor_readable(kind: Kind, entry: ChildEntry) -> list[FileInfo]:
    """Reader-visible, non-empty files of a directory that no compaction by Hive's rules reads
    (so no output can hold their rows): ``clean`` never deletes such a directory."""
    return [f for f in reader_files(entry) if f.size > 0 and not compactor_reads(kind, f.name)]


def _why_unread(name: str, entry: ChildEntry, rel: str) -> str:
    if "/" in rel and entry.is_dir:
        return "a file nested in a subdirectory: Hive 4 and other engines read it, the compaction does not"
    leaf = rel.rsplit("/", 1)[-1]
    if name.startswith("delete_delta_") and BucketFile.parse(leaf) is None:
        return "not a bucket_N file: Hive's readers skip it, other engines (Impala) may read it"
    if BucketFile.parse(leaf) is None:
        return "not a bucket_N file: Hive's readers skip it, other engines (Impala reads every non-hidden file) read it"
    return "not read by the compaction"


def _fix(rel: str) -> str:
    return (
        f"rename {rel} to a bucket_N name if it is ACID data of that bucket, or move it out of the table; "
        "or pass --skip-unreadable-files to compact without it (clean then keeps its directory)"
    )
