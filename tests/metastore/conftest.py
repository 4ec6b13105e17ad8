"""Real PostgreSQL and MariaDB servers for the metastore tests, started on loopback by the test
session itself (data in a temporary directory, a free port, torn down at session end), plus
SQLite.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` system user
(``runuser``); mariadbd is started with ``--user=mysql``. Without the server binaries the
fixtures skip — or FAIL when ``ACIDCTL_REQUIRE_SERVERS=1`` (CI sets it). Install them with
``scripts/install-test-servers.sh``.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
from tests.servers import unavailable

PG_PASSWORD = "pg-Secret-7q"  # must never appear in acidctl's output
MY_PASSWORD = "my-Secret-9z"


def _missing(what: str):
    msg = f"{what} (install with scripts/install-test-servers.sh)"
    unavailable(msg)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user(user: str) -> list[str]:
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    if os.path.exists(runuser):
        return [runuser, "-u", user, "--"]
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]


def _owned_tmpdir(prefix: str, user: str) -> str:
    # a RAM-backed directory when there is one: the servers' fsyncs cost nothing there
    shm, where = "/dev/shm", None
    try:
        st = os.statvfs(shm)
        if os.access(shm, os.W_OK) and st.f_bavail * st.f_frsize >= 1 << 30:  # >= 1 GiB free
            where = shm
    except OSError:
        pass
    d = tempfile.mkdtemp(prefix=prefix, dir=where)
    if os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        os.chown(d, pw.pw_uid, pw.pw_gid)
    os.chmod(d, 0o700)
    return d


def _pg_bin(name: str) -> str | None:
    cands = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if cands:
        return cands[-1]
    return shutil.which(name)


def _tail(path: str, n: int = 30) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server():
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl or not os.path.exists(os.path.join(os.path.dirname(pg_ctl), "postgres")):
        _missing("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root but there is no 'postgres' system user")
    user = "postgres"
    base = _owned_tmpdir("acidctl-pg-", user)
    data, log = os.path.join(base, "data"), os.path.join(base, "server.log")
    pwfile = os.path.join(base, "pw")
    with open(pwfile, "w") as f:
        f.write(PG_PASSWORD + "\n")
    if os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        os.chown(pwfile, pw.pw_uid, pw.pw_gid)
    pre = _as_user(user)
    r = subprocess.run(
        pre
        + [
            initdb,
            "-D",
            data,
            "-U",
            "postgres",
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-instructions",
            "--locale=C",
        ],
        capture_output=True,
        text=True,
        cwd=base,
    )
    if r.returncode != 0:
        pytest.fail(f"initdb failed: {r.stderr[-2000:]}", pytrace=False)
    port = _free_port()
    opts = (
        f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
    )
    r = subprocess.run(
        pre + [pg_ctl, "-D", data, "-o", opts, "-l", log, "-w", "-t", "60", "start"],
        capture_output=True,
        text=True,
        cwd=base,
    )
    if r.returncode != 0:
        pytest.fail(f"PostgreSQL did not start: {r.stderr[-1000:]}\n{_tail(log)}", pytrace=False)
    info = {"host": "127.0.0.1", "port": port, "user": "postgres", "password": PG_PASSWORD, "base": base}
    try:
        yield info
    finally:
        subprocess.run(pre + [pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True, cwd=base)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_gss_server(kdc):
    """A second PostgreSQL server that admits TCP clients by Kerberos only: ``hostgssenc ... gss``
    in pg_hba.conf (GSSAPI authentication over a GSSAPI-encrypted connection), the service key
    ``postgres/localhost`` in ``krb_server_keyfile``, ``log_connections`` on (its log says
    ``method=gss``). The role ``alice`` (the KDC's user, ``include_realm=0``) owns the database
    ``metastore`` (and ``plain``, where ``host ... gss`` also admits unencrypted GSSAPI logins).
    Clients connect to host ``localhost`` (the service principal's host name)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl or not os.path.exists(os.path.join(os.path.dirname(pg_ctl), "postgres")):
        _missing("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found")
    user = "postgres"
    base = _owned_tmpdir("acidctl-pggss-", user)
    data, log = os.path.join(base, "data"), os.path.join(base, "server.log")
    keytab = os.path.join(base, "postgres.keytab")
    kdc.add_principal("postgres/localhost", keytab=keytab, owner=user if os.geteuid() == 0 else None)
    pre = _as_user(user)
    env = {**os.environ, **kdc.env()}
    r = subprocess.run(
        pre
        + [initdb, "-D", data, "-U", "postgres", "--auth-local=trust", "-E", "UTF8", "--no-instructions", "--locale=C"],
        capture_output=True,
        text=True,
        cwd=base,
        env=env,
    )
    if r.returncode != 0:
        pytest.fail(f"initdb failed: {r.stderr[-2000:]}", pytrace=False)
    with open(os.path.join(data, "pg_hba.conf"), "w") as f:
        # database "plain": GSSAPI authentication with or without encryption (``host``)
        f.write(
            "local all all trust\n"
            f"host plain all 127.0.0.1/32 gss include_realm=0 krb_realm={kdc.realm}\n"
            f"hostgssenc all all 127.0.0.1/32 gss include_realm=0 krb_realm={kdc.realm}\n"
        )
    port = _free_port()
    opts = (
        f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
        f"-c full_page_writes=off -c log_connections=on -c krb_server_keyfile={keytab}"
    )
    r = subprocess.run(
        pre + [pg_ctl, "-D", data, "-o", opts, "-l", log, "-w", "-t", "60", "start"],
        capture_output=True,
        text=True,
        cwd=base,
        env=env,
    )
    if r.returncode != 0:
        pytest.fail(f"PostgreSQL (GSSAPI) did not start: {r.stderr[-1000:]}\n{_tail(log)}", pytrace=False)
    import psycopg

    with psycopg.connect(host=base, port=port, user="postgres", dbname="postgres", autocommit=True) as c:
        c.execute("CREATE ROLE alice LOGIN")
        c.execute('CREATE DATABASE "metastore" OWNER alice')
        c.execute('CREATE DATABASE "plain" OWNER alice')
    info = {"host": "localhost", "port": port, "user": "alice", "db": "metastore", "base": base, "log": log}
    try:
        yield info
    finally:
        subprocess.run(pre + [pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True, cwd=base)
        shutil.rmtree(base, ignore_errors=True)


def pg_url(info: dict, db: str, *, password: str | None = None) -> str:
    pw = info["password"] if password is None else password
    return f"postgresql+psycopg://{info['user']}:{pw}@{info['host']}:{info['port']}/{db}"


def pg_create_db(info: dict) -> str:
    import psycopg

    name = "ms_" + uuid.uuid4().hex[:12]
    with psycopg.connect(
        host=info["host"],
        port=info["port"],
        user=info["user"],
        password=info["password"],
        dbname="postgres",
        autocommit=True,
    ) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return pg_url(info, name)


# ---------------------------------------------------------------------------------------
# MariaDB
# ---------------------------------------------------------------------------------------


def _mariadb_bins():
    server = (
        shutil.which("mariadbd")
        or (os.path.exists("/usr/sbin/mariadbd") and "/usr/sbin/mariadbd")
        or shutil.which("mysqld")
        or (os.path.exists("/usr/sbin/mysqld") and "/usr/sbin/mysqld")
    )
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    return server or None, install


@pytest.fixture(scope="session")
def mysql_server():
    server, install = _mariadb_bins()
    if not server or not install:
        _missing("MariaDB server binaries (mariadbd, mariadb-install-db) not found")
    user = "mysql"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(user)
        except KeyError:
            _missing("running as root but there is no 'mysql' system user")
    base = _owned_tmpdir("acidctl-my-", user)
    data, sock, log = os.path.join(base, "data"), os.path.join(base, "mysqld.sock"), os.path.join(base, "err.log")
    # The server's own temporary directory: with the default (/tmp) a CI run once lost the
    # bootstrap's "#sql-temptable-*" file under it ("Could not remove temporary table ...,
    # error: 2", then "Unknown table 'mysql.tmp_user_sys'"); nothing else touches this one.
    tmp = os.path.join(base, "tmp")
    os.mkdir(tmp, 0o700)
    if os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
    cmd = [
        install,
        "--no-defaults",
        f"--datadir={data}",
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        "--skip-name-resolve",
        f"--tmpdir={tmp}",  # passed on to mariadbd --bootstrap
    ]
    if os.geteuid() == 0:
        cmd.append(f"--user={user}")
    for _attempt in (1, 2):  # a failed bootstrap leaves a half-made data directory: start afresh once
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=base)
        if r.returncode == 0:
            break
        shutil.rmtree(data, ignore_errors=True)
    else:
        pytest.fail(f"mariadb-install-db failed: {(r.stderr or r.stdout)[-2000:]}", pytrace=False)
    port = _free_port()
    args = [
        server,
        "--no-defaults",
        f"--datadir={data}",
        f"--socket={sock}",
        f"--port={port}",
        "--bind-address=127.0.0.1",
        f"--pid-file={os.path.join(base, 'mysqld.pid')}",
        f"--tmpdir={tmp}",
        f"--log-error={log}",
        "--skip-log-bin",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=64M",
        "--innodb-flush-log-at-trx-commit=0",
        "--innodb-doublewrite=0",
        "--innodb-flush-method=nosync",
        "--innodb-log-file-size=16M",
        "--character-set-server=utf8mb4",
    ]
    if os.geteuid() == 0:
        args.append(f"--user={user}")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=base)
    import pymysql

    deadline = time.time() + 60
    while True:
        try:
            c = pymysql.connect(unix_socket=sock, user="root", connect_timeout=2)
            break
        except Exception:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"MariaDB did not start:\n{_tail(log)}", pytrace=False)
            time.sleep(0.2)
    with c.cursor() as cur:
        cur.execute("CREATE USER 'hive'@'127.0.0.1' IDENTIFIED BY %s", (MY_PASSWORD,))
        cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'hive'@'127.0.0.1'")
        cur.execute("FLUSH PRIVILEGES")
    c.commit()
    c.close()
    info = {"host": "127.0.0.1", "port": port, "user": "hive", "password": MY_PASSWORD, "base": base, "socket": sock}
    try:
        yield info
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def my_url(info: dict, db: str, *, password: str | None = None) -> str:
    pw = info["password"] if password is None else password
    return f"mysql+pymysql://{info['user']}:{pw}@{info['host']}:{info['port']}/{db}"


def my_create_db(info: dict) -> str:
    import pymysql

    name = "ms_" + uuid.uuid4().hex[:12]
    c = pymysql.connect(host=info["host"], port=info["port"], user=info["user"], password=info["password"])
    with c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    c.close()
    return my_url(info, name)


# ---------------------------------------------------------------------------------------
# parametrised empty databases and initialised metastores
# ---------------------------------------------------------------------------------------

_counter = itertools.count()

BACKENDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def empty_db(request, backend, tmp_path):
    """A URL of a fresh, empty database on ``backend``."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/ms{next(_counter)}.db"
    if backend == "postgres":
        return pg_create_db(request.getfixturevalue("pg_server"))
    return my_create_db(request.getfixturevalue("mysql_server"))


@pytest.fixture(params=[3, 4], ids=["hive3", "hive4"])
def hive_version(request):
    return request.param


@pytest.fixture
def metastore(empty_db, hive_version):
    """(url, Recorder) of a freshly initialised metastore of ``hive_version`` on ``backend``."""
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import Recorder

    init_metastore(empty_db, hive_version=hive_version)
    rec = Recorder(empty_db)
    yield empty_db, rec
    rec.engine.dispose()
