"""Kerberos fixtures: the session's KDC (``kdc``, tests/conftest.py), apache2 + mod_auth_gssapi
in front of the WebHDFS test server (``spnego_hdfs``, once per session), and ``kerberos_env``
(KRB5_CONFIG and KRB5CCNAME of the session's ticket for one test)."""

from __future__ import annotations


import pytest

from tests.kerberos.realm import SpnegoProxy, missing_apache
from tests.webhdfs_server import WebHDFS
from tests.servers import unavailable


@pytest.fixture
def kerberos_env(kdc, monkeypatch):
    """This process speaks Kerberos in the test realm with alice's ticket."""
    pytest.importorskip("requests_kerberos")
    for k, v in kdc.env().items():
        monkeypatch.setenv(k, v)
    return kdc


class SecuredHDFS:
    """The WebHDFS test server (``server``) behind SPNEGO (``proxy``): ``url()`` names it by
    ``localhost`` (the service principal is HTTP/localhost)."""

    def __init__(self, server: WebHDFS, proxy: SpnegoProxy):
        self.server = server
        self.proxy = proxy

    def url(self, path: str = "/") -> str:
        return self.proxy.url(path)

    def local(self, hdfs_path: str) -> str:
        return self.server.local(hdfs_path)

    def reset(self) -> None:
        s = self.server
        s.ops.clear()
        s.credentials.clear()
        s.requests.clear()
        s.tokens.clear()
        s.token_renew_interval = 3600.0
        s.redirect_delegation = True


@pytest.fixture(scope="session")
def _spnego_hdfs_session(kdc, tmp_path_factory):
    missing = missing_apache()
    if missing:
        msg = f"apache2 / mod_auth_gssapi missing: {', '.join(missing)} (install with scripts/install-test-servers.sh)"
        unavailable(msg)
    root = tmp_path_factory.mktemp("spnego-hdfs")
    with WebHDFS(str(root)) as server:
        proxy = SpnegoProxy(kdc, server.port)
        try:
            proxy.start()
            yield SecuredHDFS(server, proxy)
        finally:
            proxy.stop()


@pytest.fixture
def spnego_hdfs(_spnego_hdfs_session):
    _spnego_hdfs_session.reset()
    return _spnego_hdfs_session
