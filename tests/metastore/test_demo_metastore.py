"""``acidctl demo`` and the metastore it records into, on every backend: an exported
``ACIDCTL_METASTORE_URL`` naming an empty database (the one a user works with) is never written
into — not even a schema — while ``--metastore`` on the command line gets the demo's schema and
records."""

from __future__ import annotations

import sqlalchemy as sa


def _tables(url: str) -> list[str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_an_exported_empty_database_stays_empty(cli, empty_db, tmp_path, monkeypatch):
    monkeypatch.setenv("ACIDCTL_METASTORE_URL", empty_db)
    r = cli("demo", tmp_path / "d")
    assert r.code == 0, r
    assert "not used" in r.stderr
    if not empty_db.startswith("sqlite"):  # a SQLite file that did not exist is not even created
        assert _tables(empty_db) == []
    else:
        assert not (tmp_path / empty_db.rsplit("/", 1)[-1]).exists()
    own = f"sqlite:///{tmp_path / 'd' / 'metastore.db'}"
    r = cli("--metastore", own, "show", "write-ids", "default.sales")
    assert r.stdout.strip() == "default.sales:7:7:7:4"


def test_a_database_given_on_the_command_line_gets_the_demo(cli, empty_db, tmp_path):
    r = cli("--metastore", empty_db, "demo", tmp_path / "d")
    assert r.code == 0, r
    assert "TXNS" in {t.upper() for t in _tables(empty_db)}
    assert not (tmp_path / "d" / "metastore.db").exists()
    r = cli("--metastore", empty_db, "show", "write-ids", "default.sales")
    assert r.stdout.strip() == "default.sales:7:7:7:4"
