"""`acidctl show compactions DB.TABLE --limit 20` and `acidctl show locks` on a big metastore.

    python bench/show.py [--compactions 100000] [--locks 10000] [--postgres URL | --start-postgres]

Builds a Hive 4 metastore with `acidctl metastore init` (SQLite in a temp dir, and PostgreSQL
when a URL of an empty database is given or --start-postgres starts a throw-away server like
tests/metastore/conftest.py does), fills it with N COMPLETED_COMPACTIONS rows spread over 100
tables plus a few queue rows, and M HIVE_LOCKS rows, then times end to end (fresh subprocess
each run, median of 5):

* `acidctl -o json show compactions db.t42 --limit 20`
* `acidctl -o json show locks` (all M locks) and `acidctl show locks` (text table)

beside the baselines measured in the same run: a bare `SELECT 1` round trip in-process, and a
fresh interpreter that imports SQLAlchemy, connects and runs `SELECT 1` (what any Python
client pays). Also prints the query plan of the compactions query (the Hive 4 index
COMPLETED_COMPACTIONS_RES must be used). Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

RUNS = 5
TABLES = 100


def timed(args: list[str], env=None) -> float:
    samples = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
        samples.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {r.stderr.decode()[-500:]}")
    return statistics.median(samples)


def fill(url: str, n_comp: int, n_locks: int) -> None:
    import sqlalchemy as sa

    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import Recorder

    init_metastore(url, hive_version=4)
    rec = Recorder(url)
    t0 = 1_700_000_000_000

    def rows():
        for i in range(1, n_comp + 1):
            start = t0 + i * 1000
            yield dict(
                CC_ID=i,
                CC_DATABASE="db",
                CC_TABLE=f"t{i % TABLES}",
                CC_PARTITION=None,
                CC_STATE="s" if i % 10 else "f",
                CC_TYPE="a" if i % 3 else "i",
                CC_WORKER_ID=f"worker{i % 7}.example.com-{i % 13}",
                CC_ENQUEUE_TIME=start - 500,
                CC_START=start,
                CC_END=start + 200 + i % 50,
                CC_RUN_AS="hive",
                CC_HIGHEST_WRITE_ID=i,
                CC_HADOOP_JOB_ID=None,
                CC_INITIATOR_ID="hms-1-Initiator-1",
                CC_INITIATOR_VERSION="4.0.0",
                CC_WORKER_VERSION="4.0.0",
                CC_TXN_ID=10 * i,
                CC_NEXT_TXN_ID=10 * i + 1,
                CC_COMMIT_TIME=start + 150,
            )

    rec.add_completed_compactions(rows())
    for k in range(20):
        rec.enqueue_compaction("db", f"t{k}", compaction_type="minor", now_ms=t0 + n_comp * 1000 + k)
    h = rec.T.HIVE_LOCKS
    batch = []
    for i in range(n_locks):
        ext, intid = i // 2 + 1, i % 2 + 1
        waiting = i % 50 == 49
        batch.append(
            {
                h.HL_LOCK_EXT_ID.name: ext,
                h.HL_LOCK_INT_ID.name: intid,
                h.HL_TXNID.name: ext,
                h.HL_DB.name: "db",
                h.HL_TABLE.name: f"t{ext % TABLES}",
                h.HL_PARTITION.name: None,
                h.HL_LOCK_STATE.name: "w" if waiting else "a",
                h.HL_LOCK_TYPE.name: "rwxe"[i % 4],
                h.HL_LAST_HEARTBEAT.name: 0,
                h.HL_ACQUIRED_AT.name: None if waiting else t0,
                h.HL_USER.name: "hive",
                h.HL_HOST.name: "hs2.example.com",
                h.HL_HEARTBEAT_COUNT.name: None,
                h.HL_AGENT_INFO.name: f"hive_{ext}",
                h.HL_BLOCKEDBY_EXT_ID.name: 1 if waiting else None,
                h.HL_BLOCKEDBY_INT_ID.name: 1 if waiting else None,
            }
        )
    with rec.engine.begin() as c:
        for j in range(0, len(batch), 5000):
            c.execute(sa.insert(h.clause), batch[j : j + 5000])
        if rec.ms.flavor.dialect == "postgresql":
            c.exec_driver_sql("ANALYZE")
        elif rec.ms.flavor.dialect == "sqlite":
            c.exec_driver_sql("ANALYZE")
    rec.engine.dispose()


def plan(url: str) -> str:
    """The database's plan for the COMPLETED_COMPACTIONS branch of the compactions query."""
    import sqlalchemy as sa

    from acidctl.metastore.connection import connect

    ms = connect(url)
    cc = ms.tables.COMPLETED_COMPACTIONS
    q = sa.select(cc.CC_ID).where(cc.CC_DATABASE == "db", cc.CC_TABLE == "t42")
    sql = str(q.compile(ms.engine, compile_kwargs={"literal_binds": True}))
    prefix = "EXPLAIN QUERY PLAN " if ms.flavor.dialect == "sqlite" else "EXPLAIN "
    with ms.engine.connect() as c:
        rows = c.exec_driver_sql(prefix + sql).all()
    return "\n".join("    " + " ".join(str(x) for x in r) for r in rows)


def select1(url: str) -> tuple[float, float]:
    """(in-process SELECT 1 round trip, fresh interpreter + import + connect + SELECT 1)."""
    import sqlalchemy as sa

    from acidctl.metastore.connection import create_engine

    eng = create_engine(url)
    with eng.connect() as c:
        c.execute(sa.text("SELECT 1"))
        samples = []
        for _ in range(200):
            t0 = time.perf_counter()
            c.execute(sa.text("SELECT 1")).scalar()
            samples.append(time.perf_counter() - t0)
    code = (
        "import sqlalchemy as sa, sys; e = sa.create_engine(sys.argv[1]); "
        "c = e.connect(); c.execute(sa.text('SELECT 1')).scalar()"
    )
    fresh = timed([sys.executable, "-c", code, url])
    return statistics.median(samples), fresh


def start_postgres(base: str) -> tuple[str, list[str], str]:
    import glob
    import pwd
    import socket

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bins:
        raise SystemExit("no PostgreSQL binaries (scripts/install-test-servers.sh)")
    b = bins[-1]
    pre = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(base, pw.pw_uid, pw.pw_gid)
    data = os.path.join(base, "data")
    subprocess.run(
        pre + [f"{b}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-instructions"],
        check=True,
        capture_output=True,
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(
        pre
        + [
            f"{b}/pg_ctl",
            "-D",
            data,
            "-l",
            os.path.join(base, "log"),
            "-w",
            "-o",
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        pre + [f"{b}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "bench"],
        check=True,
        capture_output=True,
    )
    stop = pre + [f"{b}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"]
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/bench", stop, base


def run(label: str, url: str, n_comp: int, n_locks: int) -> None:
    t = time.perf_counter()
    fill(url, n_comp, n_locks)
    print(f"\n== {label}: {n_comp} completed compactions, {n_locks} locks (filled in {time.perf_counter() - t:.1f} s)")
    print("  plan (COMPLETED_COMPACTIONS WHERE db/table):")
    print(plan(url))
    rt, fresh = select1(url)
    acid = [sys.executable, "-m", "acidctl", "--metastore", url]
    comp = timed(acid + ["-o", "json", "show", "compactions", "db.t42", "--limit", "20"])
    locks_json = timed(acid + ["-o", "json", "show", "locks"])
    locks_text = timed(acid + ["show", "locks"])
    locks_tbl = timed(acid + ["-o", "json", "show", "locks", "db.t42"])
    print(f"  SELECT 1 round trip (in-process)             {rt * 1000:8.3f} ms")
    print(f"  fresh python + SQLAlchemy + connect + SELECT 1 {fresh * 1000:6.0f} ms   (baseline)")
    for name, v in (
        ("show compactions db.t42 --limit 20 (json)", comp),
        ("show locks db.t42 (json)", locks_tbl),
        (f"show locks, all {n_locks} (json)", locks_json),
        (f"show locks, all {n_locks} (text table)", locks_text),
    ):
        print(f"  {name:<46} {v * 1000:6.0f} ms   {v / fresh:5.2f}x baseline")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compactions", type=int, default=100_000)
    ap.add_argument("--locks", type=int, default=10_000)
    ap.add_argument("--postgres", metavar="URL", help="URL of an EMPTY PostgreSQL database to fill")
    ap.add_argument("--start-postgres", action="store_true", help="start a throw-away PostgreSQL server")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="acidctl-bench-")
    stop = None
    try:
        run("SQLite", f"sqlite:///{tmp}/ms.db", a.compactions, a.locks)
        pg = a.postgres
        if a.start_postgres and not pg:
            pgdir = tempfile.mkdtemp(prefix="acidctl-bench-pg-")
            pg, stop, _ = start_postgres(pgdir)
        if pg:
            run("PostgreSQL", pg, a.compactions, a.locks)
    finally:
        if stop:
            subprocess.run(stop, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
