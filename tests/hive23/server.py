"""A real Hive 2.3.10 metastore (with Hive's own Initiator, Worker and Cleaner) from the jars the
``pyspark`` wheel ships, run in a private network namespace (../shared/spec/
iceberg-delta-thrift-kerberos.md §4): it binds 0.0.0.0 and has no bind-host setting, so the
JVM runs only under ``unshare --net --pid --fork --kill-child`` and its clients join that
namespace — subprocesses through ``nsenter --net``, in-process clients through ``setns(2)``
on the connecting thread only (a connected socket stays in the namespace it was made in).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

CLONE_NEWNET = 0x40000000
PORT = 9083


def jars_dir() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if (jars / "hive-metastore-2.3.10.jar").exists() else None


def missing() -> str | None:
    """Why the metastore cannot run here, or None."""
    if jars_dir() is None:
        return "the pyspark wheel's hive-metastore-2.3.10 jars are not installed"
    for tool in ("java", "unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if os.geteuid() != 0:
        return "private network namespaces (unshare --net) need root here"
    return None


def _site(root: Path, overrides: dict[str, str] | None = None) -> str:
    props = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={root}/metastore_db;create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "datanucleus.connectionPoolingType": "dbcp",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": f"file://{root}/warehouse",
        "hive.support.concurrency": "true",
        "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager",
        # Derby only: TxnDbUtil.prepDb creates TXNS, HIVE_LOCKS, COMPACTION_QUEUE, ...
        "hive.in.test": "true",
        "hive.async.log.enabled": "false",
        "hive.compactor.initiator.on": "true",
        "hive.compactor.worker.threads": "1",
        # the Initiator's first pass runs at start-up on an empty metastore; its next one only
        # after the default 300 s, so only the requests the tests enqueue get compacted
        "hive.compactor.cleaner.run.interval": "1000ms",
        "hive.exec.scratchdir": f"{root}/scratch",
        "hive.exec.local.scratchdir": f"{root}/scratch-local",
        "mapreduce.framework.name": "local",
        "fs.defaultFS": "file:///",
    }
    props.update(overrides or {})
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


class Hive23:
    """One metastore JVM in its own network namespace."""

    def __init__(
        self,
        root: Path,
        *,
        site: dict[str, str] | None = None,
        classpath: tuple[str, ...] = (),
        netns: str | None = None,
    ) -> None:
        """``site``: hive-site.xml properties over the Derby defaults (another backend);
        ``classpath``: more jars (its JDBC driver); ``netns``: an existing network namespace
        (``/proc/PID/ns/net``) to run the JVM in instead of a new one — where its database runs."""
        self.root = root
        self.site = site
        self.classpath = classpath
        self.given_netns = netns
        self.proc: subprocess.Popen | None = None
        self.port = PORT
        self.url = f"thrift://localhost:{PORT}"
        self.warehouse = root / "warehouse"
        self.started_in = 0.0

    @property
    def netns(self) -> str:
        assert self.proc is not None
        return f"/proc/{self.proc.pid}/ns/net"

    def start(self, timeout: float = 90.0) -> None:
        conf = self.root / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "hive-site.xml").write_text(_site(self.root, self.site))
        (conf / "log4j2.properties").write_text(
            "status = error\nrootLogger.level = warn\nrootLogger.appenderRef.f.ref = F\n"
            "appender.f.type = File\nappender.f.name = F\n"
            f"appender.f.fileName = {self.root}/hive.log\n"
            "appender.f.layout.type = PatternLayout\nappender.f.layout.pattern = %d %p %c{1}: %m%n\n"
            "logger.c.name = org.apache.hadoop.hive.ql.txn.compactor\nlogger.c.level = info\n"
        )
        self.warehouse.mkdir(parents=True, exist_ok=True)
        cp = ":".join([str(conf), f"{jars_dir()}/*", *self.classpath])
        java = (
            f"exec java -Xmx768m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j.configurationFile={conf}/log4j2.properties "
            f"-Dderby.stream.error.file={self.root}/derby.log -cp '{cp}' "
            f"org.apache.hadoop.hive.metastore.HiveMetaStore -p {self.port}"
        )
        t0 = time.monotonic()
        if self.given_netns:
            # nsenter execs unshare, which stays in that namespace: self.netns names it too
            argv = [
                "nsenter",
                f"--net={self.given_netns}",
                "unshare",
                "--pid",
                "--fork",
                "--kill-child",
                "sh",
                "-c",
                java,
            ]
        else:
            argv = ["unshare", "--net", "--pid", "--fork", "--kill-child", "sh", "-c", f"ip link set lo up && {java}"]
        self.proc = subprocess.Popen(
            argv,
            cwd=self.root,
            stdout=open(self.root / "stdout.log", "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Hive 2.3 metastore exited: {self.log_tail()}")
            if self._ready():
                self.started_in = time.monotonic() - t0
                return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the Hive 2.3 metastore did not answer in {timeout:.0f} s: {self.log_tail()}")

    def _ready(self) -> bool:
        """The port answers and the txn tables exist: Derby's TxnDbUtil.prepDb runs when the
        compactor threads start, racing the first calls — a lock taken and released proves
        HIVE_LOCKS/NEXT_LOCK_ID are there."""
        try:
            with self.inside():
                socket.create_connection(("localhost", self.port), 0.5).close()
        except OSError:
            return False
        log = self.root / "hive.log"
        if not log.exists() or "AcidWriteSetService" not in log.read_text(errors="replace"):
            return False
        from hive_metastore.ttypes import LockComponent, LockLevel, LockRequest, LockType, UnlockRequest

        try:
            c, transport = client(self)
            try:
                comp = LockComponent(type=LockType.SHARED_READ, level=LockLevel.DB, dbname="default")
                comp.operationType = 1  # SELECT (2.3 refuses UNSET)
                r = c.lock(LockRequest(component=[comp], user="acidctl-test", hostname="probe"))
                c.unlock(UnlockRequest(lockid=r.lockid))
            finally:
                transport.close()
        except Exception:
            return False
        return True

    def log_tail(self, n: int = 3000) -> str:
        text = ""
        for name in ("stdout.log", "hive.log"):
            p = self.root / name
            if p.exists():
                text += p.read_text(errors="replace")[-n:]
        return text

    def stop(self) -> None:
        # the whole process group: unshare, and the JVM in its own pid namespace (a Derby
        # metastore in a scratch directory needs no graceful shutdown)
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
        self.proc = None

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Run the block's new connections in the metastore's network namespace (this thread)."""
        libc = ctypes.CDLL(None, use_errno=True)
        here = os.open(f"/proc/self/task/{threading_native_id()}/ns/net", os.O_RDONLY)
        there = os.open(self.netns, os.O_RDONLY)
        try:
            if libc.setns(there, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns into the metastore's network namespace")
            try:
                yield
            finally:
                if libc.setns(here, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")
        finally:
            os.close(here)
            os.close(there)

    def run(self, args: list[str], *, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run a command inside the namespace (``nsenter --net``)."""
        return subprocess.run(
            ["nsenter", f"--net={self.netns}", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )

    def acidctl(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        return self.run([sys.executable, "-m", "acidctl", "--metastore", self.url, *args], env=env, timeout=timeout)


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: unshare is killed with pytest (even by SIGKILL), and --kill-child takes
    the JVM along."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


def threading_native_id() -> int:
    import threading

    return threading.get_native_id()


def client(server: Hive23):
    """A ThriftHiveMetastore client connected inside the namespace (pyiceberg's bindings)."""
    from hive_metastore.ThriftHiveMetastore import Client
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    with server.inside():
        sock = TSocket.TSocket("localhost", server.port)
        transport = TTransport.TBufferedTransport(sock)
        transport.open()
    return Client(TBinaryProtocol.TBinaryProtocol(transport)), transport
