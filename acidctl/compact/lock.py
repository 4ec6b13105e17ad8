"""The table lock that keeps two ``acidctl compact`` / ``clean --execute`` runs apart.

``<table>/.acidctl-compact.lock`` (hidden: Hive's readers never list it) is created atomically
and holds JSON: pid, host, start time, a random token and the command. Local paths use
``os.open(O_CREAT | O_EXCL)``; other fsspec filesystems open the path with mode ``"xb"``
(create-if-not-exists) where the implementation supports it, else fall back to
exists-check + write + read-back of the token (best effort, documented as not atomic).

A lock is *stale* when it was written on this host by a process that no longer runs. A
stale lock is reported (LockConflict, exit 6) and only removed with ``break_lock=True``
(``--break-lock``) or by ``acidctl clean --execute``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
import uuid

from acidctl.errors import LockConflict
from acidctl.fs import create_local_exclusive

LOCK_NAME = ".acidctl-compact.lock"


@dataclasses.dataclass
class LockInfo:
    path: str
    pid: int | None
    host: str | None
    started: float | None
    token: str | None
    command: str | None
    raw: str = ""

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

    def to_dict(self) -> dict:
        return {
            "path": self.path,
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
    so that compacting a partition and its table take the same lock."""
    from acidctl.acid.dirname import is_partition_dir

    parts = path.rstrip("/").split("/")
    while len(parts) > 1 and is_partition_dir(parts[-1]):
        parts.pop()
    return "/".join(parts) or "/"


def lock_path(tfs, root: str | None = None) -> str:
    return tfs.join(root or table_root(tfs.root), LOCK_NAME)


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
    return LockInfo(
        path=tfs.display(path),
        pid=d.get("pid"),
        host=d.get("host"),
        started=d.get("started"),
        token=d.get("token"),
        command=d.get("command"),
        raw=raw,
    )


class TableLock:
    """Context manager: ``with TableLock(tfs, command="compact"): ...``."""

    def __init__(self, tfs, *, command: str = "compact", break_lock: bool = False, table_root: str | None = None):
        self.tfs = tfs
        self.path = lock_path(tfs, table_root)
        self.command = command
        self.break_lock = break_lock
        self.token = uuid.uuid4().hex
        self.held = False
        self.broken: LockInfo | None = None

    def _payload(self) -> bytes:
        return json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.time(),
                "token": self.token,
                "command": self.command,
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

    def _acquire(self) -> "TableLock":
        if self._create():
            self.held = True
            return self
        info = read_lock(self.tfs, self.path)
        if info is None:  # released between our attempt and the read: try once more
            if self._create():
                self.held = True
                return self
            info = read_lock(self.tfs, self.path)
        if info is not None and self.break_lock:
            self.tfs.rm(self.path)
            self.broken = info
            if self._create():
                self.held = True
                return self
            info = read_lock(self.tfs, self.path)
        if info is None:
            raise LockConflict(f"cannot create the lock file {self.tfs.display(self.path)}")
        if info.stale:
            raise LockConflict(
                f"stale compaction lock {info.path} ({info.describe()}, process gone)",
                hint="run `acidctl clean --execute` or pass --break-lock",
            )
        raise LockConflict(
            f"table is locked by another acidctl {info.command or 'run'} ({info.describe()}): {info.path}",
            hint="wait for it to finish; --break-lock only if you are sure it is dead",
        )

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
