"""A Kerberized Hive 2.3.10 metastore (SASL/GSSAPI, service ``hive``) with its own MIT KDC, both
in one private network namespace (issue #24: "the 2.3 metastore with
``hive.metastore.sasl.enabled=true`` and a keytab from that KDC").

The JVM is started as tests/hive23/server.py starts the plain one (``unshare --net --pid --fork
--kill-child``), but its shell waits for a ``go`` file before ``exec java``: meanwhile a KDC
(tests/kerberos/realm.py, ``Realm(netns=...)``) starts in that namespace's loopback and writes the
service keytab ``hive/localhost@ACIDCTL.TEST`` the JVM logs in with. Server side
(spec iceberg-delta-thrift-kerberos.md §4–5; Hive 2.3's HiveMetaStore.startMetaStore and
HadoopThriftAuthBridge.Server): ``hive.metastore.sasl.enabled=true``,
``hive.metastore.kerberos.principal`` / ``hive.metastore.kerberos.keytab.file``, a core-site.xml
with ``hadoop.security.authentication=kerberos`` on the classpath, and
``-Djava.security.krb5.conf``. Clients join the namespace (``inside()``, ``run()``) with
``KRB5_CONFIG`` of that realm and a ticket cache of their own (``ticket()``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.hive23.server import PORT, Hive23, _die_with_parent, _site, jars_dir
from tests.hive23.server import missing as hive23_missing
from tests.kerberos.realm import Realm, missing_kdc_binaries

SERVICE_PRINCIPAL = "hive/localhost"


def missing() -> str | None:
    """Why the Kerberized metastore cannot run here, or None."""
    why = hive23_missing()
    if why:
        return why
    kdc = missing_kdc_binaries()
    if kdc:
        return f"MIT Kerberos binaries missing: {', '.join(kdc)} (scripts/install-test-servers.sh)"
    try:
        import kerberos  # noqa: F401
        import puresasl  # noqa: F401
    except ImportError:
        return "pure-sasl / kerberos (the client's SASL GSSAPI) are not installed"
    return None


def _with(site: str, props: dict[str, str]) -> str:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items())
    return site.replace("</configuration>", body + "</configuration>")


class KerberizedHive23(Hive23):
    """The metastore JVM with SASL on, and the KDC it trusts, in one network namespace."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.url = f"thrift://localhost:{PORT}?auth=kerberos"
        self.realm: Realm | None = None
        self.keytab = root / "hive.keytab"

    def start(self, timeout: float = 120.0) -> None:
        conf = self.root / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        self.warehouse.mkdir(parents=True, exist_ok=True)
        gate = self.root / "go"
        t0 = time.monotonic()
        # 1. the namespace (and the JVM's shell waiting for the KDC)
        java = self._java_command(conf)
        self.proc = subprocess.Popen(
            [
                "unshare",
                "--net",
                "--pid",
                "--fork",
                "--kill-child",
                "sh",
                "-c",
                f"ip link set lo up && while [ ! -e {gate} ]; do sleep 0.05; done && {java}",
            ],
            cwd=self.root,
            stdout=open(self.root / "stdout.log", "wb"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            # 2. the KDC on the namespace's loopback, the service keytab, the JVM's configuration
            self.realm = Realm(netns=self.netns)
            self.realm.start()
            princ = self.realm.add_principal(SERVICE_PRINCIPAL, keytab=str(self.keytab))
            (self.root / "krb5.conf").write_text(Path(self.realm.krb5_conf).read_text())
            (conf / "hive-site.xml").write_text(
                _with(
                    _site(self.root),
                    {
                        "hive.metastore.sasl.enabled": "true",
                        "hive.metastore.kerberos.principal": princ,
                        "hive.metastore.kerberos.keytab.file": str(self.keytab),
                        # the compactor is the plain fixture's business: no thread here changes
                        # the queue under a test comparing it with the server's answer
                        "hive.compactor.initiator.on": "false",
                        "hive.compactor.worker.threads": "0",
                    },
                )
            )
            (conf / "core-site.xml").write_text(
                '<?xml version="1.0"?>\n<configuration>\n'
                "<property><name>hadoop.security.authentication</name><value>kerberos</value></property>\n"
                "<property><name>hadoop.security.authorization</name><value>false</value></property>\n"
                "</configuration>\n"
            )
            (conf / "log4j2.properties").write_text(
                "status = error\nrootLogger.level = warn\nrootLogger.appenderRef.f.ref = F\n"
                "appender.f.type = File\nappender.f.name = F\n"
                f"appender.f.fileName = {self.root}/hive.log\n"
                "appender.f.layout.type = PatternLayout\nappender.f.layout.pattern = %d %p %c{1}: %m%n\n"
                # the keytab login and SASL/GSSAPI failures, for log_tail()
                "logger.sec.name = org.apache.hadoop.security\nlogger.sec.level = info\n"
                "logger.auth.name = org.apache.hadoop.hive.thrift\nlogger.auth.level = info\n"
            )
            gate.touch()
            # 3. until a Kerberized client takes and releases a lock
            deadline = t0 + timeout
            cc = str(self.root / "ccache-probe")
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the Kerberized Hive 2.3 metastore exited: {self.log_tail()}")
                if self._probe(cc):
                    self.started_in = time.monotonic() - t0
                    return
                time.sleep(0.5)
            raise RuntimeError(
                f"the Kerberized Hive 2.3 metastore did not answer in {timeout:.0f} s: {self.log_tail()}"
            )
        except BaseException:
            self.stop()
            raise

    def _java_command(self, conf: Path) -> str:
        cp = f"{conf}:{jars_dir()}/*"
        return (
            f"exec java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
            f"-Djava.security.krb5.conf={self.root}/krb5.conf "
            f"-Dlog4j.configurationFile={conf}/log4j2.properties "
            f"-Dderby.stream.error.file={self.root}/derby.log -cp '{cp}' "
            f"org.apache.hadoop.hive.metastore.HiveMetaStore -p {self.port}"
        )

    def _probe(self, ccache: str) -> bool:
        from hive_metastore.ttypes import LockComponent, LockLevel, LockRequest, LockType, UnlockRequest

        try:
            self.ticket(ccache)
            with self.kerberos_env(ccache), self.inside():
                sock_ok = _port_open(self.port)
            if not sock_ok:
                return False
            with self.client(ccache) as c:
                comp = LockComponent(type=LockType.SHARED_READ, level=LockLevel.DB, dbname="default")
                comp.operationType = 1  # SELECT (2.3 refuses UNSET)
                r = c.lock(LockRequest(component=[comp], user="acidctl-test", hostname="probe"))
                c.unlock(UnlockRequest(lockid=r.lockid))
        except Exception:
            return False
        return True

    def stop(self) -> None:
        super().stop()
        if self.realm is not None:
            self.realm.stop()
            self.realm = None

    # -- clients ------------------------------------------------------------------------

    def ticket(self, ccache: str) -> str:
        """alice's ticket (from her keytab) in ``ccache``, got inside the namespace."""
        assert self.realm is not None
        return self.realm.kinit(ccache=ccache)

    def env(self, ccache: str) -> dict[str, str]:
        assert self.realm is not None
        return {"KRB5_CONFIG": self.realm.krb5_conf, "KRB5CCNAME": "FILE:" + ccache}

    @contextlib.contextmanager
    def kerberos_env(self, ccache: str):
        """This process speaks Kerberos in the namespace's realm with ``ccache`` (restored after)."""
        new = self.env(ccache)
        old = {k: os.environ.get(k) for k in new}
        os.environ.update(new)
        try:
            yield
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    @contextlib.contextmanager
    def client(self, ccache: str, url: str | None = None):
        """A ThriftHiveMetastore client over SASL/GSSAPI (acidctl's own ThriftMetastore
        transport), connected inside the namespace with the ticket in ``ccache``."""
        from acidctl.metastore.thrift import ThriftMetastore

        ms = ThriftMetastore(url or self.url)
        with self.kerberos_env(ccache), self.inside():
            c = ms.client
        try:
            yield c
        finally:
            ms.close()

    def acidctl_env(self, ccache: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """The real console script inside the namespace with ``ccache``."""
        env = {**os.environ, **self.env(ccache), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        return self.run([sys.executable, "-m", "acidctl", "--metastore", self.url, *args], env=env, timeout=timeout)


def _port_open(port: int) -> bool:
    import socket

    try:
        socket.create_connection(("localhost", port), 0.5).close()
    except OSError:
        return False
    return True
