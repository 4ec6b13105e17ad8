"""``TableFS`` on plain local paths mutates through os/shutil (no fsspec import): the same
trees and the same errors as fsspec's LocalFileSystem, which a ``file://`` URL with an fsspec
option goes through; and ``compact`` lists and plans without importing pyarrow,
numpy, pyorc or fsspec in the driver (the local engine's workers import them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from acidctl.errors import PathNotFound
from acidctl.fs import TableFS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tree(root) -> dict:
    out = {}
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        out[rel] = sorted(files)
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                out[os.path.join(rel, f)] = fh.read()
    return out


def _script(tfs: TableFS, root: str) -> list:
    """The same mutations on ``tfs``; the error class of each one that fails."""
    errors = []
    j = lambda *p: os.path.join(root, *p)  # noqa: E731
    tfs.makedirs(j("a", "b"))
    tfs.makedirs(j("a", "b"))  # exists: fine
    tfs.write_bytes(j("a", "b", "f"), b"one")
    tfs.write_bytes(j("a", "b", "f"), b"two")  # overwritten
    tfs.write_bytes(j("a", "g"), b"three")
    tfs.rename(j("a", "b"), j("c"))
    tfs.makedirs(j("d", "e"))
    tfs.rm(j("d"), recursive=True)
    tfs.rm(j("a", "g"))
    for op in (
        lambda: tfs.rm(j("c")),  # a directory without recursive
        lambda: tfs.rm(j("nothing")),
        lambda: tfs.write_bytes(j("missing", "f"), b"x"),
        lambda: tfs.rename(j("nothing"), j("x")),
    ):
        try:
            op()
            errors.append(None)
        except Exception as e:
            errors.append(type(e).__name__)
    return errors


def test_local_mutations_match_fsspec(tmp_path):
    plain, via = tmp_path / "plain", tmp_path / "fsspec"
    plain.mkdir()
    via.mkdir()
    a = TableFS(str(plain))
    b = TableFS("file://" + str(via), {"auto_mkdir": False})
    assert a._fs is None and b._fs is not None  # the two paths under test
    errors = _script(a, str(plain))
    assert errors == _script(b, str(via))
    assert errors[0] == "ValueError" and errors[1:] == ["PathNotFound"] * 3  # each one failed
    assert _tree(plain) == _tree(via)
    assert _tree(plain)["c"] == ["f"] and _tree(plain)[os.path.join("c", "f")] == b"two"


def test_missing_path_is_path_not_found(tmp_path):
    with pytest.raises(PathNotFound):
        TableFS(str(tmp_path)).rm(str(tmp_path / "nothing"))


def test_compact_driver_imports_no_pyarrow(tmp_path):
    """The driver's listing and planning of every partition (``--dry-run``: the full plan,
    tasks and their input files included) import none of the task's libraries."""
    from tests.acidfiles import nation_table

    table = nation_table(tmp_path)
    code = (
        "import sys, json\n"
        "from acidctl.cli.main import main\n"
        "sys.argv = ['acidctl', '-o', 'json', 'compact', '--major', '--dry-run', '--write-ids', "
        f"'db.t:9:9223372036854775807::', {str(table)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pyarrow', 'numpy', 'pyorc', 'fsspec'))), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["partitions"] and plan["partitions"][0]["status"] == "compact"
    assert json.loads(r.stderr.strip().splitlines()[-1]) == []
