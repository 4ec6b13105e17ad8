"""Error texts: errors.redact masks secrets in every message, and file names that merely look like a key
are not (new-user report #10: ``/etc/passwd: Not an ORC file`` printed as ``passwd: *** an ORC file``)."""

from __future__ import annotations

import pytest

from acidctl.errors import InvalidInputError, redact


@pytest.mark.parametrize(
    "text, secret",
    [
        ("password=abc123", "abc123"),
        ("PGPASSWORD=abc123 psql", "abc123"),
        ("db_password: abc123", "abc123"),
        ("jdbc?user=hive&password=abc123&x=1", "abc123"),
        ("postgresql+psycopg://hive:abc123@db:5432/metastore", "abc123"),
        ("fs.s3a.secret_key = abc123", "abc123"),
        ("token%3Dabc123", "abc123"),
    ],
)
def test_secrets_are_masked(text, secret):
    out = redact(text)
    assert secret not in out
    assert "***" in out


@pytest.mark.parametrize(
    "text",
    [
        "not a readable ORC file: /etc/passwd: Not an ORC file",
        "hdfs://nn:8020/warehouse/t/token=abc/delta_0000001_0000001_0000",
        r"C:\data\secret: not found",
    ],
)
def test_paths_that_look_like_keys_are_kept(text):
    assert redact(text) == text


def test_error_messages_keep_file_names():
    e = InvalidInputError("not a readable ORC file: /etc/passwd: Not an ORC file")
    assert str(e) == "not a readable ORC file: /etc/passwd: Not an ORC file"


def test_a_relative_sqlite_url_names_the_file_it_tried_and_the_four_slash_form(tmp_path, monkeypatch):
    # new-user report #7: sqlite:///tmp/ms.db is ./tmp/ms.db; the error shows where it looked
    from acidctl.errors import MetastoreUnavailable
    from acidctl.metastore.connection import create_engine

    monkeypatch.chdir(tmp_path)
    with pytest.raises(MetastoreUnavailable) as e:
        create_engine("sqlite:///tmp/ms.db")
    assert str(tmp_path / "tmp" / "ms.db") in str(e.value)
    assert e.value.hint is not None and "sqlite:////tmp/ms.db" in e.value.hint
