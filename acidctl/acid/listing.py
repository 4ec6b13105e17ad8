"""The listing model: what ``get_acid_state`` and the checks see of one table or partition
directory (../shared/spec/directory-state.md §3).

A :class:`DirListing` holds the children of the directory (name, is_dir, size, mtime), and for
child directories the files inside them plus the contents of the small marker files
(:mod:`acidctl.acid.markers`) already read. :mod:`acidctl.acid.layout` builds it from a
:class:`~acidctl.fs.TableFS`; tests build it from nested dicts (tests/acid/helpers.py).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from acidctl.acid.dirname import is_hidden_path


def epoch_ms(seconds: float | None) -> int | None:
    """A modification time (epoch seconds, as filesystems give it) in epoch milliseconds: the
    unit of every time acidctl prints (the metastore's, ``show``'s)."""
    return None if seconds is None else int(round(seconds * 1000))


@dataclasses.dataclass(frozen=True)
class FileInfo:
    """A file inside a child directory; ``name`` is relative to that directory."""

    name: str
    size: int = 0
    mtime: float | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "size": self.size, "mtime": epoch_ms(self.mtime)}


@dataclasses.dataclass(frozen=True)
class ChildEntry:
    """One child of a table/partition directory.

    For directories: ``files`` are the files inside (one level for base/delta directories;
    recursively, with relative paths such as ``sub/000000_0``, for other non-hidden
    directories), ``subdirs`` the names of directories found inside a base/delta (not
    descended), ``markers`` the contents of marker files read (name → bytes; absent = not
    present or not read), ``listed`` whether the directory was listed at all (hidden
    directories are not).
    """

    name: str
    is_dir: bool
    size: int = 0
    mtime: float | None = None
    files: tuple[FileInfo, ...] = ()
    subdirs: tuple[str, ...] = ()
    markers: Mapping[str, bytes] = dataclasses.field(default_factory=dict)
    listed: bool = True
    #: files inside ``subdirs`` of a base/delta directory (relative paths ``sub/name``, any depth;
    #: hidden subtrees skipped). Hive 3 readers do not read them, Hive 4 and Impala may: a
    #: compaction must never make such a directory obsolete without having read them.
    nested: tuple[FileInfo, ...] = ()

    @property
    def total_bytes(self) -> int:
        """File bytes (directories: every file listed inside, like Hive's ``sumDirSize``)."""
        if not self.is_dir:
            return self.size
        return sum(f.size for f in self.files)

    def has_file(self, name: str) -> bool:
        return any(f.name == name for f in self.files)

    def data_files(self) -> list[FileInfo]:
        """Non-hidden files (any path component hidden → not data)."""
        return [f for f in self.files if not is_hidden_path(f.name)]


@dataclasses.dataclass(frozen=True)
class DirListing:
    """The children of one table or partition directory (``path`` as the user would type it)."""

    path: str
    entries: tuple[ChildEntry, ...]
    partition: str | None = None
    fs_path: str | None = None  # the path on the filesystem (``path`` is for display)

    def child_path(self, name: str) -> str:
        if not self.path:
            return name
        return self.path + name if self.path.endswith("/") else self.path + "/" + name
