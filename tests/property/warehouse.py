"""A random warehouse for the "no harm" property test (issue 21): one transactional table
``db.t`` (partitioned by ``p`` or not) whose history is a :class:`tests.histories.History`,
written to disk as Hive's split-update writers write it and recorded in a metastore through
:class:`acidctl.metastore.recorder.Recorder` (Hive's own row shapes), plus what the test needs
to judge acidctl after every step:

* the reference model: ``History.play_table`` (rows by ROW__ID; nothing from acidctl's code);
* Hive's side of the cluster: new writes (committed / aborted / open, an open one holding a
  SHARED_WRITE lock as Hive's writers do), a lock outside any txn (a reader's), and a scripted
  Hive Worker that claims a request with the conditional update of ``findNextToCompact`` and
  later fails it (``markFailed``) — written out by hand as in tests/metastore/test_worker_race.py;
* acidctl run in-process (tests/conftest.py ``run_cli``), ``-o json`` where parsed;
* snapshots of what the rules compare: the four queue/txn/lock tables, directory listings,
  file modes, ``why`` and ``doctor`` documents, the merged rows of ``dump --merged``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from acidctl.metastore.init import init_metastore
from acidctl.metastore.recorder import LockComponent, Recorder
from tests.conftest import run_cli
from tests.histories import History, Txn

DB, TABLE = "db", "t"
NAME = f"{DB}.{TABLE}"
#: the tables rule 3 compares (issue 21: "COMPACTION_QUEUE, COMPLETED_COMPACTIONS, TXNS and
#: HIVE_LOCKS as it found them"); a dry run must not consume a compaction id either
RULE3_TABLES = ("COMPACTION_QUEUE", "COMPLETED_COMPACTIONS", "TXNS", "HIVE_LOCKS")
HIVE_WORKER = "hivehost-17"


def visible(name: str) -> bool:
    """A directory entry a Hive reader lists (FileUtils.HIDDEN_FILES_PATH_FILTER: not ``_``/``.``)."""
    return not name.startswith(("_", "."))


class Warehouse:
    def __init__(self, root: Path, url: str, hive_version: int, history: History):
        self.root = root
        self.url = url
        self.hive_version = hive_version
        self.partitioned = history.partitions > 1
        wh = root / "wh"
        self.loc = wh / f"{DB}.db" / TABLE
        self.loc.mkdir(parents=True)
        init_metastore(url, hive_version=hive_version, warehouse=f"file:{wh}")
        self.rec = Recorder(url)
        self.T = self.rec.T
        self.rec.create_table(
            DB,
            TABLE,
            location=f"file:{self.loc}",
            columns=[("id", "int"), ("name", "string")],
            partition_keys=[("p", "string")] if self.partitioned else [],
        )
        self.parts: list[str | None] = [f"p={k}" for k in range(history.partitions)] if self.partitioned else [None]
        for p in self.parts:
            if p is not None:
                self.rec.add_partition(DB, TABLE, p, location=f"file:{self.loc / p}")
                (self.loc / p).mkdir()
        # the model: the same history, grown one Hive write at a time
        self.hist = History(history.buckets, history.originals, [], history.partitions)
        self.txn_ids: dict[int, int] = {}  # write id -> Hive txn id
        self.open_locks: dict[int, int] = {}  # txn id -> lock ext id
        if history.originals:
            self._copy_new(lambda name: not name.startswith(("delta_", "delete_delta_", "base_")))
        for txn in history.txns:
            self.hive_write(txn)

    # -- Hive's side ----------------------------------------------------------------------
    def _copy_new(self, wanted) -> None:
        """Play the model into a scratch directory and copy the entries ``wanted`` names."""
        with tempfile.TemporaryDirectory(dir=self.root) as d:
            scratch = Path(d) / "t"
            scratch.mkdir()
            self.hist.play_table(scratch)
            for p in self.parts:
                src = scratch / p if p else scratch
                dst = self.loc / p if p else self.loc
                for e in sorted(src.iterdir()) if src.exists() else []:
                    if wanted(e.name) and not (dst / e.name).exists():
                        if e.is_dir():
                            shutil.copytree(e, dst / e.name)
                        else:
                            shutil.copy2(e, dst / e.name)

    def hive_write(self, txn: Txn) -> int:
        """One Hive write: its delta/delete_delta directories as Hive's writer leaves them (also
        when the txn aborts or is still open) and its metastore rows (open, write id,
        TXN_COMPONENTS per partition, then commit / abort / an open txn's SHARED_WRITE lock)."""
        rec = self.rec
        tid = rec.open_txn("hive", "hivehost", agent_info="hive writer")
        w = rec.allocate_write_id(tid, DB, TABLE)
        self.hist.txns.append(Txn(txn.state, list(txn.statements)))
        assert w == len(self.hist.txns), (w, len(self.hist.txns))
        self.txn_ids[w] = tid
        tag = f"_{w:07d}_{w:07d}_"
        self._copy_new(lambda name: name.startswith(("delta", "delete_delta")) and tag in name)
        ops: dict[str | None, set[str]] = {}
        for s in txn.statements:
            p = self.parts[s.part % len(self.parts)]
            ops.setdefault(p, set()).add(s.kind)
        for p, kinds in sorted(ops.items(), key=lambda kv: str(kv[0])):
            op = "u" if "update" in kinds else ("d" if "delete" in kinds else "i")
            rec.add_write(tid, DB, TABLE, partition=p, operation=op, write_id=w)
        if txn.state == "committed":
            rec.commit_txn(tid)
        elif txn.state == "aborted":
            rec.abort_txn(tid)
        else:
            comps = [LockComponent(DB, TABLE, p, "shared_write") for p in sorted(ops, key=str)]
            self.open_locks[tid] = rec.lock(comps, txn_id=tid, user="hive", host="hivehost")
        return w

    def hive_reader_lock(self) -> int:
        """A SHARED_READ lock outside any txn (a non-ACID reader's), heartbeated now."""
        return self.rec.lock(LockComponent(DB, TABLE, self.parts[0], "shared_read"), user="hive", host="hivehost")

    def open_txns(self) -> list[int]:
        t = self.T.TXNS
        with self.rec.engine.connect() as c:
            return sorted(int(r[0]) for r in c.execute(sa.select(t.TXN_ID).where(t.TXN_STATE == "o")))

    def txn_aborted_by_acidctl(self, tid: int) -> None:
        """The model follows an ``abort transactions`` of one of Hive's writers."""
        for w, t in self.txn_ids.items():
            if t == tid and self.hist.txns[w - 1].state == "open":
                self.hist.txns[w - 1].state = "aborted"

    def sync_txn_states(self) -> None:
        t = self.T.TXNS
        with self.rec.engine.connect() as c:
            states = {int(a): b for a, b in c.execute(sa.select(t.TXN_ID, t.TXN_STATE))}
        for w, tid in self.txn_ids.items():
            if self.hist.txns[w - 1].state == "open" and states.get(tid) == "a":
                self.hist.txns[w - 1].state = "aborted"

    def queue_rows(self, state: str | None = None) -> list[tuple]:
        cq = self.T.COMPACTION_QUEUE
        q = sa.select(cq.CQ_ID, cq.CQ_STATE, cq.CQ_PARTITION, cq.CQ_WORKER_ID).order_by(cq.CQ_ID)
        if state:
            q = q.where(cq.CQ_STATE == state)
        with self.rec.engine.connect() as c:
            return [tuple(r) for r in c.execute(q)]

    def hive_claim(self, pick: int) -> int | None:
        """Hive's Worker ``findNextToCompact`` written out by hand: the conditional update of an
        initiated row to working (tests/metastore/test_worker_race.py)."""
        ids = [r[0] for r in self.queue_rows("i")]
        if not ids:
            return None
        i = ids[pick % len(ids)]
        cq = self.T.COMPACTION_QUEUE
        with self.rec.engine.begin() as c:
            n = c.execute(
                sa.update(cq.clause)
                .where(cq.CQ_ID == i, cq.CQ_STATE == "i")
                .values(
                    {
                        cq.CQ_WORKER_ID.name: HIVE_WORKER,
                        cq.CQ_START.name: int(time.time() * 1000),
                        cq.CQ_STATE.name: "w",
                    }
                )
            ).rowcount
        return i if n == 1 else None

    def hive_fail(self, pick: int) -> int | None:
        """Hive's Worker gives up on a request it claimed: ``markFailed``."""
        ids = [r[0] for r in self.queue_rows("w") if r[3] == HIVE_WORKER]
        if not ids:
            return None
        i = ids[pick % len(ids)]
        self.rec.mark_failed(i, error_message="hive: task failed")
        return i

    # -- acidctl -------------------------------------------------------------------------
    def cli(self, *args: str, env: dict | None = None):
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            return run_cli("--metastore", self.url, *args)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            os.environ.pop("ACIDCTL_TEST_DRIVER_PID", None)

    def cli_json(self, *args: str, ok=(0,)):
        r = self.cli("-o", "json", *args)
        assert r.code in ok, (args, r)
        return json.loads(r.stdout) if r.stdout.strip() else None

    def spec(self, part: str | None) -> str:
        return NAME + (f"/{part}" if part else "")

    def why(self) -> dict:
        doc = self.cli_json("why", NAME)
        return {p.get("partition"): p for p in doc["partitions"]}

    def doctor(self) -> list[dict]:
        return self.cli_json("doctor", ok=(0, 4))["findings"]

    def merged(self) -> dict:
        """``dump --merged db.t``: {(partition, writeid, bucket, rowid): (id, name)}."""
        r = self.cli("-o", "json", "dump", "--merged", NAME)
        assert r.code == 0, r
        out = {}
        for line in r.stdout.splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            rid = row["row__id"]
            key = (f"p={row['p']}" if self.partitioned else None, rid["writeid"], rid["bucketid"], rid["rowid"])
            assert key not in out, f"ROW__ID {key} read twice"
            out[key] = (row["id"], row["name"])
        return out

    def model(self) -> dict:
        return self.hist.play_table(None)

    # -- snapshots ------------------------------------------------------------------------
    def tables(self, names=RULE3_TABLES) -> dict[str, list]:
        out = {}
        with self.rec.engine.connect() as c:
            for name in names:
                t = getattr(self.T, name)
                rows = [dict(r._mapping) for r in c.execute(sa.select(t.clause))]
                out[name] = sorted((tuple(sorted((k.upper(), v) for k, v in r.items())) for r in rows), key=repr)
        return out

    def next_compaction_id(self) -> int:
        n = self.T.NEXT_COMPACTION_QUEUE_ID
        with self.rec.engine.connect() as c:
            return int(c.execute(sa.select(n.NCQ_NEXT)).scalar())

    def failed_rows(self) -> set[int]:
        cc = self.T.COMPLETED_COMPACTIONS
        with self.rec.engine.connect() as c:
            return {int(r[0]) for r in c.execute(sa.select(cc.CC_ID).where(cc.CC_STATE == "f"))}

    def listing(self) -> dict[str | None, set[str]]:
        """The reader-visible entries of each partition directory."""
        out = {}
        for p in self.parts:
            d = self.loc / p if p else self.loc
            out[p] = {e.name for e in d.iterdir() if visible(e.name) and not (p is None and e.name.startswith("p="))}
        return out

    def modes(self) -> dict[str, tuple[bool, int]]:
        """Every path under the table with (is_dir, permission bits)."""
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.loc):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                st = os.lstat(p)
                out[p] = (stat.S_ISDIR(st.st_mode), stat.S_IMODE(st.st_mode))
        return out


V_SUFFIX = re.compile(r"_v\d+$")


def normalise_output(name: str) -> str:
    """``base_0000005_v0000012`` -> ``base_0000005_v<compaction txn>`` (why's spelling)."""
    return V_SUFFIX.sub("_v<compaction txn>", name)
