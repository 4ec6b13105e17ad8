"""A throwaway MIT Kerberos realm on loopback, and apache2 + mod_auth_gssapi as a SPNEGO front.

:class:`Realm` creates a KDC database in a temporary directory (``kdc.conf`` through
``KRB5_KDC_PROFILE``, ``kdb5_util create -s``), runs ``krb5kdc -n`` on a free 127.0.0.1 port
and writes a ``krb5.conf`` with DNS off and ``[domain_realm] localhost = REALM`` (service
principals come from the URL's host name: ``localhost``, never ``127.0.0.1``). Every process
that speaks Kerberos needs ``KRB5_CONFIG`` (Debian's krb5-user writes an ``/etc/krb5.conf`` for
another realm) and a ``KRB5CCNAME``: :meth:`Realm.env` gives both.

:class:`SpnegoProxy` runs ``apache2 -DFOREGROUND`` reverse-proxying a backend (the WebHDFS test
server) behind ``AuthType GSSAPI``; a request whose query carries ``delegation=`` passes without
SPNEGO (a Hadoop delegation token, checked by the backend), as a secured NameNode/DataNode
accepts either. The authenticated principal reaches the backend as ``X-Remote-User``.

Facts: shared/spec/iceberg-delta-thrift-kerberos.md section 5 (tried on this machine kind).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

REALM = "ACIDCTL.TEST"
KDC_BINARIES = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "klist")
SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in SBIN:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def missing_kdc_binaries() -> list[str]:
    return [b for b in KDC_BINARIES if which(b) is None]


def free_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (the KDC listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", port))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port")


def _connect_in(netns: str, port: int) -> None:
    """Connect to 127.0.0.1:PORT from inside the network namespace ``netns`` (a thread of its
    own enters it with setns(2) and ends there)."""
    import ctypes
    import threading

    err: list[BaseException] = []

    def probe() -> None:
        try:
            fd = os.open(netns, os.O_RDONLY)
            try:
                if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), "setns")
            finally:
                os.close(fd)
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            err.append(e)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    if err:
        raise OSError(str(err[0]))


def _wait_port(
    port: int, proc: subprocess.Popen, log: str, what: str, timeout: float = 30, netns: str | None = None
) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            if netns:
                _connect_in(netns, port)
                return
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise RuntimeError(f"{what} did not start:\n{_tail(log)}")
            time.sleep(0.05)


def _tail(path: str, n: int = 40) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


class Realm:
    """A running KDC. ``user`` (``alice``) has a keytab and a ticket in :attr:`ccache`."""

    user = "alice"

    def __init__(self, realm: str = REALM, *, netns: str | None = None):
        """``netns``: a network namespace (``/proc/PID/ns/net``) to run the KDC in; its clients
        (``kinit``, a JVM) must then run there too (``nsenter --net``)."""
        self.realm = realm
        self.netns = netns
        self.nsenter = ["nsenter", f"--net={netns}"] if netns else []
        self.dir = tempfile.mkdtemp(prefix="acidctl-krb-")
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.krb5_conf = os.path.join(self.dir, "krb5.conf")
        self.kdc_conf = os.path.join(self.dir, "kdc.conf")
        self.kdc_log = os.path.join(self.dir, "kdc.log")
        self.ccache = os.path.join(self.dir, "ccache-alice")
        self.user_keytab = os.path.join(self.dir, "alice.keytab")
        self.proc: subprocess.Popen | None = None

    # -- environment ------------------------------------------------------------------------
    def env(self, ccache: str | None = None) -> dict[str, str]:
        """What every Kerberos-speaking process needs (merged over ``os.environ`` by callers)."""
        return {
            "KRB5_CONFIG": self.krb5_conf,
            "KRB5_KDC_PROFILE": self.kdc_conf,
            "KRB5CCNAME": "FILE:" + (ccache or self.ccache),
        }

    def _run(self, *cmd: str, check: bool = True, env: dict | None = None, input: str | None = None):
        r = subprocess.run(
            list(cmd),
            capture_output=True,
            text=True,
            env={**os.environ, **self.env(), **(env or {})},
            input=input,
            timeout=60,
        )
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-1500:]}")
        return r

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> "Realm":
        d, r, p = self.dir, self.realm, self.port
        with open(self.kdc_conf, "w") as f:
            f.write(
                f"[kdcdefaults]\n kdc_ports = {p}\n kdc_tcp_ports = {p}\n\n"
                f"[realms]\n {r} = {{\n"
                f"  database_name = {d}/principal\n  key_stash_file = {d}/stash\n"
                f"  acl_file = {d}/kadm5.acl\n  admin_keytab = FILE:{d}/kadm5.keytab\n"
                f"  kdc_listen = 127.0.0.1:{p}\n  kdc_tcp_listen = 127.0.0.1:{p}\n"
                "  max_life = 10h 0m 0s\n  max_renewable_life = 7d 0h 0m 0s\n"
                "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }\n\n"
                f"[logging]\n kdc = FILE:{self.kdc_log}\n"
            )
        with open(os.path.join(d, "kadm5.acl"), "w") as f:
            f.write("")
        with open(self.krb5_conf, "w") as f:
            f.write(
                f"[libdefaults]\n default_realm = {r}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
                ' dns_canonicalize_hostname = false\n rdns = false\n qualify_shortname = ""\n'
                " udp_preference_limit = 1\n forwardable = true\n\n"
                f"[realms]\n {r} = {{\n  kdc = 127.0.0.1:{p}\n }}\n\n"
                f"[domain_realm]\n localhost = {r}\n .localhost = {r}\n"
            )
        self._run(which("kdb5_util") or "kdb5_util", "-r", r, "create", "-s", "-P", "kdc-master-Pw1")
        self.proc = subprocess.Popen(
            [*self.nsenter, which("krb5kdc") or "krb5kdc", "-n", "-r", r],
            env={**os.environ, **self.env()},
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(d, "krb5kdc.stderr"), "w"),
        )
        _wait_port(p, self.proc, self.kdc_log, "krb5kdc", netns=self.netns)
        self.add_principal(self.user, keytab=self.user_keytab)
        self.kinit()
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- principals and tickets -------------------------------------------------------------
    def principal(self, name: str) -> str:
        return name if "@" in name else f"{name}@{self.realm}"

    def add_principal(self, name: str, *, keytab: str, owner: str | None = None) -> str:
        """``addprinc -randkey`` + ``ktadd`` into ``keytab`` (kadmin.local exits 0 even when it
        fails: the keytab is checked with ``klist -k``); ``owner`` (a system user) may read it."""
        princ = self.principal(name)
        kadmin = which("kadmin.local") or "kadmin.local"
        self._run(kadmin, "-r", self.realm, "-q", f"addprinc -randkey {princ}")
        self._run(kadmin, "-r", self.realm, "-q", f"ktadd -k {keytab} {princ}")
        listed = self._run(which("klist") or "klist", "-k", keytab, check=False)
        if princ not in listed.stdout:
            raise RuntimeError(f"keytab {keytab} lacks {princ}: {listed.stdout}{listed.stderr}")
        if owner and os.geteuid() == 0:
            pw = pwd.getpwnam(owner)
            os.chown(keytab, pw.pw_uid, pw.pw_gid)
        os.chmod(keytab, 0o600)
        return princ

    def kinit(self, *, ccache: str | None = None, lifetime: str | None = None) -> str:
        """A ticket for ``alice`` from her keytab into ``ccache`` (default :attr:`ccache`)."""
        cc = ccache or self.ccache
        args = [*self.nsenter, which("kinit") or "kinit", "-k", "-t", self.user_keytab]
        if lifetime:
            args += ["-l", lifetime]
        self._run(*args, self.principal(self.user), env={"KRB5CCNAME": "FILE:" + cc})
        return cc


APACHE_MODULES = (
    "mpm_event",
    "authn_core",
    "authz_core",
    "authz_user",
    "auth_gssapi",
    "proxy",
    "proxy_http",
    "headers",
)
APACHE_MODULE_DIR = "/usr/lib/apache2/modules"


def missing_apache() -> list[str]:
    out = [] if which("apache2") else ["apache2"]
    out += [m for m in APACHE_MODULES if not os.path.exists(f"{APACHE_MODULE_DIR}/mod_{m}.so")]
    return out


class SpnegoProxy:
    """apache2 on ``localhost:PORT`` in front of ``http://127.0.0.1:BACKEND/`` with SPNEGO
    (``HTTP/localhost``), the ``delegation=`` bypass, and ``X-Remote-User`` for the backend."""

    def __init__(self, realm: Realm, backend_port: int):
        self.realm = realm
        self.backend_port = backend_port
        self.dir = tempfile.mkdtemp(prefix="acidctl-httpd-")
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.error_log = os.path.join(self.dir, "error.log")
        self.access_log = os.path.join(self.dir, "access.log")

    def start(self) -> "SpnegoProxy":
        d = self.dir
        run_user = "www-data" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        os.chmod(d, 0o755)
        keytab = os.path.join(d, "http.keytab")
        self.realm.add_principal("HTTP/localhost", keytab=keytab, owner=run_user)
        rcache = os.path.join(d, "rcache")
        os.makedirs(rcache)
        if os.geteuid() == 0:
            pw = pwd.getpwnam(run_user)
            os.chown(rcache, pw.pw_uid, pw.pw_gid)
        modules = "\n".join(f"LoadModule {m}_module {APACHE_MODULE_DIR}/mod_{m}.so" for m in APACHE_MODULES)
        user_lines = f"User {run_user}\nGroup {run_user}\n" if os.geteuid() == 0 else ""
        conf = os.path.join(d, "httpd.conf")
        with open(conf, "w") as f:
            f.write(
                f"ServerRoot {d}\n{modules}\n{user_lines}"
                f"ServerName localhost\nListen 127.0.0.1:{self.port}\nPidFile {d}/httpd.pid\n"
                f"DefaultRuntimeDir {d}\nMutex file:{d} default\nErrorLog {self.error_log}\nLogLevel warn\n"
                'LogFormat "%u %r %>s" plain\n'
                f"CustomLog {self.access_log} plain\n"
                "KeepAlive On\nTimeout 60\nAllowEncodedSlashes NoDecode\n"
                "<Location />\n"
                '  AuthType GSSAPI\n  AuthName "WebHDFS"\n'
                f"  GssapiCredStore keytab:{keytab}\n"
                "  GssapiAllowedMech krb5\n  GssapiBasicAuth Off\n"
                "  <RequireAny>\n"
                '    Require expr "%{QUERY_STRING} =~ /(^|&)delegation=[^&]/"\n'
                "    Require valid-user\n"
                "  </RequireAny>\n"
                "  RequestHeader set X-Remote-User expr=%{REMOTE_USER}\n"
                "</Location>\n"
                f"ProxyPass / http://127.0.0.1:{self.backend_port}/ nocanon\n"
                f"ProxyPassReverse / http://127.0.0.1:{self.backend_port}/\n"
            )
        env = {**os.environ, **self.realm.env(), "KRB5RCACHEDIR": rcache, "KRB5_KTNAME": keytab}
        self.proc = subprocess.Popen(
            [which("apache2") or "apache2", "-f", conf, "-DFOREGROUND"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(d, "apache.stderr"), "w"),
            cwd=d,
        )
        _wait_port(self.port, self.proc, os.path.join(d, "apache.stderr"), "apache2")
        return self

    def url(self, path: str = "/") -> str:
        return f"hdfs://localhost:{self.port}/{path.lstrip('/')}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: the parent stops its children
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
