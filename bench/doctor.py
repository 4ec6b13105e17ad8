"""Benchmark ``acidctl doctor`` on a generated warehouse.

The warehouse: TABLES partitioned tables × PARTITIONS partitions × DIRS directories (a base and
DIRS − 1 deltas) on the local filesystem, each directory with one bucket file and its
``_orc_acid_version``, recorded in a SQLite metastore of Hive 3 shape (``metastore init`` plus
bulk-inserted TBLS/SDS/PARTITIONS/NEXT_WRITE_ID rows, COMPLETED_TXN_COMPONENTS rows, a few
open/aborted txns and queue rows).

Prints, for the full size and for half of the partitions (to show the growth is linear):

* the in-process time of ``collect`` + ``diagnose`` (what ``acidctl doctor`` runs) and the
  number of directory listings (``TableFS.ls`` calls);
* the end-to-end wall time of ``acidctl -o json doctor`` (a subprocess, interpreter start
  included);
* a baseline measured in the same run: a bare ``os.scandir`` walk of the same tree reading the
  same marker files, and the ratio to it.

Usage: ``python bench/doctor.py [--tables 1000] [--partitions 10] [--dirs 10] [--keep DIR]``.
Target (issue #11): the full size in <= 10 s.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(root: Path, tables: int, partitions: int, dirs: int) -> str:
    sys.path.insert(0, str(ROOT))
    import sqlalchemy as sa

    from acidctl.metastore.connection import connect
    from acidctl.metastore.init import init_metastore

    url = f"sqlite:///{root}/metastore.db"
    wh = root / "warehouse"
    init_metastore(url, hive_version=3, warehouse=f"file:{wh}")
    ms = connect(url)
    T = ms.tables
    now = int(time.time() * 1000)
    stamp = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    rows: dict[str, list[dict]] = {
        k: []
        for k in (
            "CDS",
            "SDS",
            "TBLS",
            "TABLE_PARAMS",
            "PARTITION_KEYS",
            "PARTITIONS",
            "NEXT_WRITE_ID",
            "COMPLETED_TXN_COMPONENTS",
        )
    }
    sd = part_id = 0
    for t in range(tables):
        name = f"t{t:05d}"
        loc = wh / "bench.db" / name
        rows["CDS"].append({"CD_ID": t + 1})
        sd += 1
        rows["SDS"].append(
            {
                "SD_ID": sd,
                "CD_ID": t + 1,
                "LOCATION": f"file:{loc}",
                "NUM_BUCKETS": -1,
                "IS_COMPRESSED": False,
                "IS_STOREDASSUBDIRECTORIES": False,
            }
        )
        rows["TBLS"].append(
            {
                "TBL_ID": t + 1,
                "CREATE_TIME": now // 1000,
                "DB_ID": 2,
                "LAST_ACCESS_TIME": 0,
                "OWNER": "hive",
                "OWNER_TYPE": "USER",
                "RETENTION": 0,
                "SD_ID": sd,
                "TBL_NAME": name,
                "TBL_TYPE": "MANAGED_TABLE",
                "IS_REWRITE_ENABLED": False,
            }
        )
        rows["TABLE_PARAMS"].append({"TBL_ID": t + 1, "PARAM_KEY": "transactional", "PARAM_VALUE": "true"})
        rows["PARTITION_KEYS"].append({"TBL_ID": t + 1, "PKEY_NAME": "p", "PKEY_TYPE": "int", "INTEGER_IDX": 0})
        rows["NEXT_WRITE_ID"].append({"NWI_DATABASE": "bench", "NWI_TABLE": name, "NWI_NEXT": dirs + 1})
        for p in range(partitions):
            pdir = loc / f"p={p}"
            sd += 1
            part_id += 1
            rows["SDS"].append(
                {
                    "SD_ID": sd,
                    "CD_ID": t + 1,
                    "LOCATION": f"file:{pdir}",
                    "NUM_BUCKETS": -1,
                    "IS_COMPRESSED": False,
                    "IS_STOREDASSUBDIRECTORIES": False,
                }
            )
            rows["PARTITIONS"].append(
                {
                    "PART_ID": part_id,
                    "CREATE_TIME": now // 1000,
                    "LAST_ACCESS_TIME": 0,
                    "PART_NAME": f"p={p}",
                    "SD_ID": sd,
                    "TBL_ID": t + 1,
                }
            )
            rows["COMPLETED_TXN_COMPONENTS"].append(
                {
                    "CTC_TXNID": 1,
                    "CTC_DATABASE": "bench",
                    "CTC_TABLE": name,
                    "CTC_PARTITION": f"p={p}",
                    "CTC_WRITEID": dirs,
                    "CTC_TIMESTAMP": stamp,
                    "CTC_UPDATE_DELETE": "N",
                }
            )
            pdir.mkdir(parents=True)
            for d in range(dirs):
                name_d = "base_0000001" if d == 0 else f"delta_{d + 1:07d}_{d + 1:07d}_0000"
                dd = pdir / name_d
                dd.mkdir()
                (dd / "bucket_00000").write_bytes(b"x" * 64)
                (dd / "_orc_acid_version").write_bytes(b"2")
    with ms.engine.begin() as conn:
        conn.execute(
            sa.insert(T.DBS.clause).values(
                {
                    "DB_ID": 2,
                    "DESC": None,
                    "DB_LOCATION_URI": f"file:{wh}/bench.db",
                    "NAME": "bench",
                    "OWNER_NAME": "hive",
                    "OWNER_TYPE": "USER",
                    "CTLG_NAME": "hive",
                }
            )
        )
        for table, batch in rows.items():
            t = getattr(T, table)
            for i in range(0, len(batch), 5000):
                chunk = batch[i : i + 5000]
                conn.execute(sa.insert(t.clause), [{getattr(t, k).name: v for k, v in r.items()} for r in chunk])
    # a little life: an open txn, an aborted one, a queued compaction
    from acidctl.metastore.recorder import Recorder

    rec = Recorder(url)
    rec.open_txn()
    a = rec.open_txn()
    rec.add_write(a, "bench", "t00000", partition="p=0")
    rec.abort_txn(a)
    rec.enqueue_compaction("bench", "t00001", partition="p=1")
    return url


def baseline(root: Path) -> float:
    t0 = time.perf_counter()
    stack = [str(root / "warehouse")]
    while stack:
        for e in os.scandir(stack.pop()):
            if not e.is_dir():
                continue
            if e.name.startswith(("base_", "delta_")):
                for f in os.scandir(e.path):
                    f.stat()
                    if f.name == "_orc_acid_version":
                        with open(f.path, "rb") as fh:
                            fh.read()
            else:
                stack.append(e.path)
    return time.perf_counter() - t0


def _cpu() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def in_process(url: str, *, table_glob: str = "*") -> tuple[float, float, int, int]:
    """(wall s, CPU s of this process and its workers, listings, partitions) of collect + diagnose.
    The CPU figure does not depend on how busy the machine is."""
    sys.path.insert(0, str(ROOT))
    from acidctl.doctor.collect import collect
    from acidctl.doctor.findings import diagnose
    from acidctl.fs import TableFS
    from acidctl.metastore.connection import connect

    c0, t0 = _cpu(), time.perf_counter()
    scan = collect(connect(url), lambda u: TableFS(u), table_glob=table_glob)
    diagnose(scan)
    return time.perf_counter() - t0, _cpu() - c0, scan.listings, len(scan.partitions)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--dirs", type=int, default=10)
    ap.add_argument("--keep", metavar="DIR", help="build the warehouse here and keep it")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="acidctl-bench-doctor-"))
    try:
        t0 = time.perf_counter()
        if not (root / "metastore.db").exists():
            root.mkdir(parents=True, exist_ok=True)
            build(root, args.tables, args.partitions, args.dirs)
        url = f"sqlite:///{root}/metastore.db"
        print(
            f"warehouse: {args.tables} tables x {args.partitions} partitions x {args.dirs} directories "
            f"(built in {time.perf_counter() - t0:.1f}s) at {root}"
        )
        base = baseline(root)
        print(f"baseline (os.scandir walk + marker reads): {base:.2f}s")
        # half the tables (half the partitions) first: the time should roughly halve
        if args.tables == 1000:
            th, ch, lh, ph = in_process(url, table_glob="t00[0-4]*")
            print(f"doctor in-process, {ph} partitions: {th:.2f}s wall, {ch:.2f}s CPU, {lh} directory listings")
        t, c, listings, parts = in_process(url)
        print(
            f"doctor in-process, {parts} partitions: {t:.2f}s wall, {c:.2f}s CPU, {listings} directory listings "
            f"({t / base:.1f}x the baseline walk); {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        t1 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "acidctl", "--metastore", url, "-o", "json", "doctor"], capture_output=True, env=env
        )
        wall = time.perf_counter() - t1
        print(f"acidctl -o json doctor (subprocess, exit {r.returncode}): {wall:.2f}s end to end")
        target = 10.0
        print(f"target <= {target:.0f}s for 1,000 x 10 x 10: {'met' if wall <= target else 'NOT met'}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
