"""One model of Hive's decisions (issue 21): on `acidctl demo` warehouses (Hive 3 and 4),

* `why` predicts the directory `compact` then writes and the directories `clean --execute` then
  removes;
* `doctor` reports nothing about acidctl's own compaction, before and after `clean`;
* every printed fix, run exactly as printed, clears its finding on the next `doctor` (or exits
  non-zero with a reason).

Expected names are worked out from the demo's layout (tests/cli/test_demo.py) and Hive's rule
(acidctl.compact.naming): ds=2025-12-31 holds originals, delete_delta_1_1 and delta_2_2 with write
id 7 open, so the MR compactor names the base after write id 2 (not the compactor hwm 6);
ds=2026-01-01 holds deltas 3, 4 (aborted), 5, 5 and delete deltas 5, 6: base_0000006.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import time

import pytest

from tests.conftest import run_cli

#: findings that would blame acidctl's own compaction
SUSPICIOUS = {"UNEXPLAINED_COMPACTED_DIR", "COMPACTION_SUCCEEDED_NO_OUTPUT", "WRITE_ID_ABOVE_HWM"}


def _j(*args):
    r = run_cli("-o", "json", *args)
    # doctor exits 4 when it reports error-level findings
    assert r.code == 0 or (args[0] == "doctor" and r.code == 4), (args, r.stderr)
    return json.loads(r.stdout)


@pytest.fixture(params=[3, 4], ids=["hive3", "hive4"])
def demo(request, tmp_path, monkeypatch):
    root = tmp_path / "demo"
    extra = ["--hive-version", "4"] if request.param == 4 else []
    r = run_cli("demo", root, *extra)
    assert r.code == 0, r.stderr
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", f"sqlite:///{root / 'metastore.db'}")
    return root, request.param


def _dirs(root, part):
    p = root / "warehouse" / "sales" / part
    return {n for n in os.listdir(p) if not n.startswith((".", "_"))}


def _why(spec):
    doc = _j("why", spec)
    (p,) = doc["partitions"]
    return p


def _predicted_outputs(p) -> list[str]:
    step = [s for s in p["worker"]["steps"] if s["rule"] == "output"]
    return step[0]["values"]["outputs"] if step else []


def _removable(p) -> set[str]:
    """What why's CLEANER says `clean --execute --min-age 0` removes (empty when held back)."""
    cl = p["cleaner"]
    if any(s["outcome"] == "stop" for s in cl["steps"]):
        return set()
    return set(cl["steps"][0]["values"].get("removable") or [])


def _queue_txn(root, cq_id: int) -> int:
    with sqlite3.connect(root / "metastore.db") as c:
        return int(c.execute('SELECT "CQ_TXN_ID" FROM "COMPACTION_QUEUE" WHERE "CQ_ID"=?', (cq_id,)).fetchone()[0])


def _matches(predicted: str, written: str, txn: int | None) -> bool:
    if predicted.endswith("_v<compaction txn>"):
        return txn is not None and written == predicted.replace("_v<compaction txn>", f"_v{txn:07d}")
    return written == predicted


@pytest.mark.parametrize("how", ["due", "major"])
def test_why_predicts_compact_and_clean(demo, how):
    root, hv = demo
    expect = {"ds=2025-12-31": "base_0000002", "ds=2026-01-01": "base_0000006"}
    parts = ["ds=2025-12-31"] if how == "due" else ["ds=2025-12-31", "ds=2026-01-01"]
    predicted = {}
    for part in parts:
        p = _why(f"default.sales/{part}")
        out = _predicted_outputs(p)
        assert len(out) == 1 and out[0].startswith(expect[part]), out
        assert out[0] == expect[part] + ("_v<compaction txn>" if hv == 4 else "")
        predicted[part] = out[0]
    before = {part: _dirs(root, part) for part in parts}
    if how == "due":
        rep = _j("compact", "--due", "default.sales")
    else:
        rep = _j("compact", "--major", "default.sales", "--partition", "ds=2025-12-31", "--partition", "ds=2026-01-01")
    for part in parts:
        new = _dirs(root, part) - before[part]
        assert len(new) == 1, new
        (written,) = new
        txn = int(written.rsplit("_v", 1)[1]) if hv == 4 else None
        assert _matches(predicted[part], written, txn), (predicted[part], written)
    # Hive 4: the _v suffix is the compaction txn recorded in the queue row (CQ_TXN_ID)
    if hv == 4:
        with sqlite3.connect(root / "metastore.db") as c:
            txns = {int(t) for (t,) in c.execute('SELECT "CQ_TXN_ID" FROM "COMPACTION_QUEUE" WHERE "CQ_STATE"=\'r\'')}
        for part in parts:
            (written,) = _dirs(root, part) - before[part]
            assert int(written.rsplit("_v", 1)[1]) in txns
    assert rep is not None

    # doctor: nothing about acidctl's own compaction
    doc = _j("doctor")
    assert not [f for f in doc["findings"] if f["code"] in SUSPICIOUS or f["code"].startswith("STATE_")], doc[
        "findings"
    ]

    # why predicts exactly what clean --execute removes
    if hv == 4:
        time.sleep(1.1)  # Hive 4's Cleaner counts txns younger than 1 s as open (operations.md §5.2)
    promised = {}
    for part in ("ds=2025-12-31", "ds=2026-01-01"):
        promised[part] = _removable(_why(f"default.sales/{part}"))
    dirs_before = {part: _dirs(root, part) for part in promised}
    _j("clean", "default.sales", "--execute", "--min-age", "0")
    for part, names in promised.items():
        gone = dirs_before[part] - _dirs(root, part)
        assert gone == names, (part, gone, names)
    doc = _j("doctor")
    assert not [f for f in doc["findings"] if f["code"] in SUSPICIOUS or f["code"].startswith("STATE_")], doc[
        "findings"
    ]


def test_dry_run_names_hive4_output_without_a_placeholder(demo):
    root, hv = demo
    r = run_cli("compact", "--major", "default.sales", "--partition", "ds=2025-12-31", "--dry-run")
    assert r.code == 0, r.stderr
    text = r.stdout if isinstance(r.stdout, str) else r.stdout.decode()
    assert "9999999" not in text
    assert ("base_0000002_v<compaction txn>" in text) == (hv == 4)
    assert "into base_0000002" in text


def _run_fix(fix: str) -> list:
    """Run a printed fix exactly as printed: one command line, or several joined by ``&&``."""
    codes = []
    for part in fix.split(" && "):
        argv = shlex.split(part)
        assert argv[0] == "acidctl", fix
        r = run_cli(*argv[1:])
        codes.append((r.code, r.stderr))
        if r.code != 0:
            break
    return codes


def _key(f):
    return (f["code"], f["subject"])


def _converge(max_rounds: int = 25) -> list:
    """Run every printed fix once, one at a time; each must clear its finding or fail with a
    reason. Returns the fixes run."""
    tried: set = set()
    ran = []
    for _ in range(max_rounds):
        doc = _j("doctor")
        todo = [
            f
            for f in doc["findings"]
            if f["fix"] and f["fix"].startswith("acidctl ") and (_key(f), f["fix"]) not in tried
        ]
        if not todo:
            return ran
        f = todo[0]
        tried.add((_key(f), f["fix"]))
        time.sleep(1.1)  # Hive 4's Cleaner: txns younger than 1 s count as open
        codes = _run_fix(f["fix"])
        ran.append((f["code"], f["fix"], codes))
        if codes[-1][0] != 0:
            assert codes[-1][1].strip(), f"{f['fix']} failed without a reason"
            continue
        after = {_key(x) for x in _j("doctor")["findings"]}
        assert _key(f) not in after, (f, codes)
    raise AssertionError(f"fixes did not converge: {ran}")


def _sql(root, *stmts):
    with sqlite3.connect(root / "metastore.db") as c:
        for s, args in stmts:
            c.execute(s, args)


def test_every_printed_fix_works_on_the_demo(demo):
    root, hv = demo
    ran = _converge()
    codes = {c for c, _, _ in ran}
    # the fresh demo has an aborted delta (Hive 3: compacted over, then cleaned; Hive 4: cleaned)
    # and delete deltas Spark misreads; compactions leave obsolete inputs for the Cleaner
    assert {"OBSOLETE_WAITING", "READER_SPARK"} <= codes, ran
    if hv == 3:
        assert "ABORTED_WAITING_COMPACTION" in codes, ran
    assert "delta_0000004_0000004_0000" not in _dirs(root, "ds=2026-01-01")


def test_fixes_for_stuck_worker_leftover_lock_and_directories_above_the_hwm(demo):
    root, hv = demo
    now_ms = int(time.time() * 1000)
    # compaction 2 claimed 25 h ago by a worker that died (hive.compactor.worker.timeout 24 h)
    q = 'UPDATE "COMPACTION_QUEUE" SET "CQ_STATE"=\'w\', "CQ_START"=? WHERE "CQ_ID"=2'
    _sql(root, (q, (now_ms - 25 * 3600_000,)))
    # txn 10 aborted without its locks removed (a leftover lock of a finished txn)
    _sql(root, ('UPDATE "TXNS" SET "TXN_STATE"=\'a\' WHERE "TXN_ID"=10', ()))
    # a directory above the table's high-water mark (NEXT_WRITE_ID 8: write id 9 never allocated)
    above = root / "warehouse" / "sales" / "ds=2026-01-01" / "delta_0000009_0000009_0000"
    above.mkdir()
    (above / "bucket_00000").write_bytes(b"x")
    doc = _j("doctor")
    by = {f["code"]: f for f in doc["findings"]}
    assert by["COMPACTION_WORKING_TOO_LONG"]["fix"] == "acidctl initiator --once --db default"
    assert by["LOCK_OF_FINISHED_TXN"]["fix"] == "acidctl abort transactions 10 --execute"
    assert (
        by["WRITE_ID_ABOVE_HWM"]["fix"] == "acidctl clean default.sales/ds=2026-01-01 --quarantine-above-hwm --execute"
    )
    for code in ("COMPACTION_WORKING_TOO_LONG", "LOCK_OF_FINISHED_TXN", "WRITE_ID_ABOVE_HWM"):
        f = [x for x in _j("doctor")["findings"] if x["code"] == code][0]
        codes = _run_fix(f["fix"])
        assert codes[-1][0] == 0, (code, codes)
        assert _key(f) not in {_key(x) for x in _j("doctor")["findings"]}, code
    # the quarantined directory is out of the table, with a record beside it
    assert not above.exists()
    qroot = root / "warehouse" / "sales" / ".acidctl-quarantine"
    (stamp,) = os.listdir(qroot)
    moved = qroot / stamp / "ds=2026-01-01" / "delta_0000009_0000009_0000"
    assert (moved / "bucket_00000").read_bytes() == b"x"
    rec = json.loads(
        (qroot / stamp / "ds=2026-01-01" / "delta_0000009_0000009_0000.acidctl-quarantine.json").read_text()
    )
    assert rec["high_water_mark"] == 7 and rec["max_write_id"] == 9 and rec["table"] == "default.sales"


def test_above_hwm_decisions_move_only_what_no_allocation_can_own():
    from acidctl.compact.clean import above_hwm_decisions
    from tests.acid.helpers import build_listing

    lst = build_listing(
        "/t",
        {
            "delta_0000001_0000001_0000/": {"bucket_00000": 10},
            "delta_0000005_0000005_0000/": {"bucket_00000": 10},  # = hwm: allocated
            "delta_0000006_0000006_0000/": {"bucket_00000": 10},  # above: never allocated
            "delta_0000004_0000008/": {"bucket_00000": 10},  # straddles: holds allocated ids too
            "base_0000009/": {"bucket_00000": 10},
            "000000_0": 5,
        },
    )
    got = {d["name"]: d["action"] for d in above_hwm_decisions(lst, 5)}
    assert got == {
        "delta_0000006_0000006_0000": "move",
        "base_0000009": "move",
        "delta_0000004_0000008": "keep (straddles the high-water mark)",
    }


def test_stray_file_beside_originals_is_kept_by_clean_why_and_doctor(demo):
    """A non-ORC file where originals sit (``extra.csv``) was read by no compaction: clean keeps
    it, and why and doctor, judging with the same rules, do not promise its removal."""
    root, hv = demo
    part = "ds=2025-12-31"
    _j("compact", "--major", "default.sales", "--partition", part)
    (root / "warehouse" / "sales" / part / "extra.csv").write_text("1,a\n2,b\n")
    if hv == 4:
        time.sleep(1.1)
    p = _why(f"default.sales/{part}")
    listed = set(p["cleaner"]["steps"][0]["values"].get("removable") or [])
    # the originals the base covers go (tests/cli/test_demo.py layout); on Hive 4 only once the
    # demo's open txn 10 ends (the Cleaner waits for it), so the promise is then empty
    assert "000000_0" in listed and "extra.csv" not in listed, listed
    promised = _removable(p)
    assert promised == (listed if hv == 3 else set())
    doc = _j("doctor")
    for f in doc["findings"]:
        assert "extra.csv" not in (f.get("fix") or ""), f
    before = _dirs(root, part)
    _j("clean", "default.sales", "--execute", "--min-age", "0")
    gone = before - _dirs(root, part)
    assert gone == promised
    assert (root / "warehouse" / "sales" / part / "extra.csv").exists()
