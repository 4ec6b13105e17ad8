"""Filesystem access through fsspec.

Every path acidctl accepts may be a local path, ``file://``, ``hdfs://`` / ``webhdfs://``
(WebHDFS REST, through fsspec's ``webhdfs`` implementation), ``s3://`` (s3fs) or ``memory://``
(tests). ``--fs-option key=value`` options are passed to the filesystem constructor unchanged.

``hdfs://host:port/path`` is served by WebHDFS because no native libhdfs can be assumed on an
operator's laptop; give the NameNode's HTTP port (9870 by default) in the URL or with
``--fs-option port=...``.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import shutil
import stat
from typing import Any

from acidctl.errors import PathNotFound, StorageUnavailable, UsageError


#: fsspec protocols whose directory rename is a single atomic metadata operation
ATOMIC_RENAME_PROTOCOLS = frozenset({"file", "local", "hdfs", "webhdfs", "swebhdfs", "arrow_hdfs"})


@dataclasses.dataclass(frozen=True)
class Entry:
    """One listing entry: the full path, its base name, and what fsspec says about it."""

    path: str
    name: str
    is_dir: bool
    size: int
    mtime: float | None = None


def join_path(*parts: str | None) -> str:
    """Path components joined by one ``/`` (empty or None parts skipped; a part's trailing
    ``/`` dropped). Unlike ``posixpath.join``, a later absolute part does not discard the
    earlier ones, and a URL's ``scheme://`` stays intact in the first part."""
    return "/".join(p.rstrip("/") for p in parts if p)


class TableFS:
    """A resolved filesystem plus the root path the user named (picklable for Spark tasks)."""

    def __init__(self, url: str, options: dict[str, Any] | None = None):
        self.url = url
        self.options = dict(options or {})
        self._fs = None
        if _is_plain_local(url) and not self.options:
            # local paths need no fsspec for listing and reading (saves its import, ~60 ms,
            # on every start); it is loaded on first use of anything else
            self.protocol = "file"
            self.root = os.path.abspath(url[len("file://") :] if url.startswith("file://") else url)
            self.root = self.root.rstrip("/") or "/"
        else:
            self._fs, self.root = _resolve(url, self.options)
            self.protocol = self._fs.protocol if isinstance(self._fs.protocol, str) else self._fs.protocol[0]

    @property
    def fs(self):
        if self._fs is None:
            self._fs, _ = _resolve("file://" + self.root, self.options)
        return self._fs

    def __getstate__(self):
        return {"url": self.url, "options": self.options}

    def __setstate__(self, state):
        self.__init__(state["url"], state["options"])

    # -- paths ---------------------------------------------------------------------------
    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def display(self, path: str) -> str:
        """A path as the user would type it again (with the scheme for remote filesystems)."""
        if self.protocol in ("file", "local"):
            return path
        return self.fs.unstrip_protocol(path)

    # -- queries -------------------------------------------------------------------------
    def info(self, path: str) -> Entry:
        if self._fs is None:
            return _local_info(path)
        with _errors(path):
            d = self.fs.info(path)
        return _entry(d)

    def exists(self, path: str) -> bool:
        if self._fs is None:
            return os.path.exists(path)
        with _errors(path):
            return self.fs.exists(path)

    def isdir(self, path: str) -> bool:
        if self._fs is None:
            return os.path.isdir(path)
        with _errors(path):
            return self.fs.isdir(path)

    def ls(self, path: str) -> list[Entry]:
        """One directory level, sorted by name (one listing call)."""
        if self.protocol in ("file", "local"):
            return _local_ls(path)
        with _errors(path):
            items = self.fs.ls(path, detail=True)
        entries = [_entry(d) for d in items]
        # some implementations return the directory itself for a file path
        entries = [e for e in entries if e.path.rstrip("/") != path.rstrip("/")]
        return sorted(entries, key=lambda e: e.name)

    def subdirs(self, path: str) -> list[Entry]:
        """The directories directly under ``path``, sorted by name. Locally without a stat per
        entry (``os.scandir`` knows directories from the listing itself), so size and mtime
        are 0: for walks that only need names (``--assume-committed``'s highest write id)."""
        if self.protocol not in ("file", "local"):
            return [e for e in self.ls(path) if e.is_dir]
        prefix = path if path.endswith("/") else path + "/"
        with _errors(path):
            with os.scandir(path) as it:
                out = [
                    Entry(path=prefix + e.name, name=e.name, is_dir=True, size=0, mtime=0.0) for e in it if e.is_dir()
                ]
        out.sort(key=lambda e: e.name)
        return out

    def open(self, path: str, mode: str = "rb", **kw):
        if self._fs is None and mode == "rb":
            with _errors(path):
                return open(path, "rb")
        with _errors(path):
            return self.fs.open(path, mode, **kw)

    def read_bytes(self, path: str) -> bytes:
        if self._fs is None:
            with _errors(path), open(path, "rb") as f:
                return f.read()
        with _errors(path):
            return self.fs.cat_file(path)

    # -- mutations (compaction, clean, demo) --------------------------------------------
    # Plain local paths (``_fs`` None) go straight to os/shutil — what fsspec's
    # LocalFileSystem does for each — so that a compaction's driver never imports fsspec
    # (~0.1 s of a local run, bench/compact.py).
    def makedirs(self, path: str) -> None:
        with _errors(path):
            if self._fs is None:
                os.makedirs(path, exist_ok=True)
                return
            self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        with _errors(path):
            if self._fs is None:
                with open(path, "wb") as f:
                    f.write(data)
                return
            self.fs.pipe_file(path, data)

    @property
    def atomic_rename(self) -> bool:
        """Whether renaming a directory is one atomic metadata operation (POSIX filesystems,
        HDFS/WebHDFS). Object stores (s3, gcs, abfs, ...) and ``memory://`` copy file by file,
        so a reader can list a half-moved directory."""
        return self.protocol in ATOMIC_RENAME_PROTOCOLS

    def rename(self, src: str, dst: str) -> None:
        with _errors(src):
            if self._fs is None:
                shutil.move(src, dst)  # fsspec's local mv: os.rename where it can
                return
            self.fs.mv(src, dst, recursive=True)

    def move_dir(self, src: str, dst: str) -> None:
        """Move a flat directory (bucket files and markers) to ``dst``: one rename where that is
        atomic; elsewhere copy every file (overwriting what a crashed earlier attempt left) and
        then remove ``src``, so calling it again after a crash finishes the move."""
        if self.atomic_rename:
            self.rename(src, dst)
            return
        with _errors(src):
            files = [e for e in self.ls(src) if not e.is_dir]
            self.fs.makedirs(dst, exist_ok=True)
            # data first, markers last (a reader that checks markers sees them only at the end)
            for e in sorted(files, key=lambda e: (e.name.startswith("_"), e.name)):
                self.fs.copy(e.path, posixpath.join(dst, e.name))
            self.fs.rm(src, recursive=True)

    def rm(self, path: str, recursive: bool = False) -> None:
        with _errors(path):
            if self._fs is None:
                # as fsspec's LocalFileSystem.rm
                if os.path.isdir(path) and not os.path.islink(path):
                    if not recursive:
                        raise ValueError("Cannot delete directory, set recursive=True")
                    if os.path.abspath(path) == os.getcwd():
                        raise ValueError("Cannot delete current working directory")
                    shutil.rmtree(path)
                else:
                    os.remove(path)
                return
            self.fs.rm(path, recursive=recursive)


def _is_plain_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def _local_info(path: str) -> Entry:
    with _errors(path):
        st = os.stat(path)
    is_dir = stat.S_ISDIR(st.st_mode)
    return Entry(
        path=path,
        name=posixpath.basename(path.rstrip("/")) or "/",
        is_dir=is_dir,
        size=0 if is_dir else st.st_size,
        mtime=st.st_mtime,
    )


def _local_ls(path: str) -> list[Entry]:
    """Local listing with os.scandir: the same entries fsspec's LocalFileSystem.ls returns, at
    a fraction of its per-entry cost (``acidctl state`` lists every delta directory; see
    bench/state.py). Symlinks are followed, as fsspec does."""
    out = []
    prefix = path if path.endswith("/") else path + "/"
    with _errors(path):
        with os.scandir(path) as it:
            for e in it:
                try:
                    st = e.stat()
                except FileNotFoundError:  # removed while listing
                    continue
                is_dir = e.is_dir()
                out.append(
                    Entry(
                        path=prefix + e.name,
                        name=e.name,
                        is_dir=is_dir,
                        size=0 if is_dir else st.st_size,
                        mtime=st.st_mtime,
                    )
                )
    out.sort(key=lambda e: e.name)
    return out


def _entry(d: dict) -> Entry:
    name = d["name"].rstrip("/")
    is_dir = d.get("type") == "directory"
    mtime = d.get("mtime") or d.get("modificationTime") or d.get("LastModified")
    to_seconds = getattr(mtime, "timestamp", None)  # datetime (S3)
    if callable(to_seconds):
        mtime = to_seconds()
    elif isinstance(mtime, (int, float)) and mtime > 1e11:  # WebHDFS: milliseconds
        mtime = mtime / 1000.0
    return Entry(path=name, name=posixpath.basename(name), is_dir=is_dir, size=int(d.get("size") or 0), mtime=mtime)


def _resolve(url: str, options: dict[str, Any]):
    import fsspec  # light import; the filesystem implementations load lazily

    try:
        if url.startswith("hdfs://"):
            url = "webhdfs://" + url[len("hdfs://") :]
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as e:
        raise UsageError(
            f"no filesystem support for {url}: {e}",
            hint="install the extra, e.g. pip install 'acidctl[hdfs]' or 'acidctl[s3]'",
        ) from None
    except (ValueError, TypeError) as e:
        raise UsageError(f"cannot open filesystem for {url}: {e}") from None
    if fs.protocol in ("file", "local") or (isinstance(fs.protocol, tuple) and "file" in fs.protocol):
        path = path.rstrip("/") or "/"
    return fs, path.rstrip("/") or "/"


class _errors:
    """Map filesystem exceptions to acidctl's error classes (context manager)."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if ev is None:
            return False
        if isinstance(ev, FileNotFoundError):
            raise PathNotFound(f"no such file or directory: {self.path}") from None
        if isinstance(ev, (ConnectionError, TimeoutError)) or type(ev).__name__ in (
            "ConnectionError",
            "ConnectTimeout",
            "ReadTimeout",
            "NewConnectionError",
            "MaxRetryError",
            "EndpointConnectionError",
        ):
            raise StorageUnavailable(f"storage unavailable for {self.path}: {ev}") from None
        if isinstance(ev, NotADirectoryError):
            from acidctl.errors import NotATable

            raise NotATable(f"not a directory: {self.path}") from None
        if isinstance(ev, PermissionError):
            raise StorageUnavailable(f"permission denied: {self.path}") from None
        if type(ev).__name__ in _CREDENTIAL_ERRORS:
            raise StorageUnavailable(
                f"no usable credentials for {self.path}: {ev}",
                hint="configure the object store's credentials (environment, profile, "
                "or --fs-option key=... secret=...)",
            ) from None
        return False


#: botocore/s3fs/gcsfs/adlfs credential failures (matched by name: those packages are optional)
_CREDENTIAL_ERRORS = (
    "NoCredentialsError",
    "PartialCredentialsError",
    "CredentialRetrievalError",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "DefaultCredentialsError",
    "ClientAuthenticationError",
)
