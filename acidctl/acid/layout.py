"""Turn a table or partition directory on a :class:`~acidctl.fs.TableFS` into listing models.

One ``TableFS.ls`` call per directory level: the table root, each ``key=value`` partition level,
each base/delta directory, and each level of a non-ACID ("original") subdirectory. Only the small
marker files are read (``_orc_acid_version``, ``_metadata_acid``, ``*_flush_length``); data
files are never opened. Hidden children (``_tmp_*``, ``.hive-staging*`` ...) are not listed.
"""

from __future__ import annotations

import os

from acidctl.acid.listing import ChildEntry, DirListing, FileInfo
from acidctl.acid.markers import is_marker_name
from acidctl.acid.dirname import has_acid_prefix, is_hidden, is_partition_dir
from acidctl.errors import PathNotFound
from acidctl.fs import Entry, TableFS

#: marker / side files larger than this are recorded but not read
MAX_MARKER_BYTES = 1 << 20
_FIRST_READ = 4096
#: threads listing the children of one partition directory on remote filesystems (local and
#: memory listings are CPU-bound in Python: threads only add GIL contention there)
REMOTE_WORKERS = 8


def list_table(
    tfs: TableFS,
    path: str | None = None,
    *,
    read_markers: bool = True,
    workers: int | None = None,
    root_entries: list[Entry] | None = None,
) -> list[DirListing]:
    """Listings of every partition of a table (or the table itself when unpartitioned).

    A directory level is a *partition level* when it holds ``key=value`` directories and no
    base/delta directories and no non-hidden files; each ``key=value`` child is then walked
    (nested partition keys are followed). Otherwise the directory is a leaf (a partition, or an
    unpartitioned table) and becomes one :class:`DirListing`. Partitions come back sorted by
    their relative path (``p=1/q=a``). ``root_entries``: a list that receives the root's own
    entries (hidden ones included), so a caller needs no second listing of it.
    """
    root = tfs.root if path is None else path
    out: list[DirListing] = []
    entries = tfs.ls(root)
    if root_entries is not None:
        root_entries.extend(entries)
    _walk(tfs, root, root, entries, out, read_markers, workers)
    return out


def _is_partition_level(entries: list[Entry]) -> bool:
    visible = [e for e in entries if not is_hidden(e.name)]
    if not any(e.is_dir and is_partition_dir(e.name) for e in visible):
        return False
    return not any((not e.is_dir) or has_acid_prefix(e.name) for e in visible)


def _walk(
    tfs: TableFS,
    root: str,
    path: str,
    entries: list[Entry],
    out: list[DirListing],
    read_markers: bool,
    workers: int | None,
) -> None:
    if not _is_partition_level(entries):
        rel = path[len(root) :].strip("/") if path != root else None
        out.append(
            list_partition(
                tfs, path, entries=entries, partition=rel or None, read_markers=read_markers, workers=workers
            )
        )
        return
    for e in entries:
        if e.is_dir and is_partition_dir(e.name):
            _walk(tfs, root, e.path, tfs.ls(e.path), out, read_markers, workers)


def list_partition(
    tfs: TableFS,
    path: str,
    *,
    entries: list[Entry] | None = None,
    partition: str | None = None,
    read_markers: bool = True,
    workers: int | None = None,
) -> DirListing:
    """The listing model of one table/partition directory.

    ``entries``: the directory's own listing when the caller already has it (no second ``ls``).
    ``workers``: threads listing the child directories concurrently (1 = sequential; None =
    1 on local/memory filesystems, ``REMOTE_WORKERS`` otherwise); the number of ``ls`` calls
    is the same either way.
    """
    if entries is None:
        entries = tfs.ls(path)

    def child(e: Entry) -> ChildEntry:
        if not e.is_dir:
            return ChildEntry(e.name, False, e.size, e.mtime)
        if is_hidden(e.name):
            return ChildEntry(e.name, True, 0, e.mtime, listed=False)
        if has_acid_prefix(e.name):
            return _acid_dir(tfs, e, read_markers)
        files: list[FileInfo] = []
        _originals(tfs, e.path, "", files)
        return ChildEntry(e.name, True, 0, e.mtime, tuple(files))

    if workers is None:
        workers = 1 if tfs.protocol in ("file", "local", "memory") else REMOTE_WORKERS
    dirs = sum(1 for e in entries if e.is_dir)
    if workers > 1 and dirs > 1:
        # the listings are independent; threads overlap their latency (essential on HDFS/S3)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(workers, dirs)) as pool:
            children = list(pool.map(child, entries))
    else:
        children = [child(e) for e in entries]
    return DirListing(path=tfs.display(path), entries=tuple(children), partition=partition, fs_path=path)


def _acid_dir(tfs: TableFS, e: Entry, read_markers: bool) -> ChildEntry:
    files, subdirs, markers = [], [], {}
    nested: list[FileInfo] = []
    for f in tfs.ls(e.path):
        if f.is_dir:
            subdirs.append(f.name)
            if not is_hidden(f.name):
                # HIVE_UNION_SUBDIR_n/..., Hive 4 nested files: listed so that nothing a reader
                # could read is ever made obsolete unread (one ls per nested level, only here)
                _originals(tfs, f.path, f.name + "/", nested)
            continue
        files.append(FileInfo(f.name, f.size, f.mtime))
        if read_markers and is_marker_name(f.name) and f.size <= MAX_MARKER_BYTES:
            content = _read_small(tfs, f.path)
            if content is not None:
                markers[f.name] = content
    return ChildEntry(e.name, True, 0, e.mtime, tuple(files), tuple(subdirs), markers, nested=tuple(nested))


def _read_small(tfs: TableFS, path: str) -> bytes | None:
    """A marker file's bytes; None if it vanished between listing and reading."""
    if tfs.protocol in ("file", "local"):
        # plain os.read: an order of magnitude cheaper than fsspec's cat_file for 1-byte files
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                # a small first read: os.read allocates the whole buffer it is asked for, and a
                # 1 MiB buffer per 1-byte marker cost 6x the open + read (bench/state.py)
                data = os.read(fd, _FIRST_READ)
                if len(data) < _FIRST_READ:
                    return data
                parts = [data]
                size = len(data)
                while size <= MAX_MARKER_BYTES:
                    more = os.read(fd, MAX_MARKER_BYTES + 1 - size)
                    if not more:
                        break
                    parts.append(more)
                    size += len(more)
                return b"".join(parts)
            finally:
                os.close(fd)
        except FileNotFoundError:
            return None
        except PermissionError:
            return tfs.read_bytes(path)  # let TableFS map the error
    try:
        return tfs.read_bytes(path)
    except PathNotFound:
        return None


def _originals(tfs: TableFS, path: str, prefix: str, files: list[FileInfo]) -> None:
    """``findOriginals``: recurse through non-hidden subdirectories (one ``ls`` per level)."""
    for f in tfs.ls(path):
        if f.is_dir:
            if not is_hidden(f.name):
                _originals(tfs, f.path, prefix + f.name + "/", files)
        else:
            files.append(FileInfo(prefix + f.name, f.size, f.mtime))
