"""The demo warehouse: files laid out as Hive writes them, and its metastore records."""

from __future__ import annotations

import json


def test_demo_refuses_a_non_empty_directory(cli, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep.txt").write_text("mine")
    r = cli("demo", tmp_path / "d")
    assert r.code == 6 and "not empty" in r.stderr
    assert (tmp_path / "d" / "keep.txt").read_text() == "mine"


def test_demo_layout_is_what_hive_writes(demo):
    root, _ = demo
    emp = sorted(p.name for p in (root / "warehouse" / "employee").iterdir())
    assert emp == [
        "delete_delta_0000002_0000002_0001",
        "delete_delta_0000003_0000003_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000002_0000002_0001",
    ]
    for d in (root / "warehouse" / "employee").iterdir():
        assert (d / "_orc_acid_version").read_bytes() == b"2"
    p2 = root / "warehouse" / "sales" / "ds=2026-01-01"
    # statement 1 of write 5 inserted id 21 (odd: bucket 1) with bucket property encode(1, 1)
    assert sorted(x.name for x in (p2 / "delta_0000005_0000005_0001").iterdir()) == [
        "_orc_acid_version",
        "bucket_00001",
    ]
    # write 6 deleted ids 11 (bucket 1) and 12 (bucket 0): one delete file per target bucket
    assert sorted(x.name for x in (p2 / "delete_delta_0000006_0000006_0000").iterdir()) == [
        "_orc_acid_version",
        "bucket_00000",
        "bucket_00001",
    ]


def test_demo_files_pass_every_meta_check(cli, demo):
    root, _ = demo
    r = cli("-o", "json", "dump", "--meta", root / "warehouse")
    assert r.code == 0, r
    assert json.loads(r.stdout)["summary"]["errors"] == 0


def test_demo_bucket_properties_and_row_ids(cli, demo):
    root, _ = demo
    r = cli(
        "-o",
        "json",
        "dump",
        "--decode-bucket",
        root / "warehouse" / "sales" / "ds=2026-01-01" / "delta_0000005_0000005_0001",
    )
    [row] = [json.loads(x) for x in r.stdout.splitlines()]
    assert row["bucket"] == (1 << 29) | (1 << 16) | 1 and row["rowId"] == 0
    assert row["bucketDecoded"] == {"version": 1, "bucketId": 1, "statementId": 1}
    r = cli("-o", "json", "dump", root / "warehouse" / "employee" / "delete_delta_0000002_0000002_0001")
    [ev] = [json.loads(x) for x in r.stdout.splitlines()]
    # the MERGE's update clause deletes Tom's original row (1, 536870912, 1)
    assert (
        ev["operation"],
        ev["originalTransaction"],
        ev["bucket"],
        ev["rowId"],
        ev["currentTransaction"],
        ev["row"],
    ) == (2, 1, 536870912, 1, 2, None)


def test_demo_metastore_snapshot(cli, demo):
    # write 4 aborted, write 7 open (txn 10): hwm 7, minOpen 7, open 7, aborted 4
    r = cli("show", "write-ids", "default.sales")
    assert r.code == 0, r
    assert r.stdout.strip() == "default.sales:7:7:7:4"
    assert cli("show", "write-ids", "default.employee").stdout.strip() == "default.employee:3:9223372036854775807::"


def test_demo_transactions_locks_and_compactions(cli, demo):
    txns = json.loads(cli("-o", "json", "show", "transactions").stdout)
    rows = txns["transactions"] if isinstance(txns, dict) else txns
    states = {t["txnid"]: t["state"] for t in rows}
    # Hive 3 removes committed txns; txn 7 = sales write 4, txn 13 = events write 3 (aborted)
    assert states == {7: "ABORTED", 10: "OPEN", 13: "ABORTED"}
    locks = json.loads(cli("-o", "json", "show", "locks").stdout)
    lrows = locks["locks"] if isinstance(locks, dict) else locks
    assert [(x["table"], x["partition"], x["transaction_id"], x["lock_type"], x["lock_state"]) for x in lrows] == [
        ("sales", "ds=2026-01-01", 10, "SHARED_WRITE", "ACQUIRED")
    ]
    comps = json.loads(cli("-o", "json", "show", "compactions").stdout)
    crows = comps["compactions"] if isinstance(comps, dict) else comps
    assert sorted((c["partname"], c["type"], c["state"]) for c in crows) == [
        ("ds=2025-12-31", "MAJOR", "failed"),
        ("ds=2025-12-31", "MAJOR", "initiated"),
    ]


def test_demo_state_and_merged_read_through_the_metastore(cli, demo):
    r = cli("-o", "json", "state", "default.sales")
    assert r.code == 0, r
    doc = json.loads(r.stdout)
    assert doc["snapshot_source"] == "metastore" and doc["table"] == "default.sales"
    roles = {(p["partition"], e["name"]): e["role"] for p in doc["partitions"] for e in p["entries"]}
    assert roles[("ds=2026-01-01", "delta_0000004_0000004_0000")] == "aborted"
    assert roles[("ds=2026-01-01", "delta_0000007_0000007_0000")] == "not visible yet"
    assert roles[("ds=2025-12-31", "000001_0_copy_1")] == "original"
    rows = [json.loads(x) for x in cli("-o", "json", "dump", "--merged", "default.sales").stdout.splitlines()]
    assert sorted((r["ds"], r["id"]) for r in rows) == sorted(
        [("2025-12-31", i) for i in (1, 2, 4, 5, 6, 7)]
        + [("2026-01-01", i) for i in (10, 13, 14, 15, 16, 17, 18, 19, 21)]
    )
    emp = [json.loads(x) for x in cli("-o", "json", "dump", "--merged", "default.employee").stdout.splitlines()]
    assert sorted((r["name"], r["salary"]) for r in emp) == [("Jerry", 5000), ("Mary", 9000), ("Tom", 7000)]


def test_merged_read_of_one_partition_keeps_its_partition_column(cli, demo):
    rows = [
        json.loads(x) for x in cli("-o", "json", "dump", "--merged", "default.sales/ds=2025-12-31").stdout.splitlines()
    ]
    assert sorted(r["id"] for r in rows) == [1, 2, 4, 5, 6, 7]
    assert {r["ds"] for r in rows} == {"2025-12-31"}


def test_state_uses_metastore_facts(cli, demo):
    root, _ = demo
    part = root / "warehouse" / "sales" / "ds=2026-01-01"
    # write id 9 was never allocated (NEXT_WRITE_ID says 8): S13, an error
    (part / "delta_0000009_0000009_0000").mkdir()
    (part / "delta_0000009_0000009_0000" / "_orc_acid_version").write_bytes(b"2")
    r = cli(
        "-o",
        "json",
        "state",
        "default.sales",
        "--tblproperty",
        "compactorthreshold.hive.compactor.abortedtxn.threshold=0",
    )
    assert r.code == 4, r
    doc = json.loads(r.stdout)
    checks = {(f["check"], f["severity"], f["path"].rsplit("/", 1)[-1]) for f in doc["findings"]}
    assert any(c == "S13" and s == "error" for c, s, _ in checks)
    # one aborted txn (sales write 4) touched ds=2026-01-01, threshold 0: S11
    assert any(c == "S11" and p == "ds=2026-01-01" for c, _, p in checks)
    assert not any(c == "S11" and p == "ds=2025-12-31" for c, _, p in checks)


def test_demo_insert_only_table(cli, demo):
    """default.events: insert-only, plain ORC files in delta_W_W_0000/000000_0 and no
    _orc_acid_version (spec insert-only-and-hive2.md A.4); the aborted write 3 is not read."""
    root, doc = demo
    loc = root / "warehouse" / "events"
    assert sorted(p.name for p in loc.iterdir()) == [
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    ]
    for d in loc.iterdir():
        assert sorted(p.name for p in d.iterdir()) == ["000000_0"]
    assert [t["table"] for t in doc["tables"]] == ["default.employee", "default.sales", "default.events"]
    r = cli("-o", "json", "dump", "--merged", "default.events")
    assert r.code == 0, r
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert sorted((x["id"], x["kind"]) for x in rows) == [
        (1, "view"),
        (2, "buy"),
        (3, "click"),
        (4, "view"),
        (5, "buy"),
    ]
    r = cli("-o", "json", "show", "tables")
    kinds = {t["table"]: t for t in json.loads(r.stdout)["tables"]}
    assert "insert_only" in json.dumps(kinds["default.events"])


def test_demo_hive2_table(cli, demo):
    """DIR/hive2: a Hive 2.3 metastore with default.legacy_employee laid out as the Hive 2.3.10
    seed table (spec B.1, fixtures golden/hive23_seed_table): a reader sees Jerry and Kate from
    txn 1 and Tom's updated row (2,0,0) from txn 2; txn 3 aborted."""
    root, doc = demo
    h2 = doc["hive2"]
    url = f"sqlite:///{root / 'hive2' / 'metastore.db'}"
    assert h2["metastore"] == url and h2["hive_version"] == 2
    loc = root / "hive2" / "warehouse" / "legacy_employee"
    assert sorted(p.name for p in loc.iterdir()) == [
        "_orc_acid_version",
        "delete_delta_0000002_0000002_0000",
        "delta_0000001_0000001_0000",
        "delta_0000002_0000002_0000",
        "delta_0000003_0000003_0000",
    ]
    r = cli("--metastore", url, "-o", "json", "dump", "--merged", "default.legacy_employee")
    assert r.code == 0, r
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    got = [((x["row__id"]["writeid"], x["row__id"]["bucketid"], x["row__id"]["rowid"]), x["_col1"]) for x in rows]
    assert got == [((1, 0, 0), "Jerry"), ((1, 0, 2), "Kate"), ((2, 0, 0), "Tom")]
    # Hive 2.3 deltas with update/delete events must be major-compacted before the upgrade
    r = cli("--metastore", url, "-o", "json", "upgrade-check", "--engine", "local")
    assert r.code != 0
    assert "default.legacy_employee" in r.stdout


def test_demo_text_names_every_metastore(cli, tmp_path):
    r = cli("demo", tmp_path / "d")
    assert r.code == 0, r
    assert f"sqlite:///{tmp_path / 'd' / 'metastore.db'}" in r.stdout
    assert f"sqlite:///{tmp_path / 'd' / 'hive2' / 'metastore.db'}" in r.stdout
    assert "default.events" in r.stdout and "default.legacy_employee" in r.stdout


def test_doctor_does_not_ask_insert_only_tables_for_acid_markers(cli, demo):
    """Hive never writes _orc_acid_version into an insert-only table's directories (spec
    insert-only-and-hive2.md A.4, "No _orc_acid_version is ever written for MM data"), so doctor
    does not report the demo's default.events as a layout Trino cannot read (as `state` does not:
    mm.checks.NOT_FOR_MM)."""
    r = cli("-o", "json", "doctor")
    assert r.code == 0, r
    findings = json.loads(r.stdout)["findings"]
    assert not [f for f in findings if "events" in json.dumps(f) and f.get("code", f.get("check")) == "READER_TRINO"]
    assert not [f for f in findings if "default.events" in json.dumps(f) and "_orc_acid_version" in json.dumps(f)]


def _next_command(stdout: str, cmd: str) -> list[str]:
    """The arguments of the printed next command ending in ``cmd`` (without ``acidctl``)."""
    import shlex

    [line] = [x.strip() for x in stdout.splitlines() if x.strip().startswith("acidctl ") and x.strip().endswith(cmd)]
    return shlex.split(line)[1:]


def test_demo_never_writes_into_an_exported_metastore(cli, tmp_path, monkeypatch):
    """A shell that exported ACIDCTL_METASTORE_URL (here: another demo's, as the README's tour
    does) and runs `acidctl demo OTHERDIR`: the demo records into its own new OTHERDIR/metastore.db,
    leaves the exported metastore byte for byte as it was, says so on stderr, and prints its
    next commands with an explicit --metastore, which read OTHERDIR's tables in that shell."""
    assert cli("demo", tmp_path / "a").code == 0
    mine = tmp_path / "a" / "metastore.db"
    before = mine.read_bytes()
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", f"sqlite:///{mine}")
    r = cli("demo", tmp_path / "b")
    assert r.code == 0, r
    assert mine.read_bytes() == before
    assert "ACIDCTL_METASTORE_URL" in r.stderr and "not used" in r.stderr and len(r.stderr.splitlines()) == 1
    own = f"sqlite:///{tmp_path / 'b' / 'metastore.db'}"
    assert f"Metastore:      {own}" in r.stdout
    args = _next_command(r.stdout, "state default.sales")
    assert args[:2] == ["--metastore", own]
    r = cli("-o", "json", *args)  # the exported URL still points at a's metastore
    assert r.code == 0, r
    assert json.loads(r.stdout)["partitions"][0]["path"].startswith(str(tmp_path / "b" / "warehouse" / "sales"))
    # JSON: the same commands; the dry run names the demo's own metastore too
    doc = json.loads(cli("-o", "json", "demo", tmp_path / "c").stdout)
    assert doc["metastore"] == f"sqlite:///{tmp_path / 'c' / 'metastore.db'}"
    assert doc["commands"][0] == f"acidctl --metastore {doc['metastore']} show tables"
    r = cli("-o", "json", "demo", "--dry-run", tmp_path / "d")
    assert json.loads(r.stdout)["metastore"] == f"sqlite:///{tmp_path / 'd' / 'metastore.db'}"
    assert mine.read_bytes() == before


def test_demo_with_the_exported_url_of_its_own_metastore_is_quiet(cli, tmp_path, monkeypatch):
    # the README's tour: ACIDCTL_METASTORE_URL names DIR/metastore.db before `acidctl demo DIR`
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", f"sqlite:///{tmp_path / 'd' / 'metastore.db'}")
    r = cli("demo", tmp_path / "d")
    assert r.code == 0, r
    assert r.stderr == ""
    assert cli("show", "write-ids", "default.sales").stdout.strip() == "default.sales:7:7:7:4"


def test_demo_refuses_a_metastore_given_on_the_command_line_before_writing(cli, tmp_path):
    """--metastore on the command line is honoured, but only an empty database: one with
    metastore tables is refused before the first file of the warehouse is written."""
    assert cli("demo", tmp_path / "a").code == 0
    url = f"sqlite:///{tmp_path / 'a' / 'metastore.db'}"
    before = (tmp_path / "a" / "metastore.db").read_bytes()
    r = cli("--metastore", url, "demo", tmp_path / "b")
    assert r.code == 6 and "already has metastore tables" in r.stderr, r
    assert not (tmp_path / "b").exists()
    assert (tmp_path / "a" / "metastore.db").read_bytes() == before
    # an empty one: the demo creates the schema in it and records there
    r = cli("--metastore", f"sqlite:///{tmp_path / 'new.db'}", "demo", tmp_path / "c")
    assert r.code == 0, r
    assert not (tmp_path / "c" / "metastore.db").exists()
    r = cli("--metastore", f"sqlite:///{tmp_path / 'new.db'}", "show", "write-ids", "default.sales")
    assert r.stdout.strip() == "default.sales:7:7:7:4"
