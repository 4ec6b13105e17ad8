"""acidctl's own compaction locks: they keep two ``acidctl compact`` / ``worker`` / ``clean
--execute`` / ``revert`` runs off the same data, while runs on **different partitions** of one
table go on side by side (Hive's Worker compacts partitions of one table concurrently too).

Every lock is a hidden file in the **table** directory (Hive's readers never list it):

* ``<table>/.acidctl-compact.lock`` — the whole table (an unpartitioned table's compaction,
  ``clean --execute``, ``revert``, a compaction of every partition);
* ``<table>/.acidctl-compact.<partition>.lock`` — one partition (``ds=2026-01-01``; a
  multi-level name has its ``/`` written ``%2F``).

Two locks conflict when one scope contains the other (the table contains every partition;
``ds=1`` contains ``ds=1/hr=2``). Taking a lock: create its file atomically, then list the
table directory; a conflicting lock file there → the new file is removed again and the run
refuses (:class:`~acidctl.errors.LockConflict`, exit 6) **before** it claims or writes anything.
Of two runs that race, the later creator always sees the earlier one's file, so at most one of
them proceeds (possibly neither: both refuse, nothing is harmed).

A file holds JSON: pid, host, start time, a random token and the command. Local paths use
``os.open(O_CREAT | O_EXCL)``; other fsspec filesystems open the path with mode ``"xb"``
(create-if-not-exists) where the implementation supports it, else fall back to
exists-check + write + read-back of the token (best effort, documented as not atomic).

A lock is *stale* when it was written on this host by a process that no longer runs. A
stale lock is reported (LockConflict, exit 6) and only removed with ``break_lock=True``
(``--break-lock``, which removes any conflicting lock), ``break_stale=True`` (only the stale
ones) or by ``acidctl clean --execute``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
import uuid
from urllib.parse import quote, unquote

from acidctl.errors import LockConflict
from acidctl.fs import create_local_exclusive

LOCK_NAME = ".acidctl-compact.lock"
_PREFIX, _SUFFIX = ".acidctl-compact.", ".lock"


@dataclasses.dataclass
class LockInfo:
    path: str
    pid: int | None
    host: str | None
    started: float | None
    token: str | None
    command: str | None
    raw: str = ""
    partition: str | None = None  # None: the whole table

    @property
    def age_seconds(self) -> float | None:
        return None if self.started is None else max(0.0, time.time() - self.started)

    @property
    def stale(self) -> bool:
        """Written on this host by a process that is gone (unknown hosts are never stale)."""
        if self.pid is None or self.host is None:
            return self.raw.strip() == ""  # empty/garbled: a writer died while creating it
        if self.host != socket.gethostname():
            return False
        return not pid_alive(self.pid)

    def describe(self) -> str:
        age = self.age_seconds
        age_txt = "" if age is None else f", {age:.0f}s old"
        return f"pid {self.pid} on {self.host}{age_txt}"

    @property
    def scope(self) -> str:
        return f"partition {self.partition}" if self.partition else "table"

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "partition": self.partition,
            "pid": self.pid,
            "host": self.host,
            "started": self.started,
            "command": self.command,
            "stale": self.stale,
            "age_seconds": self.age_seconds,
        }


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (killed child not yet reaped) counts as gone
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (OSError, IndexError):
        return True


def table_root(path: str) -> str:
    """The table directory of a table or partition path (trailing ``key=value`` levels removed),
    so that compacting a partition and its table use locks in the same directory."""
    from acidctl.acid.dirname import is_partition_dir

    parts = path.rstrip("/").split("/")
    while len(parts) > 1 and is_partition_dir(parts[-1]):
        parts.pop()
    return "/".join(parts) or "/"


_root_of = table_root


def root_partition(path: str) -> str | None:
    """The partition a partition path names below its table (``None`` for a table path)."""
    root = table_root(path)
    rel = path.rstrip("/")[len(root) :].strip("/")
    return rel or None


def lock_name(partition: str | None = None) -> str:
    """The file name of the lock of ``partition`` (``None``: the whole table)."""
    if not partition:
        return LOCK_NAME
    return _PREFIX + quote(partition.strip("/"), safe="=") + _SUFFIX


def name_partition(name: str) -> tuple[bool, str | None]:
    """(is a lock file, its partition) for a file name in the table directory."""
    if name == LOCK_NAME:
        return True, None
    if name.startswith(_PREFIX) and name.endswith(_SUFFIX) and len(name) > len(_PREFIX) + len(_SUFFIX):
        part = unquote(name[len(_PREFIX) : -len(_SUFFIX)])
        if "=" in part:
            return True, part
    return False, None


def overlaps(a: str | None, b: str | None) -> bool:
    """Whether two lock scopes share data (``None``: the whole table)."""
    if not a or not b:
        return True
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def lock_path(tfs, root: str | None = None, partition: str | None = None) -> str:
    return tfs.join(root or table_root(tfs.root), lock_name(partition))


def read_lock(tfs, path: str) -> LockInfo | None:
    try:
        if not tfs.exists(path):
            return None
        raw = tfs.read_bytes(path).decode("utf-8", "replace")
    except Exception:  # vanished between exists and read
        return None
    try:
        d = json.loads(raw)
    except ValueError:
        d = {}
    if not isinstance(d, dict):
        d = {}
    return LockInfo(
        path=tfs.display(path),
        pid=d.get("pid"),
        host=d.get("host"),
        started=d.get("started"),
        token=d.get("token"),
        command=d.get("command"),
        raw=raw,
        partition=name_partition(path.rstrip("/").rsplit("/", 1)[-1])[1],
    )


def _lock_files(tfs, root: str, entries=None) -> list[tuple[str, str | None]]:
    """(path, partition) of every lock file in the table directory ``root`` (``entries``: its
    listing when the caller has it already)."""
    if entries is None:
        try:
            entries = tfs.ls(root)
        except FileNotFoundError:
            return []
    out = []
    for e in entries:
        is_lock, part = name_partition(e.name)
        if is_lock:
            out.append((tfs.join(root, e.name), part))
    return out


def all_locks(tfs, root: str | None = None, entries=None) -> list[LockInfo]:
    """Every acidctl lock of the table (the table's own first, then partitions by name);
    ``entries``: the table directory's listing when the caller has it already."""
    root = root or table_root(tfs.root)
    out = []
    for path, _ in sorted(_lock_files(tfs, root, entries), key=lambda x: (x[1] is not None, x[1] or "")):
        info = read_lock(tfs, path)
        if info is not None:
            out.append(info)
    return out


def _conflict_error(info: LockInfo, partition: str | None) -> LockConflict:
    if info.stale:
        err = LockConflict(
            f"stale compaction lock {info.path} ({info.describe()}, process gone)",
            hint="run `acidctl clean --execute` or pass --break-lock",
        )
        err.stale = True
        return err
    what = "table" if not partition else f"partition {partition}"
    by = "" if info.partition == partition else f" ({info.scope})"
    return LockConflict(
        f"{what} is locked by another acidctl {info.command or 'run'}{by} ({info.describe()}): {info.path}",
        hint="wait for it to finish; --break-lock only if you are sure it is dead",
    )


class TableLock:
    """Context manager: ``with TableLock(tfs, command="compact"): ...`` — the whole table, or one
    partition with ``partition="k=v"``."""

    def __init__(
        self,
        tfs,
        *,
        command: str = "compact",
        break_lock: bool = False,
        table_root: str | None = None,
        partition: str | None = None,
        break_stale: bool = False,
    ):
        self.tfs = tfs
        self.root = table_root or _root_of(tfs.root)
        self.partition = partition.strip("/") if partition else None
        self.path = lock_path(tfs, self.root, self.partition)
        self.command = command
        self.break_lock = break_lock
        self.break_stale = break_stale
        self.token = uuid.uuid4().hex
        self.held = False
        self.broken: LockInfo | None = None  # the first lock removed with break_lock / break_stale
        self.broken_all: list[LockInfo] = []

    def _payload(self) -> bytes:
        return json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.time(),
                "token": self.token,
                "command": self.command,
                "partition": self.partition,
            }
        ).encode()

    def _create(self) -> bool:
        data = self._payload()
        if self.tfs.protocol in ("file", "local"):
            try:
                fd = create_local_exclusive(self.path)
            except FileExistsError:
                return False
            try:
                os.write(fd, data)
                os.fsync(fd)
            except BaseException:
                # interrupted (Ctrl-C arrives after the fsync) or failed before the lock is
                # held: the file is ours and nobody holds it, so it must not stay behind
                os.close(fd)
                os.unlink(self.path)
                raise
            os.close(fd)
            return True
        try:
            with self.tfs.fs.open(self.path, "xb") as f:
                f.write(data)
            return True
        except FileExistsError:
            return False
        except (ValueError, NotImplementedError, TypeError):
            pass
        # best effort for filesystems without exclusive create
        if self.tfs.exists(self.path):
            return False
        self.tfs.write_bytes(self.path, data)
        got = read_lock(self.tfs, self.path)
        return got is not None and got.token == self.token

    def acquire(self) -> "TableLock":
        try:
            return self._acquire()
        except BaseException:
            # a Ctrl-C (KeyboardInterrupt) can land after the file was created but before the
            # caller's try/finally is entered: a lock file carrying our token is ours to remove
            if not self.held:
                self._remove_own()
            raise

    def _remove_own(self) -> None:
        try:
            info = read_lock(self.tfs, self.path)
            if info is not None and info.token == self.token:
                self.tfs.rm(self.path)
        except Exception:
            pass

    def _may_break(self, info: LockInfo) -> bool:
        return self.break_lock or (self.break_stale and info.stale)

    def _break(self, info: LockInfo, path: str) -> None:
        try:
            self.tfs.rm(path)
        except FileNotFoundError:
            pass
        self.broken = self.broken or info
        self.broken_all.append(info)

    def _acquire(self) -> "TableLock":
        created = self._create()
        if not created:
            info = read_lock(self.tfs, self.path)
            if info is None:  # released between our attempt and the read: try once more
                created = self._create()
                if not created:
                    info = read_lock(self.tfs, self.path)
            if not created and info is not None and self._may_break(info):
                self._break(info, self.path)
                created = self._create()
                if not created:
                    info = read_lock(self.tfs, self.path)
            if not created:
                if info is None:
                    raise LockConflict(f"cannot create the lock file {self.tfs.display(self.path)}")
                raise _conflict_error(info, self.partition)
        # ours now; a lock of an overlapping scope (the table, or a partition inside ours) that
        # another run created first wins: ours goes again and this run refuses
        self.held = True
        for path, part in _lock_files(self.tfs, self.root):
            if path == self.path or not overlaps(part, self.partition):
                continue
            info = read_lock(self.tfs, path)
            if info is None or info.token == self.token:
                continue
            if self._may_break(info):
                self._break(info, path)
                continue
            self.release()
            raise _conflict_error(info, self.partition)
        return self

    def release(self) -> None:
        if not self.held:
            return
        info = read_lock(self.tfs, self.path)
        if info is not None and info.token == self.token:
            try:
                self.tfs.rm(self.path)
            except Exception:
                pass
        self.held = False

    def __enter__(self) -> "TableLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class LockSet:
    """The locks of several partitions (or of the whole table: ``[None]``), taken in name order,
    all or none; ``owned=False``: a set the caller already holds (releasing it is the caller's)."""

    def __init__(
        self,
        tfs,
        partitions: list,
        *,
        command: str = "compact",
        break_lock: bool = False,
        table_root: str | None = None,
        owned: bool = True,
    ):
        self.tfs = tfs
        self.root = table_root or _root_of(tfs.root)
        names = sorted({(p.strip("/") if p else None) for p in partitions}, key=lambda p: (p is not None, p or ""))
        if None in names:
            names = [None]  # the whole table covers every partition
        self.partitions: list[str | None] = names
        self.locks = [
            TableLock(tfs, command=command, break_lock=break_lock, table_root=self.root, partition=p) for p in names
        ]
        self.owned = owned

    @property
    def held(self) -> bool:
        return bool(self.locks) and all(lk.held for lk in self.locks)

    @property
    def broken(self) -> list[LockInfo]:
        return [b for lk in self.locks for b in lk.broken_all]

    def covers(self, partition: str | None) -> bool:
        """Whether these locks cover ``partition`` (``None``: the whole table)."""
        return any(
            p is None or (partition is not None and (partition == p or partition.startswith(p + "/")))
            for p in self.partitions
        )

    def acquire(self) -> "LockSet":
        try:
            for lk in self.locks:
                lk.acquire()
        except BaseException:
            self.release(force=True)
            raise
        return self

    def release(self, force: bool = False) -> None:
        if not self.owned and not force:
            return
        for lk in reversed(self.locks):
            lk.release()

    def __enter__(self) -> "LockSet":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def scope(tfs, partitions: list[str] | None) -> list[str | None]:
    """The lock scopes a run on ``tfs.root`` needs: the named partitions (relative to the table,
    a partition path's own levels first), the partition a partition path names, or the whole
    table."""
    prefix = root_partition(tfs.root)
    if partitions:
        return ["/".join(x for x in (prefix, p.strip().strip("/")) if x) for p in partitions]
    return [prefix]
