"""A real Spark standalone cluster on loopback (one Master, one Worker) started from the
pip-installed pyspark, and an executor Python that cannot see the editable install of acidctl.

Used by tests/compact/test_cluster.py to run ``acidctl compact --master spark://...`` the way
an operator does: the executors are separate JVMs whose Python workers can import acidctl only
from the zip the driver ships with ``addPyFile``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

#: bound on every wait (JVM start-up, worker registration, shutdown)
TIMEOUT = 60.0

#: JVM flags that shorten start-up of the short-lived daemons, executors and driver (C1 only,
#: serial GC: a 2-core CI machine runs them next to the rest of the suite)
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    """The pip-installed pyspark package directory (bin/spark-class, jars/)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise RuntimeError(f"{home} has no bin/spark-class or jars/: not a full pyspark install")
    return home


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str):
    # loopback only: never through an http_proxy from the environment
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as r:
        return json.load(r)


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


@dataclass
class Cluster:
    url: str  # spark://127.0.0.1:PORT as the master reports it
    web: str  # http://127.0.0.1:PORT of the master's UI (its /json/ status)
    dir: Path  # work and log directories live here
    env: dict  # the environment the daemons run with

    @property
    def work_dir(self) -> Path:
        return self.dir / "worker-work"

    def status(self) -> dict:
        return _get_json(self.web + "/json/")

    def logs(self) -> str:
        out = []
        for name in ("master.log", "worker.log"):
            out.append(f"--- {name} ---\n{_tail(self.dir / name)}")
        for f in sorted(self.work_dir.glob("app-*/*/stderr")):
            out.append(f"--- {f.relative_to(self.dir)} ---\n{_tail(f)}")
        return "\n".join(out)


def _start(cmd: list, log: Path, env: dict) -> subprocess.Popen:
    with open(log, "wb") as f:
        # own process group: spark-class execs java, and the worker's executors are its children
        return subprocess.Popen(
            cmd,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=log.parent,
            start_new_session=True,
        )


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):  # worker (and its executors) first, then the master
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=TIMEOUT)
        # anything the daemon left behind in its group (executor JVMs, Python workers)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)


def _wait(what: str, cond, procs: list[subprocess.Popen], logs) -> object:
    deadline = time.monotonic() + TIMEOUT
    while True:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: {p.args[1]} exited with {p.returncode}\n{logs()}")
        try:
            got = cond()
        except OSError:
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {TIMEOUT:.0f} s\n{logs()}")
        time.sleep(0.2)


@contextlib.contextmanager
def standalone_cluster(base: Path, *, cores: int = 1, memory: str = "1g"):
    """Start a Master and one Worker on 127.0.0.1, wait until the worker is registered and
    ALIVE, yield a :class:`Cluster`, and kill both process groups afterwards."""
    home = spark_home()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError("java is not installed (Spark needs Java 17)")
    base.mkdir(parents=True, exist_ok=True)
    conf_dir, local_dirs = base / "conf", base / "local"
    for d in (conf_dir, local_dirs):
        d.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARK_", "PYSPARK_")) and k not in ("PYTHONPATH", "_JAVA_OPTIONS")
    }
    env.update(
        {
            "SPARK_HOME": str(home),
            "SPARK_CONF_DIR": str(conf_dir),  # empty: no spark-defaults/spark-env from anywhere
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(local_dirs),  # the executors' scratch space
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_DAEMON_JAVA_OPTS": FAST_JVM,
            # no REST submission server (one more port)
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }
    )
    spark_class = str(home / "bin" / "spark-class")
    port, web_port, worker_web = free_port(), free_port(), free_port()
    web = f"http://127.0.0.1:{web_port}"
    procs: list[subprocess.Popen] = []
    cluster = Cluster(url="", web=web, dir=base, env=env)
    try:
        procs.append(
            _start(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(web_port),
                ],
                base / "master.log",
                env,
            )
        )

        def master_alive():
            st = cluster.status()
            return st.get("status") == "ALIVE" and st.get("url")

        # the URL the master bound (it moves to the next port if ours was taken meanwhile)
        cluster.url = _wait("Spark master start", master_alive, procs, cluster.logs)
        procs.append(
            _start(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    cluster.url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--webui-port",
                    str(worker_web),
                    "--work-dir",
                    str(cluster.work_dir),
                ],
                base / "worker.log",
                env,
            )
        )

        def worker_alive():
            return any(w.get("state") == "ALIVE" for w in cluster.status().get("workers", []))

        _wait("Spark worker registration", worker_alive, procs, cluster.logs)
        yield cluster
    finally:
        _stop(procs)


# -- an executor Python without the editable install ------------------------------------------

_SITECUSTOMIZE = '''\
"""Installed by tests/spark_cluster.py: hide every acidctl this interpreter could import from
its environment (the editable install's finder, source trees on sys.path), and log where
acidctl is imported from."""
import os
import sys
from importlib.machinery import PathFinder

sys.meta_path[:] = [f for f in sys.meta_path
                    if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path_hooks[:] = [h for h in sys.path_hooks
                     if not getattr(h, "__module__", "").startswith("__editable__")]
sys.path[:] = [p for p in sys.path if not os.path.exists(os.path.join(p or ".", "acidctl"))]
for _name in [m for m in sys.modules if m.startswith("__editable__")]:
    del sys.modules[_name]


class _LogAcidctlImport:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "acidctl":
            return None
        spec = PathFinder.find_spec(name, path)
        log = os.environ.get("ACIDCTL_TEST_IMPORT_LOG")
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()}\\t{os.getcwd()}\\t{spec.origin if spec else None}\\n")
        return spec


sys.meta_path.insert(0, _LogAcidctlImport)
'''


def hidden_acidctl_python(base: Path, import_log: Path) -> Path:
    """A shell wrapper around this venv's Python whose ``sitecustomize`` removes the editable
    install of acidctl (pyarrow, pyorc, numpy ... stay importable) and appends
    ``pid<TAB>cwd<TAB>origin`` of every top-level ``import acidctl`` to ``import_log``.

    Only the current directory (``sys.path[0]`` of ``-c``/``-m``, set after ``sitecustomize``
    runs) is not filtered: run it outside the source tree."""
    site = base / "hide-acidctl"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    wrapper = base / "python-without-acidctl"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH={shlex.quote(str(site))}"${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        f"ACIDCTL_TEST_IMPORT_LOG={shlex.quote(str(import_log))}\n"
        "export PYTHONPATH ACIDCTL_TEST_IMPORT_LOG\n"
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper
