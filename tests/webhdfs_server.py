"""A small WebHDFS-speaking HTTP server over a local directory, for tests.

No real HDFS can run here, so acidctl's HDFS access (fsspec's ``webhdfs`` implementation,
used for ``hdfs://`` URLs) is tested against the WebHDFS REST wire protocol as the Hadoop
documentation specifies it: ``/webhdfs/v1/<path>?op=...`` with JSON ``FileStatus`` /
``FileStatuses`` bodies, ``RemoteException`` errors, and the NameNode → DataNode 307
redirects for OPEN, CREATE and APPEND (the "DataNode" is this same server under
``/datanode/``). Every request is counted per operation so tests can check how many listings
a command makes, and the credentials each NameNode request carried (``user.name``, a
``delegation`` token, ``doas``) are recorded in ``credentials``; ``requests`` keeps every
NameNode request's operation and parameters (``path`` added). New files and directories get
the mode a NameNode gives them: the request's ``permission`` (octal) or the WebHDFS default
(644 for CREATE, 755 for MKDIRS), minus ``umask_mode`` (fs.permissions.umask-mode, 022), and
FileStatus reports the real mode.

Delegation tokens as a secured NameNode handles them: ``GETDELEGATIONTOKEN`` (only for a caller
authenticated by SPNEGO, i.e. behind tests/kerberos/realm.py's apache2, which passes the
principal as ``X-Remote-User``; the token's owner is the ``doas`` user if any),
``RENEWDELEGATIONTOKEN`` (a new expiry ``token_renew_interval`` seconds on) and
``CANCELDELEGATIONTOKEN``; a request carrying a token this server issued and then cancelled,
or that expired, is refused with 403 ``InvalidToken``. Tokens it never issued are accepted
(tests that hand one in). The OPEN/CREATE/APPEND redirect carries ``delegation=``: the
caller's token, or for a SPNEGO caller a new one (Hadoop's
``NamenodeWebHdfsMethods.redirectURI``); ``redirect_delegation = False`` leaves it out (a
DataNode behind SPNEGO then answers 401). ``credentials`` rows end with the authenticated
principal (None when the request passed on a token alone).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlparse


class WebHDFS:
    def __init__(self, root: str):
        self.root = root
        self.ops: collections.Counter = collections.Counter()
        #: (op, user.name, delegation, doas, authenticated principal) of every NameNode request
        self.credentials: list[tuple[str, str | None, str | None, str | None, str | None]] = []
        #: token → {"owner", "expires" (epoch s), "cancelled", "renewals"} of tokens it issued
        self.tokens: dict[str, dict] = {}
        self.token_renew_interval = 3600.0
        self.redirect_delegation = True
        self._token_seq = 0
        #: (op, query parameters + "path") of every NameNode request
        self.requests: list[tuple[str, dict]] = []
        self.umask_mode = 0o022
        self._pending_modes: dict[str, int] = {}  # CREATEd paths → mode, applied when written
        handler = type("Handler", (_Handler,), {"server_state": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str = "/") -> str:
        return f"hdfs://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def local(self, hdfs_path: str) -> str:
        return os.path.join(self.root, hdfs_path.lstrip("/"))


def _status(path: str, suffix: str) -> dict:
    st = os.stat(path)
    is_dir = os.path.isdir(path)
    return {
        "accessTime": int(st.st_atime * 1000),
        "blockSize": 134217728,
        "childrenNum": 0,
        "fileId": st.st_ino,
        "group": "supergroup",
        "length": 0 if is_dir else st.st_size,
        "modificationTime": int(st.st_mtime * 1000),
        "owner": "hive",
        "pathSuffix": suffix,
        "permission": f"{stat.S_IMODE(st.st_mode):o}",
        "replication": 0 if is_dir else 3,
        "storagePolicy": 0,
        "type": "DIRECTORY" if is_dir else "FILE",
    }


def _mkdirs(local: str, mode: int) -> None:
    missing = []
    d = local
    while not os.path.exists(d):
        missing.append(d)
        d = os.path.dirname(d)
    os.makedirs(local, exist_ok=True)
    for d in missing:
        os.chmod(d, mode)


class _Handler(BaseHTTPRequestHandler):
    server_state: WebHDFS
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    # -- helpers --------------------------------------------------------------------------
    def _parse(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path.startswith("/webhdfs/v1"):
            self.server_state.credentials.append(
                (q.get("op", "").upper(), q.get("user.name"), q.get("delegation"), q.get("doas"), self._principal())
            )
            hdfs = unquote(u.path[len("/webhdfs/v1") :]) or "/"
            self.server_state.requests.append((q.get("op", "").upper(), {**q, "path": hdfs}))
        return u.path, q

    def _send(self, code: int, body: bytes = b"", ctype: str = "application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, code: int, obj):
        self._send(code, json.dumps(obj).encode())

    def _error(self, code: int, exc: str, msg: str):
        self._json(code, {"RemoteException": {"exception": exc, "javaClassName": f"java.io.{exc}", "message": msg}})

    def _mode(self, q: dict, default: int) -> int:
        """What a NameNode gives a new inode: the requested or default permission minus the umask."""
        perm = int(q["permission"], 8) if q.get("permission") else default
        return perm & ~self.server_state.umask_mode

    def _principal(self) -> str | None:
        """The SPNEGO-authenticated principal apache2 passed on (None: a token, or no proxy)."""
        v = self.headers.get("X-Remote-User")
        return v if v and v != "(null)" else None

    def _token_refused(self, q: dict) -> bool:
        """403 InvalidToken for a cancelled or expired token this server issued (answered)."""
        t = self.server_state.tokens.get(q.get("delegation") or "")
        if t is None:
            return False
        if t["cancelled"]:
            why = "can't be found in cache"
        elif t["expires"] < time.time():
            why = "is expired"
        else:
            return False
        self._error(403, "InvalidToken", f"token (HDFS_DELEGATION_TOKEN token for {t['owner']}) {why}")
        return True

    def _issue(self, owner: str) -> str:
        st = self.server_state
        st._token_seq += 1
        token = f"HAAT{st._token_seq:04d}{owner}"
        st.tokens[token] = {
            "owner": owner,
            "expires": time.time() + st.token_renew_interval,
            "cancelled": False,
            "renewals": 0,
        }
        return token

    def _redirect_query(self, q: dict) -> str:
        """``&delegation=...`` for a DataNode redirect, as a secured NameNode adds it."""
        if not self.server_state.redirect_delegation:
            return ""
        if q.get("delegation"):
            return "&delegation=" + quote(q["delegation"])
        who = self._principal()
        if who:
            return "&delegation=" + quote(self._issue(q.get("doas") or who.split("@")[0]))
        return ""

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _fs_path(self, url_path: str, prefix: str) -> tuple[str, str]:
        hdfs = unquote(url_path[len(prefix) :]) or "/"
        return hdfs, self.server_state.local(hdfs)

    # -- verbs ------------------------------------------------------------------------------
    def do_GET(self):
        path, q = self._parse()
        if self._token_refused(q):
            return
        if path.startswith("/datanode"):
            hdfs, local = self._fs_path(path, "/datanode")
            off, length = int(q.get("offset", 0)), q.get("length")
            with open(local, "rb") as f:
                f.seek(off)
                data = f.read(int(length)) if length is not None else f.read()
            return self._send(200, data, "application/octet-stream")
        hdfs, local = self._fs_path(path, "/webhdfs/v1")
        op = q.get("op", "").upper()
        self.server_state.ops[op] += 1
        if op == "GETDELEGATIONTOKEN":
            who = self._principal()
            if not who or q.get("delegation"):
                return self._error(
                    403, "IOException", "Delegation Token can be issued only with kerberos or web authentication"
                )
            return self._json(200, {"Token": {"urlString": self._issue(q.get("doas") or who.split("@")[0])}})
        if not os.path.exists(local):
            return self._error(404, "FileNotFoundException", f"File does not exist: {hdfs}")
        if op == "GETFILESTATUS":
            return self._json(200, {"FileStatus": _status(local, "")})
        if op == "LISTSTATUS":
            if not os.path.isdir(local):
                return self._json(200, {"FileStatuses": {"FileStatus": [_status(local, "")]}})
            items = [_status(os.path.join(local, n), n) for n in sorted(os.listdir(local))]
            return self._json(200, {"FileStatuses": {"FileStatus": items}})
        if op == "OPEN":
            loc = f"http://127.0.0.1:{self.server_state.port}/datanode{quote(hdfs)}?offset={q.get('offset', 0)}"
            if "length" in q:
                loc += f"&length={q['length']}"
            loc += self._redirect_query(q)
            return self._send(307, b"", headers={"Location": loc})
        return self._error(400, "IllegalArgumentException", f"unsupported GET op {op}")

    def do_PUT(self):
        path, q = self._parse()
        if self._token_refused(q):
            return
        if path.startswith("/datanode"):
            hdfs, local = self._fs_path(path, "/datanode")
            _mkdirs(os.path.dirname(local), 0o755 & ~self.server_state.umask_mode)  # CREATE makes parents
            with open(local, "wb") as f:
                f.write(self._body())
            mode = self.server_state._pending_modes.pop(hdfs, None)
            if mode is not None:
                os.chmod(local, mode)
            return self._send(201, b"", headers={"Location": f"hdfs://{hdfs}"})
        hdfs, local = self._fs_path(path, "/webhdfs/v1")
        op = q.get("op", "").upper()
        self.server_state.ops[op] += 1
        self._body()
        if op in ("RENEWDELEGATIONTOKEN", "CANCELDELEGATIONTOKEN"):
            t = self.server_state.tokens.get(q.get("token") or "")
            if not self._principal():
                return self._error(403, "IOException", f"{op} can be done only with kerberos authentication")
            if t is None or t["cancelled"]:
                return self._error(403, "InvalidToken", "token can't be found in cache")
            if op == "CANCELDELEGATIONTOKEN":
                t["cancelled"] = True
                return self._send(200)
            t["expires"] = time.time() + self.server_state.token_renew_interval
            t["renewals"] += 1
            return self._json(200, {"long": int(t["expires"] * 1000)})
        if op == "MKDIRS":
            _mkdirs(local, self._mode(q, 0o755))
            return self._json(200, {"boolean": True})
        if op == "CREATE":
            if os.path.exists(local) and q.get("overwrite", "false") != "true":
                return self._error(403, "FileAlreadyExistsException", f"{hdfs} already exists")
            self.server_state._pending_modes[hdfs] = self._mode(q, 0o644)
            loc = f"http://127.0.0.1:{self.server_state.port}/datanode{quote(hdfs)}"
            dq = self._redirect_query(q)
            loc += "?" + dq.lstrip("&") if dq else ""
            return self._send(307, b"", headers={"Location": loc})
        if op == "RENAME":
            dst = self.server_state.local(q["destination"])
            if not os.path.exists(local) or os.path.exists(dst):
                return self._json(200, {"boolean": False})
            os.rename(local, dst)
            return self._json(200, {"boolean": True})
        return self._error(400, "IllegalArgumentException", f"unsupported PUT op {op}")

    def do_POST(self):
        path, q = self._parse()
        if self._token_refused(q):
            return
        if path.startswith("/datanode"):
            hdfs, local = self._fs_path(path, "/datanode")
            with open(local, "ab") as f:
                f.write(self._body())
            return self._send(200)
        hdfs, local = self._fs_path(path, "/webhdfs/v1")
        op = q.get("op", "").upper()
        self.server_state.ops[op] += 1
        self._body()
        if op == "APPEND":
            if not os.path.exists(local):
                return self._error(404, "FileNotFoundException", f"File does not exist: {hdfs}")
            loc = f"http://127.0.0.1:{self.server_state.port}/datanode{quote(hdfs)}"
            dq = self._redirect_query(q)
            loc += "?" + dq.lstrip("&") if dq else ""
            return self._send(307, b"", headers={"Location": loc})
        return self._error(400, "IllegalArgumentException", f"unsupported POST op {op}")

    def do_DELETE(self):
        path, q = self._parse()
        if self._token_refused(q):
            return
        hdfs, local = self._fs_path(path, "/webhdfs/v1")
        self.server_state.ops["DELETE"] += 1
        if not os.path.exists(local):
            return self._json(200, {"boolean": False})
        if os.path.isdir(local):
            if q.get("recursive") != "true" and os.listdir(local):
                return self._error(403, "PathIsNotEmptyDirectoryException", f"{hdfs} is non empty")
            shutil.rmtree(local)
        else:
            os.remove(local)
        return self._json(200, {"boolean": True})
