"""`acidctl dump` against ORC Java FileDump's own output (the goldens are the oracle)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from acidctl.dump import DumpOptions, dump
from acidctl.fs import TableFS
from tests.conftest import FIXTURES, GOLDEN

FILEDUMP = GOLDEN / "filedump"


def _goldens():
    out = []
    for p in sorted(FILEDUMP.rglob("*.d.jsonl*")):
        rel = str(p.relative_to(FILEDUMP)).replace(".d.jsonl.gz", "").replace(".d.jsonl", "")
        src = FIXTURES / rel if rel.startswith("real/") else GOLDEN / rel
        out.append(pytest.param(rel, src, p, id=rel))
    return out


def _read(p: Path) -> bytes:
    data = p.read_bytes()
    return gzip.decompress(data) if p.suffix == ".gz" else data


def _ours(src: Path, **kw) -> bytes:
    t = TableFS(str(src))
    return b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(**kw), framing=True))


GOLDEN_CASES = _goldens()


def test_every_golden_is_covered():
    # 3 pyorc files + 3 Hive 2.3 files + 26 origin files
    assert len(GOLDEN_CASES) == 32


@pytest.mark.parametrize("rel,src,golden", GOLDEN_CASES)
def test_dump_is_byte_identical_to_filedump(rel, src, golden):
    assert _ours(src) == _read(golden)


@pytest.mark.parametrize(
    "rel,src,golden",
    [
        c
        for c in GOLDEN_CASES
        if "multistripe" not in c.id and "nationFile25k" not in c.id and "invalid_utf8" not in c.id
    ],
)
def test_python_path_is_byte_identical_to_filedump(rel, src, golden):
    """The exact slow path (used for stripes Arrow cannot hold) on every golden too.
    (pyorc cannot decode invalid UTF-8, so invalid_utf8 is rendered by the Arrow path only;
    test_python_path_refuses_invalid_utf8 covers what happens there.)"""
    assert _ours(src, engine="python") == _read(golden)


def test_vectorised_path_equals_python_path_on_every_type():
    """alltypes goes through the Python path (its timestamps overflow Arrow's nanoseconds);
    without the two timestamp columns Arrow can read it, and both paths must agree."""
    import pyorc

    src = GOLDEN / "alltypes" / "bucket_00000"
    with open(src, "rb") as f:
        names = list(pyorc.Reader(f).schema.fields["row"].fields)
    cols = [n for n in names if not n.startswith("c_timestamp")]
    fast = _ours(src, columns=cols)
    slow = _ours(src, columns=cols, engine="python")
    assert fast == slow
    assert fast.count(b"\n") == 40 + 2


def _raw_lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.startswith(b"{")]


def test_json_mode_prints_bare_rows():
    src = GOLDEN / "alltypes_multistripe" / "bucket_00000"
    t = TableFS(str(src))
    out = b"".join(bytes(c) for c in dump(t, t.root, DumpOptions(limit=1000), framing=False))
    golden = _read(FILEDUMP / "alltypes_multistripe" / "bucket_00000.d.jsonl.gz")
    assert out.split(b"\n")[:-1] == _raw_lines(golden)[:1000]


META_CASES = [c for c in GOLDEN_CASES]


@pytest.mark.parametrize("rel,src,golden", META_CASES)
def test_meta_agrees_with_filedump_json(rel, src, golden):
    from acidctl.orc.meta import inspect_file

    fd = json.loads(
        (golden.parent / golden.name.replace(".d.jsonl.gz", ".meta.json").replace(".d.jsonl", ".meta.json")).read_text()
    )
    t = TableFS(str(src))
    r = inspect_file(t, t.root)
    assert r.rows == fd["numberOfRows"]
    assert r.compression == fd["compression"]
    if fd["compression"] != "NONE":
        assert r.compression_block_size == fd["compressionBufferSize"]
    assert r.format_version == fd["fileVersion"]
    assert r.schema == fd["schemaString"]
    assert r.file_length == fd["fileLength"]
    assert [(s.offset, s.rows) for s in r.stripes] == [
        (s["stripeInformation"]["offset"], s["stripeInformation"]["rowCount"]) for s in fd["stripes"]
    ]
    assert [s.length for s in r.stripes] == [
        s["stripeInformation"]["indexLength"]
        + s["stripeInformation"]["dataLength"]
        + s["stripeInformation"]["footerLength"]
        for s in fd["stripes"]
    ]
    # FileDump moves hive.acid.stats out of userMetadata into numInserts/numUpdates/numDeletes
    meta = dict(r.user_metadata)
    stats = meta.pop("hive.acid.stats", None)
    assert meta == fd.get("userMetadata", {})
    if stats is not None:
        assert r.acid_stats == {"inserts": fd["numInserts"], "updates": fd["numUpdates"], "deletes": fd["numDeletes"]}


def test_python_path_refuses_invalid_utf8_with_a_clear_error():
    from acidctl.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        _ours(GOLDEN / "invalid_utf8" / "bucket_00000", engine="python")
