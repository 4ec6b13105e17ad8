"""The metastore database over Kerberos: PostgreSQL with ``hostgssenc ... gss`` in pg_hba.conf
(``pg_gss_server``), a ticket from the session's MIT KDC (``kdc``). The server's own log says
how each connection authenticated (``log_connections``: ``method=gss``, ``encrypted=yes``)."""

from __future__ import annotations

import json
import warnings

import pytest

from acidctl.errors import ExitCode
from tests.conftest import run_cli

pytestmark = pytest.mark.postgres


@pytest.fixture
def ticket(kdc, monkeypatch):
    for k, v in kdc.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("PGGSSENCMODE", raising=False)
    return kdc


def _url(info: dict, *, host: str = "localhost", query: str = "krbsrvname=postgres") -> str:
    return f"postgresql+psycopg://{info['user']}@{host}:{info['port']}/{info['db']}" + (f"?{query}" if query else "")


def _gss_logins(info: dict) -> list[str]:
    with open(info["log"]) as f:
        return [ln for ln in f if 'identity="alice@ACIDCTL.TEST" method=gss' in ln]


@pytest.fixture
def gss_metastore(pg_gss_server, ticket):
    """A Hive 4 metastore in the GSSAPI-only server (created once), with one open and one
    aborted transaction of its own."""
    from acidctl.metastore.init import init_metastore
    from acidctl.metastore.recorder import Recorder

    url = _url(pg_gss_server)
    if not pg_gss_server.get("initialised"):
        init_metastore(url, hive_version=4)
        rec = Recorder(url)
        t = rec.open_txn(user="bob", host="h2")
        rec.abort_txn(t)
        rec.open_txn(user="carol", host="h3")
        rec.engine.dispose()
        pg_gss_server["initialised"] = True
    return url


def test_show_transactions_over_gssapi_with_encryption(gss_metastore, pg_gss_server):
    before = len(_gss_logins(pg_gss_server))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = run_cli("-o", "json", "--metastore", gss_metastore, "show", "transactions")
    assert r.code == 0, r
    got = [(t["state"], t["user"], t["host"]) for t in json.loads(r.stdout)["transactions"]]
    assert got == [("ABORTED", "bob", "h2"), ("OPEN", "carol", "h3")]
    # the server admitted the command by Kerberos, over a GSSAPI-encrypted connection (the only
    # way its pg_hba.conf lets anyone in over TCP)
    logins = _gss_logins(pg_gss_server)
    assert len(logins) > before
    with open(pg_gss_server["log"]) as f:
        assert "GSS (authenticated=yes, encrypted=yes, principal=alice@ACIDCTL.TEST)" in f.read()
    # psycopg's RuntimeWarning about relying on the gssencmode default does not reach the user
    assert not [w for w in caught if "gssencmode" in str(w.message)]
    assert "gssencmode" not in r.stderr and "Warning" not in r.stderr


def test_no_gssencmode_runtime_warning_and_encryption_by_default(pg_gss_server, ticket):
    """On a ``host ... gss`` database (encryption optional) psycopg's bundled libpq, left to its
    compiled default (gssencmode=disable), logs in with GSSAPI unencrypted and warns
    (RuntimeWarning); acidctl's engines say libpq's documented default (prefer): encrypted, no
    warning."""
    import sqlalchemy as sa

    from acidctl.metastore.connection import create_engine

    url = _url(pg_gss_server).replace("/metastore?", "/plain?")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with create_engine(url).connect() as conn:
            assert conn.execute(
                sa.text("SELECT gss_authenticated, encrypted FROM pg_stat_gssapi WHERE pid = pg_backend_pid()")
            ).one() == (True, True)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]


def test_explicit_gssencmode_in_the_url_is_kept(gss_metastore, pg_gss_server):
    r = run_cli("--metastore", gss_metastore.replace("krbsrvname=postgres", "gssencmode=disable"), "show", "locks")
    # the URL's choice wins: without encryption the hostgssenc-only server has no entry for us
    assert r.code == ExitCode.UNAVAILABLE and "no encryption" in r.stderr, r


def test_no_ticket_is_an_authentication_error(gss_metastore, pg_gss_server, monkeypatch, tmp_path):
    pytest.importorskip("gssapi")  # the kerberos extra reads the ticket cache for the message
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path}/none")
    r = run_cli("--metastore", gss_metastore, "show", "transactions")
    assert r.code == ExitCode.AUTH, r
    assert "Kerberos (GSSAPI) login to the metastore database" in r.stderr and "no Kerberos ticket" in r.stderr
    assert "kinit" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("--metastore", gss_metastore + "&gssencmode=require", "show", "transactions")
    assert r.code == ExitCode.AUTH and "no Kerberos ticket" in r.stderr, r


def test_ip_address_host_gets_the_host_name_hint(gss_metastore, pg_gss_server):
    r = run_cli("--metastore", gss_metastore.replace("@localhost:", "@127.0.0.1:"), "show", "locks")
    assert r.code == ExitCode.AUTH, r
    assert "not 127.0.0.1" in r.stderr and "service principal" in r.stderr, r.stderr


def test_mariadb_gssapi_account_is_refused_clearly():
    """PyMySQL has no GSSAPI: an account IDENTIFIED VIA gssapi makes PyMySQL fail with
    CR_AUTH_PLUGIN_CANNOT_LOAD (pymysql/connections.py, ``_process_auth``); acidctl says so."""
    import pymysql
    from sqlalchemy import exc

    from acidctl.errors import AuthenticationFailed
    from acidctl.metastore.connection import translate_error

    orig = pymysql.err.OperationalError(2059, "Authentication plugin 'b'auth_gssapi_client'' not configured")
    err = translate_error(exc.OperationalError("connect", {}, orig), "mysql+pymysql://hive@db.example:3306/ms")
    assert isinstance(err, AuthenticationFailed) and err.exit_code == ExitCode.AUTH
    assert "PyMySQL" in str(err) and "thrift://" in (err.hint or "")
