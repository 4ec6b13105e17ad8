"""``compact`` on a whole table locks the partitions a first, unlocked plan says run (a worker on
another partition is then no conflict) and plans again under the locks — two listings of the
table. A table the metastore knows as unpartitioned has nothing to choose: it is locked whole
without the first plan, so it is listed once, under its lock. Counted with the TableFS.ls calls
on the table directory and the order against the lock's acquisition."""

from __future__ import annotations

from pathlib import Path

import pytest

from acidctl.compact.lock import LockSet
from acidctl.fs import TableFS


@pytest.fixture
def demo_root(tmp_path, cli):
    assert cli("demo", tmp_path / "demo").code == 0
    return tmp_path / "demo"


def _watch(monkeypatch, table_dir: Path) -> list[str]:
    """Events in order: "ls" for every listing of ``table_dir`` itself, "lock" when the run's
    locks are taken."""
    events: list[str] = []
    orig_ls, orig_acquire = TableFS.ls, LockSet.acquire

    def ls(self, path):
        p = str(path)
        p = p[len("file://") :] if p.startswith("file://") else p
        if Path(p).resolve() == table_dir.resolve():
            events.append("ls")
        return orig_ls(self, path)

    def acquire(self):
        events.append("lock")
        return orig_acquire(self)

    monkeypatch.setattr(TableFS, "ls", ls)
    monkeypatch.setattr(LockSet, "acquire", acquire)
    return events


@pytest.mark.parametrize(
    "table,partitioned",
    [("employee", False), ("events", False), ("sales", True)],
    ids=["full-acid", "insert-only", "partitioned"],
)
def test_the_first_plan_lists_only_partitioned_tables(cli, demo_root, monkeypatch, table, partitioned):
    url = f"sqlite:///{demo_root / 'metastore.db'}"
    events = _watch(monkeypatch, demo_root / "warehouse" / table)
    r = cli("--metastore", url, "compact", "--major", "--engine", "local", "--no-register", f"default.{table}")
    assert r.code == 0, r
    assert events.count("lock") == 1
    before = events[: events.index("lock")]
    # partitioned: the unlocked plan lists the table to choose the partition locks; else nothing
    assert before == (["ls"] if partitioned else [])


def test_unpartitioned_table_is_listed_once_less_than_when_not_known(cli, tmp_path, monkeypatch):
    """The same run on the same table, through the metastore (known unpartitioned) and through
    its path (not known without listing): exactly the first listing fewer."""
    counts = []
    for name, by_path in (("a", False), ("b", True)):
        root = tmp_path / name
        assert cli("demo", root).code == 0
        url = f"sqlite:///{root / 'metastore.db'}"
        emp = root / "warehouse" / "employee"
        with monkeypatch.context() as m:
            events = _watch(m, emp)
            target = (
                ["--write-ids", "default.employee:3:9223372036854775807::", str(emp)]
                if by_path
                else ["default.employee"]
            )
            args = [] if by_path else ["--metastore", url]
            r = cli(*args, "compact", "--major", "--engine", "local", "--no-register", *target)
            assert r.code == 0, r
            counts.append((events.count("ls"), events.index("lock")))
    (by_table, lock_at_table), (by_path, lock_at_path) = counts
    assert by_path - by_table == 1
    assert lock_at_table == 0 and lock_at_path == 1
