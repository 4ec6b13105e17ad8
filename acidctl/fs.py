"""Filesystem access through fsspec.

Every path acidctl accepts may be a local path, ``file://``, ``hdfs://`` / ``webhdfs://``
(WebHDFS REST, through fsspec's ``webhdfs`` implementation), ``s3://`` (s3fs) or ``memory://``
(tests). ``--fs-option key=value`` options are passed to the filesystem constructor unchanged.

``hdfs://host:port/path`` is served by WebHDFS because no native libhdfs can be assumed on an
operator's laptop; give the NameNode's HTTP port (9870 by default) in the URL or with
``--fs-option port=...`` (which replaces the port of an ``hdfs://`` URL: Hive's locations name
the RPC port, ``hdfs://nn:8020/...``). :meth:`TableFS.hadoop_url` maps a path back to the URL
Hadoop clients open it by (the location's own scheme and authority).

Kerberized WebHDFS (``--fs-option kerberos=true``, SPNEGO through requests-kerberos): the
driver authenticates with the ticket cache; what it hands to other processes (local worker
processes, Spark executors: a pickled :class:`TableFS`) carries a delegation token it fetched
once instead (:func:`worker_options`), renewed while the command runs and cancelled at its end
(:func:`release_delegation_tokens`), as Hadoop's own clients do. A 401, a rejected token or a
DataNode error is one :class:`~acidctl.errors.AuthenticationFailed` /
:class:`~acidctl.errors.StorageUnavailable` line (:func:`_harden_webhdfs`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import posixpath
import shutil
import stat
import tempfile
import threading
import time
from typing import Any

from acidctl.errors import AuthenticationFailed, MissingExtra, PathNotFound, StorageUnavailable, UsageError, redact

log = logging.getLogger("acidctl.fs")


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


# -- permissions of what acidctl creates ---------------------------------------------------
# One rule for every file and directory acidctl creates (data, markers, staging, records,
# locks, trash, export output, the demo, SQLite metastores, metrics/HTML reports), on every
# engine: the mode Hive's own writers give. Locally a JVM creates files with 0666 and
# directories with 0777, both minus the process umask (0644/0755 under umask 022, 0640/0750
# under 027); on HDFS acidctl sends WebHDFS CREATE/MKDIRS without a ``permission`` parameter,
# so the NameNode applies its own defaults (644/755 minus fs.permissions.umask-mode), as for a
# FileSystem.create/mkdirs by Hive. New local entries also take the group of the directory
# they are created in where the process may give it (HDFS does so by itself: a new inode
# inherits its parent's group), so whoever could read what a compaction replaces can read
# its output. Spark executors and the local engine's worker processes apply the driver's
# umask around each task (:func:`run_in_umask`, :func:`iter_in_umask`).

FILE_CREATE_MODE = 0o666
DIR_CREATE_MODE = 0o777


def current_umask() -> int:
    """The process umask, read without changing it where Linux says it (``/proc/self/status``,
    no window in which another thread would create files with a different umask)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def new_file_mode(umask: int | None = None) -> int:
    """The mode of a new file: 0666 minus the umask (the process's when not given)."""
    return FILE_CREATE_MODE & ~(current_umask() if umask is None else umask)


def new_dir_mode(umask: int | None = None) -> int:
    """The mode of a new directory: 0777 minus the umask."""
    return DIR_CREATE_MODE & ~(current_umask() if umask is None else umask)


def adopt_parent_group(path: str) -> None:
    """Give a new local file or directory the group of its parent directory, as HDFS does for
    every new inode, where the process may (it owns the entry and belongs to the group, or is
    root); otherwise it keeps the group the OS gave it."""
    try:
        parent = os.stat(os.path.dirname(os.path.abspath(path)) or "/")
        st = os.lstat(path)
        if st.st_gid != parent.st_gid:
            os.chown(path, -1, parent.st_gid)
    except OSError:
        pass


def make_local_dirs(path: str) -> None:
    """``mkdir -p`` with the umask's directory mode; every directory created takes its parent's
    group (:func:`adopt_parent_group`)."""
    path = os.path.abspath(path)
    missing = []
    p = path
    while p and not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    os.makedirs(path, mode=DIR_CREATE_MODE, exist_ok=True)
    for d in reversed(missing):
        adopt_parent_group(d)


def open_local_new(path: str, mode: str = "wb", **kw):
    """Open a local file for writing (created with 0666 minus the umask, its parent's group)."""
    f = open(path, mode, **kw)
    adopt_parent_group(path)
    return f


def create_local_exclusive(path: str) -> int:
    """``O_CREAT | O_EXCL`` create of a local file (a lock): the descriptor; FileExistsError
    when it exists."""
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_CREATE_MODE)
    adopt_parent_group(path)
    return fd


def local_temp_file(*, dir: str | None, prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp`` whose file gets the mode of a new file (mkstemp's own is 0600):
    for files written aside and then renamed into place (ORC writer, metrics textfile), so
    the renamed file is what a direct create would have made. Private scratch files that are
    never renamed into a shared place (``dir=None``) keep 0600."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=dir)
    if dir is not None:
        try:
            os.fchmod(fd, new_file_mode())
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        adopt_parent_group(path)
    return fd, path


def run_in_umask(umask: int, fn, *args):
    """``fn(*args)`` with the process umask set to ``umask`` (a task in a worker process that
    may have another umask than the driver that planned it), the old one restored after."""
    old = os.umask(umask)
    try:
        return fn(*args)
    finally:
        os.umask(old)


def iter_in_umask(umask: int, body, items):
    """A Spark ``mapPartitions`` body run with the driver's umask (see :func:`run_in_umask`)."""
    old = os.umask(umask)
    try:
        yield from body(items)
    finally:
        os.umask(old)


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
            if self.protocol in WEBHDFS_PROTOCOLS:
                _harden_webhdfs(self._fs)

    @property
    def fs(self):
        if self._fs is None:
            self._fs, _ = _resolve("file://" + self.root, self.options)
        return self._fs

    def __getstate__(self):
        # what another process gets: a delegation token instead of the driver's Kerberos login
        return {"url": self.url, "options": worker_options(self)}

    def __setstate__(self, state):
        self.__init__(state["url"], state["options"])

    # -- paths ---------------------------------------------------------------------------
    def local_path(self, path: str) -> str:
        """A local path without ``file://`` (fsspec's LocalFileSystem accepts both)."""
        return path[len("file://") :] if path.startswith("file://") else path

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def display(self, path: str) -> str:
        """A path as the user would type it again (with the scheme for remote filesystems)."""
        if self.protocol in ("file", "local"):
            return path
        return self.fs.unstrip_protocol(path)

    # The inverse of the hdfs:// → webhdfs:// mapping of :func:`_resolve`: a Hadoop client
    # (Spark, Trino, Hive) opens a file of an HDFS table by the table location's own scheme and
    # authority (``hdfs://nn:8020``, from SDS.LOCATION or the path the user gave), while acidctl
    # reads the same path through WebHDFS; the path part is the same.

    def _hadoop_prefix(self) -> str | None:
        """``scheme://authority`` of the URL an HDFS filesystem was named by (None elsewhere)."""
        if self.protocol not in WEBHDFS_PROTOCOLS:
            return None
        scheme, _, rest = self.url.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"

    def hadoop_url(self, path: str) -> str:
        """The URL Hadoop clients open ``path`` by: on HDFS the scheme and authority of the URL
        this filesystem was named by (``hdfs://nn:8020/...``, not WebHDFS's endpoint), elsewhere
        :meth:`display`."""
        prefix = self._hadoop_prefix()
        if prefix is None:
            return "file://" + self.local_path(path) if self.protocol in ("file", "local") else self.display(path)
        return prefix + "/" + path.lstrip("/")

    def hadoop_path(self, url: str) -> str | None:
        """This filesystem's path of a URL :meth:`hadoop_url` gives (None: not one of its URLs)."""
        prefix = self._hadoop_prefix()
        if prefix is None or not url.startswith(prefix + "/"):
            return None
        return url[len(prefix) :]

    # -- queries -------------------------------------------------------------------------
    def info(self, path: str) -> Entry:
        if self._fs is None:
            return _local_info(path)
        with _errors(path, self):
            d = self.fs.info(path)
        return _entry(d)

    def exists(self, path: str) -> bool:
        if self._fs is None:
            return os.path.exists(path)
        with _errors(path, self):
            return self.fs.exists(path)

    def isdir(self, path: str) -> bool:
        if self._fs is None:
            return os.path.isdir(path)
        with _errors(path, self):
            return self.fs.isdir(path)

    def ls(self, path: str) -> list[Entry]:
        """One directory level, sorted by name (one listing call)."""
        if self.protocol in ("file", "local"):
            return _local_ls(path)
        with _errors(path, self):
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
        with _errors(path, self):
            with os.scandir(path) as it:
                out = [
                    Entry(path=prefix + e.name, name=e.name, is_dir=True, size=0, mtime=0.0) for e in it if e.is_dir()
                ]
        out.sort(key=lambda e: e.name)
        return out

    def open(self, path: str, mode: str = "rb", **kw):
        if self._fs is None and mode == "rb":
            with _errors(path, self):
                return open(path, "rb")
        if self.protocol in ("file", "local") and mode in ("wb", "xb") and not kw:
            with _errors(path, self):
                return open_local_new(self.local_path(path), mode)
        with _errors(path, self):
            return self.fs.open(path, mode, **kw)

    def read_bytes(self, path: str) -> bytes:
        if self._fs is None:
            with _errors(path, self), open(path, "rb") as f:
                return f.read()
        with _errors(path, self):
            return self.fs.cat_file(path)

    # -- mutations (compaction, clean, demo) --------------------------------------------
    # Plain local paths (``_fs`` None) go straight to os/shutil — what fsspec's
    # LocalFileSystem does for each — so that a compaction's driver never imports fsspec
    # (~0.1 s of a local run, bench/compact.py).
    def makedirs(self, path: str) -> None:
        with _errors(path, self):
            if self.protocol in ("file", "local"):
                make_local_dirs(self.local_path(path))
                return
            # WebHDFS MKDIRS without ``permission``: the NameNode's default (see above)
            self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        with _errors(path, self):
            if self.protocol in ("file", "local"):
                with open_local_new(self.local_path(path), "wb") as f:
                    f.write(data)
                return
            self.fs.pipe_file(path, data)

    def put_local(self, local_path: str, path: str) -> None:
        """Move a finished local file (written aside, :func:`local_temp_file`) to ``path``: a
        rename locally, an upload (WebHDFS CREATE without ``permission``) elsewhere."""
        with _errors(path, self):
            if self.protocol in ("file", "local"):
                shutil.move(local_path, self.local_path(path))
                return
            self.makedirs(path.rsplit("/", 1)[0])
            self.fs.put_file(local_path, path)
            os.unlink(local_path)

    @property
    def atomic_rename(self) -> bool:
        """Whether renaming a directory is one atomic metadata operation (POSIX filesystems,
        HDFS/WebHDFS). Object stores (s3, gcs, abfs, ...) and ``memory://`` copy file by file,
        so a reader can list a half-moved directory."""
        return self.protocol in ATOMIC_RENAME_PROTOCOLS

    def rename(self, src: str, dst: str) -> None:
        with _errors(src, self):
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
        with _errors(src, self):
            files = [e for e in self.ls(src) if not e.is_dir]
            self.fs.makedirs(dst, exist_ok=True)
            # data first, markers last (a reader that checks markers sees them only at the end)
            for e in sorted(files, key=lambda e: (e.name.startswith("_"), e.name)):
                self.fs.copy(e.path, posixpath.join(dst, e.name))
            self.fs.rm(src, recursive=True)

    def rm(self, path: str, recursive: bool = False) -> None:
        with _errors(path, self):
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
            if "port" in options:
                # Hive's locations name the NameNode's RPC port (hdfs://nn:8020/...); WebHDFS is
                # on its HTTP port, given as --fs-option port=9870: that one is used
                from urllib.parse import urlsplit, urlunsplit

                u = urlsplit(url)
                if u.port is not None:
                    netloc = u.netloc.rsplit(":", 1)[0]
                    url = urlunsplit((u.scheme, netloc, u.path, u.query, u.fragment))
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as e:
        if options.get("kerberos") and (e.name or "").split(".")[0] in _KERBEROS_MODULES:
            from acidctl.kerberos import EXTRA_HINT

            raise MissingExtra(
                f"--fs-option kerberos=true needs requests-kerberos, which is not installed ({e.name})",
                hint=EXTRA_HINT,
            ) from None
        extra = "s3" if url.startswith("s3") else "hdfs" if "hdfs" in url.split("://")[0] else None
        raise MissingExtra(
            f"no filesystem support for {url}: {e}",
            hint=f"pip install 'acidctl[{extra}]'" if extra else "install the fsspec implementation of this scheme",
        ) from None
    except (ValueError, TypeError) as e:
        raise UsageError(f"cannot open filesystem for {url}: {e}") from None
    if fs.protocol in ("file", "local") or (isinstance(fs.protocol, tuple) and "file" in fs.protocol):
        path = path.rstrip("/") or "/"
    return fs, path.rstrip("/") or "/"


class _errors:
    """Map filesystem exceptions to acidctl's error classes (context manager)."""

    def __init__(self, path: str, tfs: TableFS | None = None):
        self.raw = path
        self.tfs = tfs

    @property
    def path(self) -> str:
        """The path as the user named it: with the scheme and host of a remote filesystem
        (``hdfs://nn:8020/wh/t``, ``s3://bucket/t``), as is on the local one."""
        if self.tfs is None:
            return self.raw
        try:
            local = self.tfs.protocol in ("file", "local")
            return self.tfs.display(self.raw) if local else self.tfs.hadoop_url(self.raw)
        except Exception:  # noqa: BLE001 - an error message must not fail on its own path
            return self.raw

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


# -- Kerberized WebHDFS: SPNEGO, delegation tokens, DataNode answers ---------------------------

WEBHDFS_PROTOCOLS = ("webhdfs", "webHDFS", "swebhdfs")
#: what ``--fs-option kerberos=true`` imports (requests-kerberos → pyspnego → gssapi/krb5)
_KERBEROS_MODULES = ("requests_kerberos", "spnego", "gssapi", "krb5")
#: options that name the driver's own login; another process gets ``token=`` instead (fsspec
#: refuses a token together with user/proxy_to: the token carries the (proxied) user itself)
_LOGIN_OPTIONS = ("kerberos", "kerb_kwargs", "user", "password", "proxy_to")


def _webhdfs_host(fs) -> str:
    from urllib.parse import urlparse

    return urlparse(fs.url).netloc


def _harden_webhdfs(fs) -> None:
    """Make fsspec's WebHDFS client fail loudly: its session raises :class:`AuthenticationFailed`
    for a 401 (after requests-kerberos has tried SPNEGO) or a rejected delegation token, and
    a DataNode answer other than 2xx/3xx is an error (fsspec returns a DataNode read's body
    without checking the status: a 401 page would come back as file bytes). Idempotent: fsspec
    caches filesystem instances."""
    cls = _checked_session_class()
    if not isinstance(fs.session, cls):
        fs.session.__class__ = cls
    fs.session.acidctl_kerberos = bool(getattr(fs, "kerb", False))
    if fs.session.acidctl_kerberos:
        # requests-kerberos logs a failed SPNEGO step at ERROR with a traceback; with nothing
        # configured Python's last-resort handler would print it: the 401 below says it once
        kl = logging.getLogger("requests_kerberos")
        if not kl.handlers:
            kl.addHandler(logging.NullHandler())


_CHECKED_SESSION: Any = None


def _checked_session_class():
    global _CHECKED_SESSION
    if _CHECKED_SESSION is None:
        import requests

        class CheckedSession(requests.Session):
            acidctl_kerberos = False

            def request(self, method, url, *args, **kwargs):
                r = super().request(method, url, *args, **kwargs)
                if r.status_code == 401:
                    raise _unauthorized(r, kerberos=self.acidctl_kerberos)
                if r.status_code == 403 and _remote_exception(r)[0] == "InvalidToken":
                    raise AuthenticationFailed(
                        f"{_host_of(r.url)} rejected the delegation token (InvalidToken): {_remote_exception(r)[1]}",
                        hint=_TOKEN_HINT,
                    )
                if r.status_code >= 400 and _remote_exception(r)[0] is None:
                    # no RemoteException for fsspec to map (a proxy's page, or a body
                    # requests-kerberos emptied because the answer was not mutually
                    # authenticated): fsspec would raise a bare HTTPError
                    raise _http_error(r, "")
                return r

            def get(self, url, *args, **kwargs):
                # fsspec's DataNode reads (OPEN's redirect target) and checksum fetches; the
                # NameNode's own calls go through request() and fsspec's RemoteException handling
                r = super().get(url, *args, **kwargs)
                if r.status_code >= 400:
                    raise _http_error(r, "DataNode ")
                return r

        _CHECKED_SESSION = CheckedSession
    return _CHECKED_SESSION


_TOKEN_HINT = "pass a fresh delegation token with --fs-option token, or use --fs-option kerberos=true with a ticket"


def _http_error(r, role: str) -> Exception:
    """A failed WebHDFS answer as acidctl's error (no query string: it may hold a token)."""
    exc, msg = _remote_exception(r)
    path = _path_of(r.url)
    where = f"{_host_of(r.url)}{path}"
    if r.status_code == 404 or exc == "FileNotFoundException":
        return PathNotFound(f"no such file or directory: {path} ({role}{where})")
    if r.status_code == 403 and not msg:
        return StorageUnavailable(f"permission denied: {path} ({role}{where} answered HTTP 403)")
    return StorageUnavailable(f"{role}{where} answered HTTP {r.status_code}{': ' + msg if msg else ''}")


def _host_of(url: str) -> str:
    from urllib.parse import urlparse

    return urlparse(url).netloc


def _path_of(url: str) -> str:
    """A URL's path without its query (which may hold a delegation token)."""
    from urllib.parse import unquote, urlparse

    path = unquote(urlparse(url).path)
    return path[len("/webhdfs/v1") :] if path.startswith("/webhdfs/v1/") else path


def _remote_exception(r) -> tuple[str | None, str]:
    """(exception, message) of a WebHDFS ``RemoteException`` body, else (None, "")."""
    try:
        e = r.json()["RemoteException"]
        return e.get("exception"), redact(str(e.get("message", "")).splitlines()[0][:300])
    except Exception:  # noqa: BLE001 - not JSON (an HTML 401 page from a proxy)
        return None, ""


def _unauthorized(r, *, kerberos: bool) -> AuthenticationFailed:
    from acidctl.kerberos import KINIT_HINT, host_hint, ticket_problem

    host = _host_of(r.url)
    path = _path_of(r.url)
    if "delegation=" in (r.request.url or ""):
        return AuthenticationFailed(f"{host} refused the delegation token (HTTP 401 for {path})", hint=_TOKEN_HINT)
    if kerberos:
        why = ticket_problem() or "the server did not accept the ticket"
        hint = host_hint(host) or KINIT_HINT
        return AuthenticationFailed(f"Kerberos (SPNEGO) authentication to {host} failed: {why}", hint=hint)
    return AuthenticationFailed(
        f"{host} requires authentication (HTTP 401 for {path})",
        hint="a Kerberized cluster: --fs-option kerberos=true with a ticket from kinit "
        "(pip install 'acidctl[kerberos]'), or --fs-option token=DELEGATION_TOKEN",
    )


class _TokenLease:
    """One delegation token the driver fetched (``GETDELEGATIONTOKEN``) for its worker processes
    and executors, kept alive as Hadoop's own clients keep theirs: renewed at 90% of its
    remaining life (Hadoop's ``org.apache.hadoop.fs.DelegationTokenRenewer``: ``renewalTime =
    now + delay - delay/10``) and cancelled when the filesystem is done with it
    (``removeRenewAction`` → ``cancel``); here at the end of the command. The first renewal
    right after fetching tells the expiry (Spark's ``HadoopFSDelegationTokenProvider`` learns
    the renewal interval the same way)."""

    def __init__(self, fs):
        self.fs = fs
        self.host = _webhdfs_host(fs)
        self.token: str = fs.get_delegation_token()  # renewer: the (proxied) user itself
        self.expires_ms: int | None = None
        self.renewals = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self._renew()
        except AuthenticationFailed:
            raise
        except Exception as e:  # noqa: BLE001 - a token that cannot be renewed still works until it expires
            log.info("delegation token from %s cannot be renewed: %s", self.host, e)
            return
        self._thread = threading.Thread(target=self._run, name="acidctl-token-renewer", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        self.expires_ms = int(self.fs.renew_delegation_token(self.token))
        self.renewals += 1

    def _run(self) -> None:
        while True:
            remaining = max(0.0, (self.expires_ms or 0) / 1000.0 - time.time())
            if self._stop.wait(remaining - remaining / 10):
                return
            try:
                self._renew()
            except Exception as e:  # noqa: BLE001 - past its maximum lifetime: workers will say so
                log.warning("could not renew the delegation token from %s: %s", self.host, redact(str(e)))
                return

    def cancel(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.fs.cancel_delegation_token(self.token)
        except Exception as e:  # noqa: BLE001 - it expires by itself; the command's result stands
            log.warning("could not cancel the delegation token from %s: %s", self.host, redact(str(e)))


_LEASES: dict[tuple, _TokenLease] = {}
_LEASES_LOCK = threading.Lock()


def worker_options(tfs: TableFS) -> dict[str, Any]:
    """The filesystem options another process gets for ``tfs``: the same, except that a
    Kerberos login on WebHDFS becomes ``token=`` (one delegation token per NameNode and proxy
    user, fetched once per command). A NameNode that issues no tokens (security off) leaves
    the options as they are."""
    opts = tfs.options
    if not opts.get("kerberos") or opts.get("token") or tfs.protocol not in WEBHDFS_PROTOCOLS:
        return opts
    fs = tfs.fs
    key = (fs.url, opts.get("proxy_to"))
    with _LEASES_LOCK:
        lease = _LEASES.get(key)
        if lease is None:
            try:
                with _errors(tfs.root):
                    lease = _TokenLease(fs)
            except (ValueError, RuntimeError, StorageUnavailable) as e:
                # fsspec's ValueError: "No token available for this user/security context" (security
                # off); RuntimeError / a refusal: the NameNode's RemoteException (e.g. tokens
                # disabled): the other processes then log in themselves, as before
                log.info("no delegation token from %s (%s): workers use the same login", _webhdfs_host(fs), e)
                return opts
            if not _LEASES:
                import atexit

                atexit.register(release_delegation_tokens)  # a library caller's safety net
            _LEASES[key] = lease
    out = {k: v for k, v in opts.items() if k not in _LOGIN_OPTIONS}
    out["token"] = lease.token
    return out


def release_delegation_tokens() -> None:
    """Cancel every delegation token this process fetched (the CLI calls it when a command
    ends, whatever its outcome)."""
    with _LEASES_LOCK:
        leases = list(_LEASES.values())
        _LEASES.clear()
    for lease in leases:
        lease.cancel()
