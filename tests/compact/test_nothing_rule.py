"""The one "nothing to compact" rule (acidctl.compact.naming.nothing_to_compact) that `compact`,
the worker, `why` and `doctor` share, per Hive version.

Expected values come from Hive's source, not from acidctl:

* Hive 4 ``Worker.isEnoughToCompact`` (apache/hive master,
  ql/src/java/org/apache/hadoop/hive/ql/txn/compactor/Worker.java; operations.md §3.2 step 6):
  major: ``origCount > 0 || deltaCount + (base ? 1 : 0) > 1``; minor: ``deltaCount > 1`` and, for
  exactly 2, ``deltaByType.size() != deltaCount`` (one insert + one delete delta is not enough);
  ``deltaCount`` = ``getCurrentDirectories()``, which never holds an aborted-only delta (Hive 4's
  ``processDeltaDir`` files those under ``abortedDirectories``, directory-state.md §3.2 step 5).
  Not enough → ``markCompacted`` when obsolete/aborted directories exist, else ``markRefused``
  (``None of the compaction thresholds met``); the compactor txn is committed either way.
* Hive 3.1 ``CompactorMR.run`` (branch-3.1): returns without a job only when
  ``parsedDeltas.size() == 0 && dir.getOriginalFiles().size() == 0``; the Worker then
  ``markCompacted``. So Hive 3 compacts a lone ``delta_5_5_0000`` and a delta + delete delta pair.
* acidctl's addition on every version: inputs that already are one compacted range (a lone
  ``delta_x_y``, aborted-only included) are never rewritten into their own name.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import sqlalchemy as sa

from acidctl.acid.writeids import TxnList, WriteIdList
from acidctl.compact import naming
from acidctl.compact import worker as w
from acidctl.compact.naming import MAJOR, MINOR, DeltaRange as D
from acidctl.compact.planner import plan_partition
from acidctl.fs import TableFS
from acidctl.metastore import queue
from acidctl.metastore.connection import connect
from tests.acid.helpers import listing
from tests.conftest import run_cli


@pytest.fixture(autouse=True)
def _writes_allowed():
    from acidctl.metastore import steps

    yield
    steps.allow_writes()


def _rule(kind, deltas, hv, *, base=False, originals=False) -> str:
    return naming.nothing_to_compact(kind, deltas=deltas, has_base=base, has_originals=originals, hive_version=hv)


# -- the pure rule --------------------------------------------------------------------------


def test_hive4_minor_counts_current_deltas_by_type():
    # deltaCount > 1
    assert _rule(MINOR, [], 4)
    assert _rule(MINOR, [D(5, 5)], 4)
    assert _rule(MINOR, [D(1, 3, compacted=True)], 4)
    # exactly 2: one of each type (different or equal ranges) is not enough; two of a type is
    assert _rule(MINOR, [D(1, 1), D(2, 2, delete=True)], 4)
    assert _rule(MINOR, [D(1, 3, compacted=True), D(1, 3, delete=True, compacted=True)], 4)
    assert _rule(MINOR, [D(1, 1), D(2, 2)], 4) == ""
    assert _rule(MINOR, [D(1, 1, delete=True), D(2, 2, delete=True)], 4) == ""
    # 3 current deltas: enough whatever their types
    assert _rule(MINOR, [D(1, 1), D(2, 2, delete=True), D(3, 3, delete=True)], 4) == ""
    # aborted-only deltas are not current directories in Hive 4
    assert _rule(MINOR, [D(1, 3, compacted=True), D(4, 4, aborted=True)], 4)
    assert _rule(MINOR, [D(1, 1), D(2, 2, aborted=True), D(3, 3, delete=True)], 4)
    assert _rule(MINOR, [D(4, 5, compacted=True, aborted=True)], 4)


def test_hive4_major_needs_originals_or_two_of_base_and_deltas():
    assert _rule(MAJOR, [D(5, 5)], 4)  # 0 + 1 > 1 is false
    assert _rule(MAJOR, [], 4, base=True)
    assert _rule(MAJOR, [D(5, 5, aborted=True)], 4, base=True)  # aborted: not a current delta
    assert _rule(MAJOR, [D(5, 5)], 4, base=True) == ""
    assert _rule(MAJOR, [D(1, 1), D(2, 2, delete=True)], 4) == ""
    assert _rule(MAJOR, [], 4, originals=True) == ""


def test_hive3_skips_only_without_deltas_and_originals():
    assert _rule(MINOR, [], 3) and _rule(MAJOR, [], 3, base=True)
    assert _rule(MAJOR, [], 3, originals=True) == ""
    assert _rule(MAJOR, [D(5, 5)], 3) == ""
    assert _rule(MINOR, [D(5, 5)], 3) == ""  # a lone delta_5_5_0000 becomes delta_5_5
    assert _rule(MINOR, [D(1, 1), D(2, 2, delete=True)], 3) == ""
    # Hive 3's compactor reads aborted-only deltas: one beside a compacted range extends it
    assert _rule(MINOR, [D(1, 3, compacted=True), D(4, 4, aborted=True)], 3) == ""
    # acidctl's addition: already one compacted range (aborted-only included) → nothing
    assert "already cover 1..3" in _rule(MINOR, [D(1, 3, compacted=True)], 3)
    assert "already cover 4..5" in _rule(MINOR, [D(4, 5, compacted=True, aborted=True)], 3)
    assert _rule(MINOR, [D(1, 3, compacted=True), D(1, 3, delete=True, compacted=True)], 3)
    assert _rule(MINOR, [D(4, 4, compacted=True, aborted=True)], 2)


def test_predict_uses_the_rule():
    def predict(hive_version):
        return naming.predict(
            MINOR,
            deltas=[D(1, 1), D(2, 2, delete=True)],
            has_base=False,
            has_originals=False,
            compactor_hwm=2,
            hive_version=hive_version,
        )

    out, why = predict(4)
    assert out is None and why.startswith("nothing to compact: ")
    out, _ = predict(3)
    assert out is not None and out.names == ("delta_0000001_0000002", "delete_delta_0000001_0000002")


# -- the planner applies it (listing models, no files read) ---------------------------------

ALL = "9223372036854775807"


def _plan(names, aborted, hv):
    wl = WriteIdList.parse(f"db.t:5:{ALL}::{aborted}")
    return plan_partition(
        None,
        listing(*names),
        mode=MINOR,
        reader=wl,
        txns=TxnList.all_committed() if hv == 4 else None,
        hive_version=hv,
        visibility_txn=99,
    )


@pytest.mark.parametrize("hv", [3, 4])
@pytest.mark.parametrize(
    "names,aborted",
    [
        (["delta_0000004_0000005"], "4,5"),  # a lone compacted delta, all of it aborted
        (["delta_0000004_0000005", "delta_0000005_0000005_0000"], "4,5"),  # + an aborted one inside it
        (["delta_0000001_0000003", "delta_0000002_0000002_0000"], "2"),  # aborted inside a current range
        (["delta_0000001_0000003"], "2"),
    ],
)
def test_lone_compacted_delta_is_nothing_to_compact_not_a_refusal(names, aborted, hv):
    """Before: Hive 3 planned delta_4_5 again and refused with "already exists" (exit 6)."""
    p = _plan(names, aborted, hv)
    assert p.status == "nothing" and p.message.startswith("nothing to compact: "), p.message
    assert p.outputs == []


def test_hive4_aborted_deltas_are_not_counted_but_hive3_reads_them():
    p3 = _plan(["delta_0000001_0000003", "delta_0000004_0000004_0000"], "4", 3)
    assert p3.status == "compact" and [o.name for o in p3.outputs] == ["delta_0000001_0000004"]
    p4 = _plan(["delta_0000001_0000003", "delta_0000004_0000004_0000"], "4", 4)
    assert p4.status == "nothing"
    p4 = _plan(["delta_0000001_0000001_0000", "delta_0000002_0000002_0000", "delta_0000003_0000003_0000"], "3", 4)
    assert p4.status == "compact" and [o.name for o in p4.outputs] == ["delta_0000001_0000003_v0000099"]


# -- the CLI: why predicts what compact and the worker do -----------------------------------

PART = "ds=2026-01-01"
# the demo's ds=2026-01-01 (tests/doctor/test_one_model.py): delta 3, aborted delta 4, deltas
# 5_0000 and 5_0001, delete deltas 5 and 6, delta 7 of the open write id 7 (compactor hwm 6)
SHAPES = {
    # one insert delta and one delete delta of different ranges (+ the aborted delta 4)
    "insert+delete": (
        ["delta_0000005_0000005_0000", "delta_0000005_0000005_0001", "delete_delta_0000005_0000005_0000"],
        {},
    ),
    # a single current delta_5_5_0000 and nothing for the Cleaner
    "single": (
        [
            "delta_0000003_0000003_0000",
            "delta_0000004_0000004_0000",
            "delta_0000005_0000005_0001",
            "delete_delta_0000005_0000005_0000",
            "delete_delta_0000006_0000006_0000",
        ],
        {},
    ),
    # a lone compacted delta_4_4 whose only write id is aborted
    "aborted-compacted": (
        [
            "delta_0000003_0000003_0000",
            "delta_0000005_0000005_0000",
            "delta_0000005_0000005_0001",
            "delete_delta_0000005_0000005_0000",
            "delete_delta_0000006_0000006_0000",
        ],
        {"delta_0000004_0000004_0000": "delta_0000004_0000004"},
    ),
}
#: (shape, hive version) → the directories a minor writes (empty: nothing to compact), worked
#: out from the rules in the module doc
EXPECT = {
    ("insert+delete", 3): ["delta_0000003_0000006", "delete_delta_0000003_0000006"],
    ("insert+delete", 4): [],
    ("single", 3): ["delta_0000005_0000005"],
    ("single", 4): [],
    ("aborted-compacted", 3): [],
    ("aborted-compacted", 4): [],
}
#: the queue state Hive's Worker leaves a claimed minor request in: Hive 3 always markCompacted;
#: Hive 4 markCompacted when an obsolete/aborted directory is left for the Cleaner, else refused
WORKER_STATE = {
    ("insert+delete", 4): "ready for cleaning",  # aborted delta 4 is there
    ("single", 4): "refused",
    ("aborted-compacted", 4): "ready for cleaning",
}


def _j(*args, ok=(0,)):
    r = run_cli("-o", "json", *args)
    assert r.code in ok, (args, r.code, r.stderr)
    return json.loads(r.stdout)


def _dirs(p):
    return {n for n in os.listdir(p) if not n.startswith((".", "_"))}


@pytest.mark.parametrize("hv", [3, 4])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_why_compact_and_worker_agree(tmp_path, monkeypatch, shape, hv):
    root = tmp_path / "demo"
    assert run_cli("demo", root, "--hive-version", str(hv)).code == 0
    url = f"sqlite:///{root / 'metastore.db'}"
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", url)
    part = root / "warehouse" / "sales" / PART
    remove, rename = SHAPES[shape]
    for n in remove:
        shutil.rmtree(part / n)
    for a, b in rename.items():
        os.rename(part / a, part / b)
    expect = EXPECT[(shape, hv)]

    assert run_cli("compact", "--enqueue", "--minor", "default.sales", "--partition", PART).code == 0
    (p,) = _j("why", f"default.sales/{PART}")["partitions"]
    steps = {s["rule"]: s for s in p["worker"]["steps"]}
    if expect:
        vis = "_v<compaction txn>" if hv == 4 else ""
        assert steps["output"]["values"]["outputs"] == [n + vis for n in expect]
    else:
        assert steps["enough to compact"]["outcome"] == "stop"
        assert "nothing to compact" in steps["enough to compact"]["detail"]

    # compact itself (not registered, so the queued request stays for the worker)
    before = _dirs(part)
    rep = _j(
        "compact",
        "--minor",
        "default.sales",
        "--partition",
        PART,
        "--engine",
        "local",
        "--no-register",
        "--allow-non-atomic-publish",
        *(["--visibility-txn", "1"] if hv == 4 else []),
    )
    (pp,) = rep["partitions"]
    assert sorted(_dirs(part) - before) == sorted(expect)
    assert pp["status"] == ("compact" if expect else "nothing"), pp
    if expect:
        return

    # the worker on the queued request records what Hive's Worker records
    ms = connect(url)
    opts = w.WorkerOptions(max=10, engine="local", db_glob="default")
    planned = [r for r in w.plan_cycle(ms, opts, table_fs=lambda u: TableFS(u)) if r.get("partition") == PART]
    assert [r["state"] for r in planned] == ["would be " + WORKER_STATE.get((shape, hv), "ready for cleaning")]
    recs = [r for r in w.run_cycle(ms, opts, table_fs=lambda u: TableFS(u)) if r.get("partition") == PART]
    assert len(recs) == 1, recs
    assert recs[0]["state"] == WORKER_STATE.get((shape, hv), "ready for cleaning"), recs[0]
    assert _dirs(part) == before  # nothing written
    if hv == 4:
        eng = sa.create_engine(url)
        with eng.connect() as c:
            if recs[0]["state"] == "refused":
                cc = c.execute(
                    sa.text("SELECT CC_STATE, CC_ERROR_MESSAGE, CC_TXN_ID FROM COMPLETED_COMPACTIONS WHERE CC_ID=:i"),
                    {"i": recs[0]["cq_id"]},
                ).one()
                assert cc[0] == "c" and cc[1] == queue.NOTHING_TO_COMPACT
                txn = cc[2]
            else:
                q = c.execute(
                    sa.text("SELECT CQ_STATE, CQ_TXN_ID FROM COMPACTION_QUEUE WHERE CQ_ID=:i"), {"i": recs[0]["cq_id"]}
                ).one()
                assert q[0] == "r"
                txn = q[1]
            # the compactor txn is committed either way (operations.md §3.2 step 6)
            assert c.execute(sa.text("SELECT TXN_STATE FROM TXNS WHERE TXN_ID=:t"), {"t": txn}).scalar() == "c"
        eng.dispose()
