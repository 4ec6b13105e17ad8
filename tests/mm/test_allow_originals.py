"""``--mm-allow-originals`` (the cluster's ``hive.mm.allow.originals=true``, spec A.1.1, A.5):
a table converted to insert-only keeps its old files where they are, and Hive's MM reader
reads them — files in the partition directory and in non-ACID subdirectories — as long as
no base exists; a major compaction folds them into the base. Expected rows come from the
layout (tests/mm/hivelayout.py)."""

from __future__ import annotations

import json

import pytest

from tests.mm import hivelayout as H
from tests.mm.test_mm_tables import merged, norm, read_output

WL = "default.t:2:9223372036854775807::"
OLD = [H.row(100), H.row(101, name="old")]  # the table's files before the conversion
OLD_DIR = [H.row(102, tags=["d"])]
D1 = [H.row(1), H.row(2)]
D2 = [H.row(3, amount=1.25)]


def table(tmp_path, fmt):
    return H.build(
        tmp_path / "t",
        fmt,
        {
            ".": {"000000_0": OLD},
            "olddir": {"000000_0": OLD_DIR},
            "delta_0000001_0000001_0000": {"000000_0": D1},
            "delta_0000002_0000002_0000": {"000000_0": D2},
        },
    )


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_originals_are_read_only_when_the_cluster_allows_them(tmp_path, cli, fmt):
    root = table(tmp_path, fmt)
    assert norm(merged(cli, root, WL, fmt)) == norm(D1 + D2)  # Hive's default: invisible
    assert norm(merged(cli, root, WL, fmt, "--mm-allow-originals")) == norm(OLD + OLD_DIR + D1 + D2)

    def state(*extra):
        r = cli(
            "-o",
            "json",
            "state",
            root,
            "--tblproperty",
            "transactional_properties=insert_only",
            "--write-ids",
            WL,
            *extra,
        )
        assert r.code == 0, r
        return json.loads(r.stdout)

    plain = state()
    assert {f["check"] for f in plain["findings"]} >= {"MM01"}
    assert plain["partitions"][0]["snapshot"]["originals_read"] is False
    allowed = state("--mm-allow-originals")
    assert "MM01" not in {f["check"] for f in allowed["findings"]}
    assert allowed["partitions"][0]["snapshot"]["originals_read"] is True


@pytest.mark.parametrize("fmt", ["orc", "text"])
def test_major_compaction_folds_the_originals_into_the_base(tmp_path, cli, fmt):
    root = table(tmp_path, fmt)
    args = ["compact", "--major", "--engine", "local", root, "--format", fmt, "--columns", H.COLUMNS_SPEC]
    # without the setting the originals would be hidden by the base unread: refused, as before
    r = cli(*args, "--write-ids", WL)
    assert r.code == 6 and "000000_0" in r.stderr
    r = cli("-o", "json", *args, "--write-ids", WL, "--mm-allow-originals")
    assert r.code == 0, r
    p = json.loads(r.stdout)["partitions"][0]
    assert p["output_dirs"] == ["base_0000002"]
    assert sorted(p["input_dirs"]) == sorted(
        ["000000_0", "olddir", "delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    )
    assert (p["rows_in"], p["rows_out"]) == (6, 6)
    out = root / "base_0000002" / "000000_0"
    want = OLD + OLD_DIR + D1 + D2
    if fmt == "text":
        got = sorted(out.read_bytes().splitlines())
        assert got == sorted(H.encode("text", want).splitlines())
    else:
        assert norm(read_output(out, fmt)) == norm(want)
    # the base now hides the originals (Hive drops originals once a base exists): same rows
    assert norm(merged(cli, root, WL, fmt)) == norm(want)
    assert norm(merged(cli, root, WL, fmt, "--mm-allow-originals")) == norm(want)
    r = cli("clean", root, "--format", fmt, "--write-ids", WL, "--min-age", "0", "--execute")
    assert r.code == 0, r  # Hive's default: the originals stay (no compaction reads them)
    assert (root / "000000_0").is_file() and (root / "olddir").is_dir()
    r = cli("clean", root, "--format", fmt, "--write-ids", WL, "--min-age", "0", "--execute", "--mm-allow-originals")
    assert r.code == 0, r
    assert sorted(x.name for x in root.iterdir() if not x.name.startswith(".")) == ["base_0000002"]


def test_originals_under_a_base_stay_unread(tmp_path, cli):
    root = H.build(
        tmp_path / "t",
        "orc",
        {".": {"000000_0": OLD}, "base_0000001": {"000000_0": D1}, "delta_0000002_0000002_0000": {"000000_0": D2}},
    )
    assert norm(merged(cli, root, WL, "orc", "--mm-allow-originals")) == norm(D1 + D2)


def test_the_option_is_for_insert_only_tables(tmp_path, cli):
    root = table(tmp_path, "orc")
    r = cli("state", root, "--write-ids", WL, "--mm-allow-originals")
    assert r.code == 2 and "insert-only" in r.stderr


@pytest.mark.parametrize("out", ["parquet", "orc"])
def test_export_reads_what_hive_reads(tmp_path, cli, out):
    """``export`` of an insert-only table: the rows a Hive reader reads, one file per partition,
    the originals only with the setting; read back with pyarrow."""
    import pyarrow.orc as po
    import pyarrow.parquet as pq

    root = table(tmp_path, "orc")

    def export(dest, *extra):
        r = cli(
            "-o",
            "json",
            "export",
            root,
            tmp_path / dest,
            "--to",
            out,
            "--format",
            "orc",
            "--write-ids",
            WL,
            *extra,
        )
        assert r.code == 0, r
        f = tmp_path / dest / f"000000_0.{out}"
        t = pq.read_table(f) if out == "parquet" else po.ORCFile(str(f)).read()
        return norm(t.cast(H.ARROW).to_pylist())

    assert export("plain") == norm(D1 + D2)
    assert export("with", "--mm-allow-originals") == norm(OLD + OLD_DIR + D1 + D2)
    r = cli("export", root, tmp_path / "rid", "--format", "orc", "--write-ids", WL, "--with-row-id")
    assert r.code == 2 and "no ROW__ID" in r.stderr


def test_partition_path_keeps_its_partition_column(tmp_path, cli):
    """First-use report: ``dump --merged`` on a partition *path* printed no partition column;
    as with ``DB.TABLE/part``, the trailing ``k=v`` directories are the partition."""
    part = H.build(tmp_path / "t" / "ds=2026-01-02", "orc", {"delta_0000001_0000001_0000": {"000000_0": D1}})
    rows = merged(cli, part, "default.t:1:9223372036854775807::", "orc")
    assert [(r["id"], r["ds"]) for r in rows] == [(1, "2026-01-02"), (2, "2026-01-02")]


def test_count_honours_allow_originals(tmp_path, cli):
    """``dump --merged --count`` counts what ``dump --merged`` prints, originals included only
    with ``--mm-allow-originals``."""
    root = table(tmp_path, "orc")

    def count(*extra):
        r = cli(
            "-o",
            "json",
            "dump",
            "--merged",
            "--count",
            root,
            "--format",
            "orc",
            "--columns",
            H.COLUMNS_SPEC,
            "--write-ids",
            WL,
            *extra,
        )
        assert r.code == 0, r
        return json.loads(r.stdout)["rows"]

    assert count() == len(D1 + D2)
    assert count("--mm-allow-originals") == len(OLD + OLD_DIR + D1 + D2)
