"""A Hive 2.3.10 metastore (tests/hive23/server.py) on a private PostgreSQL, so that both its
Thrift API and its database are reachable from the tests (issue #24; spec
iceberg-delta-thrift-kerberos.md §4 "On PostgreSQL").

One private network namespace holds both: a holder process (``unshare --net``, ``sleep``) makes
it, PostgreSQL runs in it (``nsenter --net``, TCP 127.0.0.1:5432 for the JVM's JDBC driver) and
the JVM joins it (``Hive23(netns=...)``). The test process reaches the database through the
server's unix socket, a path in the file system that no network namespace hides: acidctl's
``postgresql+psycopg://postgres@/hive?host=DIR`` URL works without ``setns``.

Schema: Hive's ``TxnDbUtil.prepDb`` is Derby-only SQL, so the 2.3 transaction tables are made
the way ``hive-txn-schema-2.3.0.postgres.sql`` makes them (unquoted, i.e. lower-case, ``txns``,
``compaction_queue``, ... and one row in each sequence table) by acidctl's own Hive 2.3 schema
(``acidctl.metastore.hive2.init_hive2(txn_only=True)``), ``hive.in.test=false``, and DataNucleus'
``autoCreateAll`` creates the metadata tables on the metastore's first start. The JDBC driver is
Debian's ``libpostgresql-jdbc-java`` (scripts/install-test-servers.sh).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from tests.hive23.server import Hive23, _die_with_parent
from tests.hive23.server import missing as missing_hive23

JDBC_JAR = Path("/usr/share/java/postgresql.jar")
PG_PORT = 5432
DB = "hive"


def _pg_bin(name: str) -> str | None:
    import glob

    cands = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return cands[-1] if cands else shutil.which(name)


def missing() -> str | None:
    why = missing_hive23()
    if why:
        return why
    if not JDBC_JAR.exists():
        return f"no PostgreSQL JDBC driver at {JDBC_JAR} (libpostgresql-jdbc-java)"
    if not _pg_bin("initdb") or not _pg_bin("postgres"):
        return "no PostgreSQL server binaries (initdb, postgres)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no 'postgres' system user to run PostgreSQL as"
    return None


class Hive23Postgres:
    """PostgreSQL + the Hive 2.3 metastore JVM in one private network namespace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.holder: subprocess.Popen | None = None
        self.pg: subprocess.Popen | None = None
        # a short path (unix socket names are limited to 107 bytes) owned by postgres
        self.base = tempfile.mkdtemp(prefix="acidctl-h23pg-")
        pw = pwd.getpwnam("postgres")
        os.chown(self.base, pw.pw_uid, pw.pw_gid)
        os.chmod(self.base, 0o755)
        self.data = os.path.join(self.base, "data")
        self.hive: Hive23 | None = None
        #: acidctl's URL of the metastore database (unix socket: reachable from outside the namespace)
        self.db_url = f"postgresql+psycopg://postgres@/{DB}?host={self.base}&port={PG_PORT}"

    @property
    def netns(self) -> str:
        assert self.holder is not None
        return f"/proc/{self.holder.pid}/ns/net"

    def _pg(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = ["nsenter", f"--net={self.netns}", "runuser", "-u", "postgres", "--", *args]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=self.base, timeout=120)
        if check and r.returncode != 0:
            log = Path(self.base, "server.log")
            raise RuntimeError(
                f"{args[0]} failed: {r.stderr[-1500:]} {log.read_text()[-1500:] if log.exists() else ''}"
            )
        return r

    def start(self) -> None:
        self.holder = subprocess.Popen(
            ["unshare", "--net", "sh", "-c", "ip link set lo up && exec sleep infinity"],
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        import time

        deadline = time.monotonic() + 10
        while not self._lo_up():
            if time.monotonic() > deadline or self.holder.poll() is not None:
                raise RuntimeError("the private network namespace did not come up")
            time.sleep(0.05)
        self._pg(
            _pg_bin("initdb") or "initdb",
            "-D",
            self.data,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-instructions",
            "--locale=C",
        )
        # postgres in the foreground as pid 1's child of its own pid namespace: when unshare
        # dies (with pytest: PR_SET_PDEATHSIG, even on SIGKILL) --kill-child ends that namespace
        # and the kernel kills every postgres process in it — no daemon outlives the session
        log = open(os.path.join(self.base, "server.log"), "wb")  # noqa: SIM115
        self.pg = subprocess.Popen(
            ["nsenter", f"--net={self.netns}", "unshare", "--pid", "--fork", "--kill-child"]
            + ["runuser", "-u", "postgres", "--", _pg_bin("postgres") or "postgres", "-D", self.data]
            + ["-p", str(PG_PORT), "-k", self.base, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]
            + ["-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=60"],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.base,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self._wait_pg()
        import psycopg

        with psycopg.connect(host=self.base, port=PG_PORT, user="postgres", dbname="postgres", autocommit=True) as c:
            c.execute(f"CREATE DATABASE {DB}")
        from acidctl.metastore.hive2 import init_hive2

        init_hive2(self.db_url, txn_only=True)
        jdbc = f"jdbc:postgresql://127.0.0.1:{PG_PORT}/{DB}"
        self.hive = Hive23(
            self.root,
            site={
                "javax.jdo.option.ConnectionURL": jdbc,
                "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
                "javax.jdo.option.ConnectionUserName": "postgres",
                "javax.jdo.option.ConnectionPassword": "",
                # not Derby: TxnDbUtil.prepDb would run Derby DDL; the txn tables are there
                "hive.in.test": "false",
                # VERSION gets 2.3.0 (acidctl writes only to the schemas it knows: steps.py)
                "hive.metastore.schema.verification.record.version": "true",
                # the Initiator's cycle ends with cleanEmptyAbortedTxns (2.3's Initiator.run): every
                # 2 s, so what Hive's compactor leaves in TXNS settles within the tests' polls (the
                # tests' tables say no_auto_compaction: it queues nothing of its own)
                "hive.compactor.check.interval": "2s",
            },
            classpath=(str(JDBC_JAR),),
            netns=self.netns,
        )
        self.hive.start()

    @contextlib.contextmanager
    def hive_paused(self, timeout: float = 30.0):
        """Freeze the metastore JVM (SIGSTOP to its process group) at a moment it holds no open
        database transaction, so its Initiator/Worker/Cleaner cannot take acidctl's requests
        meanwhile (its Cleaner polls every second) and hold no row lock acidctl could wait on.
        Nothing may call its Thrift API inside the block."""
        import time

        import psycopg

        assert self.hive is not None and self.hive.proc is not None
        pgid = self.hive.proc.pid
        busy = (
            "select count(*) from pg_stat_activity where client_addr is not null and datname = %s and state <> 'idle'"
        )
        deadline = time.monotonic() + timeout
        with psycopg.connect(host=self.base, port=PG_PORT, user="postgres", dbname="postgres", autocommit=True) as c:
            while True:
                os.killpg(pgid, signal.SIGSTOP)
                time.sleep(0.05)
                row = c.execute(busy, (DB,)).fetchone()
                if row is not None and row[0] == 0:
                    break
                os.killpg(pgid, signal.SIGCONT)
                if time.monotonic() > deadline:
                    raise RuntimeError("the metastore JVM never left its database transactions")
                time.sleep(0.1)
        try:
            yield
        finally:
            os.killpg(pgid, signal.SIGCONT)

    def _wait_pg(self, timeout: float = 60.0) -> None:
        import time

        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(
                    host=self.base, port=PG_PORT, user="postgres", dbname="postgres", connect_timeout=2
                ).close()
                return
            except psycopg.OperationalError:
                if self.pg is None or self.pg.poll() is not None or time.monotonic() > deadline:
                    log = Path(self.base, "server.log")
                    raise RuntimeError(f"PostgreSQL did not start: {log.read_text()[-1500:] if log.exists() else ''}")
                time.sleep(0.1)

    def _lo_up(self) -> bool:
        r = subprocess.run(
            ["nsenter", f"--net={self.netns}", "ip", "-o", "link", "show", "lo"], capture_output=True, text=True
        )
        return r.returncode == 0 and "UP" in r.stdout.split("state")[-1][:10] or "LOOPBACK,UP" in r.stdout

    def stop(self) -> None:
        if self.hive is not None:
            self.hive.stop()
            self.hive = None
        if self.pg is not None:  # a scratch database: no clean shutdown needed
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pg.pid, signal.SIGKILL)
            self.pg.wait(30)
            self.pg = None
        if self.holder is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.holder.pid, signal.SIGKILL)
            self.holder.wait(30)
            self.holder = None
        shutil.rmtree(self.base, ignore_errors=True)
