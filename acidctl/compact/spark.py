"""Spark as the distributed task runner: the session (created lazily, explicit conf) and the
one job that runs every planned bucket task.

``pyspark`` is imported only inside these functions, so ``acidctl --help`` never loads it.
The driver ships each :class:`~acidctl.compact.planner.BucketTask` as one RDD partition
(``parallelize(tasks, len(tasks))``); ``mapPartitions`` runs
:func:`acidctl.compact.task.run_tasks` in the executors' Python workers, which read and write
the table through :class:`~acidctl.fs.TableFS` (picklable) and send back small metrics dicts.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from acidctl.errors import AcidctlError, ExitCode, UnavailableError

#: applied unless the caller overrides them with ``--spark-conf``
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.memory": "1g",
    "spark.python.worker.reuse": "true",
    "spark.task.maxFailures": "1",
    "spark.app.name": "acidctl-compact",
    # what compaction needs and nothing more: no Hive catalog (acidctl reads the metastore
    # itself), no event log
    "spark.sql.catalogImplementation": "in-memory",
    "spark.eventLog.enabled": "false",
}


class SparkUnavailable(UnavailableError):
    """Spark (pyspark or Java) cannot be started."""


def session_conf(master: str, conf: dict | None = None) -> dict:
    out = dict(DEFAULT_CONF)
    out["spark.master"] = master
    # executors on this machine run the same interpreter as the driver
    out.setdefault("spark.pyspark.python", sys.executable)
    out.setdefault("spark.pyspark.driver.python", sys.executable)
    if master.startswith("local") or _loopback_master(master):
        # a local application, or a cluster whose master (so its workers) listen on loopback
        # only: keep the driver on loopback (Spark would pick a non-loopback interface when
        # the host name resolves to 127.0.0.1, which executors on loopback need not reach)
        out["spark.driver.bindAddress"] = "127.0.0.1"
        out["spark.driver.host"] = "127.0.0.1"
    quiet = _quiet_log4j_options()
    if quiet and "spark.driver.extraJavaOptions" not in (conf or {}):
        out["spark.driver.extraJavaOptions"] = quiet
    out.update(conf or {})
    return out


#: Spark's own log lines (start-up banner, WARNs) stay off stderr unless -v: acidctl's stderr is
#: for acidctl's one-line messages
_QUIET_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex{short}
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.jetty.name = org.sparkproject
logger.jetty.level = error
"""
# (Spark prints "Setting default log level" when the root level differs from the level of its
# own logger, WARN unless configured: both are ERROR here)


def _quiet_log4j_options() -> str | None:
    """``-Dlog4j2.configurationFile=`` of an ERROR-only configuration (written once per process),
    or None with ``-v`` (Spark's default logging)."""
    import atexit
    import logging
    import tempfile

    if logging.getLogger().isEnabledFor(logging.INFO):
        return None
    global _LOG4J_FILE
    if _LOG4J_FILE is None:
        fd, path = tempfile.mkstemp(prefix="acidctl-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(_QUIET_LOG4J)

        def remove(path: str = path) -> None:
            if os.path.exists(path):
                os.unlink(path)

        atexit.register(remove)
        _LOG4J_FILE = path
    return f"-Dlog4j2.configurationFile=file:{_LOG4J_FILE}"


_LOG4J_FILE: str | None = None


_LOOPBACK_HOSTS = ("localhost", "::1", "[::1]")


def _loopback_master(master: str) -> bool:
    """``spark://HOST:PORT[,HOST2:PORT2]`` whose every host is a loopback address."""
    if not master.startswith("spark://"):
        return False
    hosts = [hp.rsplit(":", 1)[0] for hp in master[len("spark://") :].split(",") if hp]
    return bool(hosts) and all(h.lower() in _LOOPBACK_HOSTS or h.startswith("127.") for h in hosts)


class _DeferredInterrupt:
    """Within the block, SIGINT only records itself (and runs ``on_signal`` in a thread); the
    caller raises KeyboardInterrupt at a safe point. A second Ctrl-C while waiting interrupts
    at once. Only on the main thread (signal handlers cannot be set elsewhere)."""

    def __init__(self, on_signal=None):
        self.on_signal = on_signal
        self.received = 0
        self._old = None

    def _handler(self, signum, frame):
        self.received += 1
        if self.received > 1:
            raise KeyboardInterrupt
        sys.stderr.write("\racidctl: interrupting (stopping Spark) ...\n")
        if self.on_signal is not None:
            threading.Thread(target=self.on_signal, daemon=True).start()

    def __enter__(self):
        import signal

        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        import signal

        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def stop_session(spark) -> None:
    """Stop a session and its JVM (the gateway process pyspark started), quietly."""
    try:
        spark.stop()
    except Exception:
        pass
    try:
        from pyspark import SparkContext

        gw = SparkContext._gateway
        proc = getattr(gw, "proc", None)
        if gw is not None:
            gw.shutdown()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        SparkContext._gateway = None
        SparkContext._jvm = None
    except Exception:
        pass


def _quiet_py4j() -> None:
    """py4j logs every broken connection with a traceback; acidctl reports one line instead
    (``-v`` keeps them)."""
    import logging

    lg = logging.getLogger("py4j")
    if lg.getEffectiveLevel() > logging.DEBUG and not logging.getLogger().handlers:
        lg.setLevel(logging.CRITICAL)
        lg.propagate = False


def probe_master(master: str, *, timeout: float = 3.0) -> None:
    """Fail fast on a standalone master nobody answers: Spark itself retries for about a minute
    and then blames Java. ``spark://h1:7077,h2:7077`` (HA) needs one reachable host."""
    import socket

    # SparkSubmit.prepareSubmitEnvironment (apache/spark v4.0.0,
    # core/src/main/scala/org/apache/spark/deploy/SparkSubmit.scala): "yarn", or a URL starting
    # with spark, k8s or local; anything else makes the JVM print a stack trace and exit, which
    # pyspark reports as JAVA_GATEWAY_EXITED: a usage error, said before the JVM starts
    if master != "yarn" and not master.startswith(("spark", "k8s", "local")):
        from acidctl.errors import UsageError

        raise UsageError(
            f"--master {master!r}: Spark takes yarn or a URL starting with spark://, k8s:// or local",
            hint="e.g. local[*], spark://host:7077, yarn",
        )
    if not master.startswith("spark://"):
        return
    errors = []
    for hp in master[len("spark://") :].split(","):
        host, _, port = hp.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as e:
            errors.append(f"{hp}: {e.strerror if isinstance(e, OSError) and e.strerror else e}")
    raise SparkUnavailable(
        f"Spark master {master} is unreachable ({'; '.join(errors)})",
        hint="check --master (host and port of the standalone master, default port 7077)",
    )


#: context-manager factories entered around a session start, called with the master URL (the
#: CLI's progress line, acidctl.cli.progress.spark_start_progress); the library prints nothing
START_LISTENERS: list = []

#: lines the JVM prints on its stderr at start-up that say nothing to an acidctl user (Spark 4
#: starts the driver with --add-modules jdk.incubator.vector); dropped unless -v
_JVM_NOISE = (b"WARNING: Using incubator modules:",)


@contextlib.contextmanager
def _jvm_stderr_filtered():
    """While the JVM starts (it inherits file descriptor 2), route fd 2 through a pipe whose
    reader thread forwards every line but :data:`_JVM_NOISE` to the real stderr — for the JVM's
    whole life, as it keeps the pipe. Without -v only; this process's fd 2 is restored on exit."""
    import logging

    if logging.getLogger().isEnabledFor(logging.INFO):
        yield
        return
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    r, w = os.pipe()

    def forward() -> None:
        # this process's own stderr writes pass here too while fd 2 is redirected (a progress
        # line rewritten with \r shares a "line" with the JVM's): cut out the noise, keep the rest
        with os.fdopen(r, "rb") as src:
            for line in src:
                for noise in _JVM_NOISE:
                    while noise in line:
                        i = line.index(noise)
                        end = line.find(b"\n", i)
                        line = line[:i] + (line[end + 1 :] if end >= 0 else b"")
                if line:
                    try:
                        os.write(saved, line)
                    except OSError:
                        pass

    threading.Thread(target=forward, name="acidctl-jvm-stderr", daemon=True).start()
    try:
        sys.stderr.flush()
        os.dup2(w, 2)
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)
        os.close(w)  # the JVM holds the write end now: the reader ends when it exits


def get_or_create_session(master: str = "local[*]", conf: dict | None = None):
    """A SparkSession with acidctl's explicit settings (an active session is reused)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise SparkUnavailable(f"pyspark is not installed: {e}", hint="pip install 'acidctl[spark]'") from None
    # pyspark takes the executors' Python from PYSPARK_PYTHON (read when the SparkContext is
    # created), not from spark.pyspark.python: an explicit --spark-conf must reach it
    explicit = (conf or {}).get("spark.pyspark.python")
    if explicit:
        os.environ["PYSPARK_PYTHON"] = explicit
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local") or _loopback_master(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    probe_master(master)
    builder = SparkSession.builder
    for k, v in session_conf(master, conf).items():
        builder = builder.config(k, v)
    _quiet_py4j()
    import signal

    main = threading.current_thread() is threading.main_thread()
    with _DeferredInterrupt() as intr:
        # Ctrl-C while the JVM starts would leave it orphaned (pyspark has no handle on it until
        # the gateway answers), and SparkContext installs its own SIGINT handler half way: SIGINT
        # stays blocked (pending) until the session exists, then it is stopped cleanly
        if main:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with contextlib.ExitStack() as starting:
                for listener in START_LISTENERS:
                    starting.enter_context(listener(master))
                starting.enter_context(_jvm_stderr_filtered())
                spark = builder.getOrCreate()
        except Exception as e:  # Java missing, bad master URL, ...
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SparkUnavailable(
                f"cannot start Spark (master {master}): {msg}",
                hint="Java 17 must be installed; check --master and --spark-conf",
            ) from None
        finally:
            if main:
                signal.signal(signal.SIGINT, intr._handler)  # SparkContext replaced it
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending Ctrl-C lands here
    if intr.received:
        stop_session(spark)
        raise KeyboardInterrupt
    spark.sparkContext.setLogLevel("ERROR")
    if not master.startswith("local"):
        _ship_package(spark)
    return spark


#: applications (ids) acidctl has already shipped itself to: a reused session gets it once
_SHIPPED: set = set()


def _ship_package(spark) -> None:
    """Executors on other machines need acidctl: ship it as a zip (``addPyFile``).

    The executors fetch the zip from the driver when they first run a task, so it stays on disk
    until this process exits. Shipped once per application (a reused session): Spark refuses a
    second ``acidctl.zip`` whose bytes differ, e.g. after an edit of an editable install."""
    import atexit
    import shutil
    import tempfile
    import zipfile

    import acidctl

    sc = spark.sparkContext
    if sc.applicationId in _SHIPPED:
        return
    root = os.path.dirname(os.path.abspath(acidctl.__file__))
    tmp = tempfile.mkdtemp(prefix="acidctl-pyfiles-")
    atexit.register(shutil.rmtree, tmp, True)
    path = os.path.join(tmp, "acidctl.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith(".py"):
                    full = os.path.join(d, f)
                    z.write(full, os.path.relpath(full, os.path.dirname(root)))
    sc.addPyFile(path)
    _SHIPPED.add(sc.applicationId)


class _Progress(threading.Thread):
    """Polls Spark's status tracker and reports completed tasks."""

    def __init__(self, sc, total: int, callback, interval: float = 0.5):
        super().__init__(daemon=True)
        self.sc, self.total, self.callback, self.interval = sc, total, callback, interval
        self.stop = threading.Event()
        self.group = f"acidctl-{os.getpid()}-{time.time_ns()}"

    def run(self):
        last = -1
        while not self.stop.wait(self.interval):
            try:
                tracker = self.sc.statusTracker()
                done = 0
                for job_id in tracker.getJobIdsForGroup(self.group):
                    job = tracker.getJobInfo(job_id)
                    if job is None:
                        continue
                    for sid in job.stageIds:
                        st = tracker.getStageInfo(sid)
                        if st is not None:
                            done += st.numCompletedTasks
            except Exception:
                return
            if done != last:
                last = done
                self.callback(done, self.total)


def run_tasks(spark, tasks: list, *, progress=None, body=None, job: str = "acidctl compact") -> list[dict]:
    """Run every task (one RDD partition each) and return their metrics, in task order.
    ``body`` is the ``mapPartitions`` function (default: the compaction task)."""
    if body is None:
        from acidctl.compact.task import run_tasks as body

    if not tasks:
        return []
    import functools

    from acidctl.fs import current_umask, iter_in_umask

    # executors may run with another umask than this driver: files they write get the driver's
    # (acidctl.fs: one permission rule for everything acidctl creates)
    body = functools.partial(iter_in_umask, current_umask(), body)
    sc = spark.sparkContext
    mon = _Progress(sc, len(tasks), progress or (lambda done, total: None))
    sc.setJobGroup(mon.group, job, interruptOnCancel=True)
    if progress is not None:
        mon.start()

    def cancel():
        try:
            sc.cancelJobGroup(mon.group)  # stop the executors before the staging is removed
        except Exception:
            pass

    try:
        # Ctrl-C cancels the job from a second py4j connection (as pyspark's own handler does)
        # instead of tearing the blocked collect() apart mid-call (py4j's tracebacks); the
        # collect then fails and the interrupt is raised here, cleanly
        with _DeferredInterrupt(on_signal=cancel) as intr:
            try:
                rdd = sc.parallelize(tasks, len(tasks))
                out = rdd.mapPartitions(body).collect()
            except Exception as e:
                if intr.received:
                    raise KeyboardInterrupt from None
                raise _task_failure(e) from None
        if intr.received:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        cancel()
        raise
    finally:
        if progress is not None:
            mon.stop.set()
            mon.join(timeout=2)
            progress(len(tasks), len(tasks))
    return out


class TaskFailed(AcidctlError):
    """A Spark task failed for a reason other than an expected acidctl error (a bug, or the
    executors died); nothing was published."""

    exit_code = ExitCode.INTERNAL


def _task_failure(e: Exception) -> Exception:
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # the Python exception line of the worker traceback, if present
    msg = next(
        (ln for ln in reversed(lines) if ("Error:" in ln or "Exception:" in ln) and not ln.startswith("at ")),
        lines[0] if lines else type(e).__name__,
    )
    return TaskFailed(f"Spark task failed: {msg[:400]}", hint="rerun with -v; nothing was published")
