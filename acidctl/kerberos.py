"""Kerberos facts for one-line error messages: is there a usable ticket, and what to do.

Used where a server refused us (WebHDFS's SPNEGO in :mod:`acidctl.fs`, a GSSAPI login to the
metastore database in :mod:`acidctl.metastore.connection`). Reads the ticket cache through
``gssapi`` (the ``kerberos`` extra) when it is installed; never raises.
"""

from __future__ import annotations

import ipaddress
import os

KINIT_HINT = (
    "get a ticket with `kinit PRINCIPAL` (a service account: `kinit -kt KEYTAB PRINCIPAL`); "
    "KRB5CCNAME and KRB5_CONFIG must name the ticket cache and krb5.conf you mean"
)

EXTRA_HINT = (
    "pip install 'acidctl[kerberos]' (it builds gssapi: apt-get install libkrb5-dev gcc first), "
    "or use Debian/Ubuntu's python3-requests-kerberos"
)


def ccache_name() -> str:
    return os.environ.get("KRB5CCNAME") or "the default ticket cache"


def ticket_problem() -> str | None:
    """Why the current ticket cache cannot start a Kerberos login ("no Kerberos ticket in X",
    "the Kerberos ticket in X has expired"), or None when it holds a valid ticket or cannot
    be read without the ``gssapi`` package."""
    try:
        import gssapi
        from gssapi import exceptions as gexc
    except ImportError:
        return None
    try:
        creds = gssapi.Credentials(usage="initiate")
        lifetime = creds.lifetime
    except gexc.ExpiredCredentialsError:
        return f"the Kerberos ticket in {ccache_name()} has expired"
    except gexc.MissingCredentialsError:
        return f"no Kerberos ticket in {ccache_name()}"
    except gexc.GSSError as e:
        text = str(e)
        if "expired" in text.lower():
            return f"the Kerberos ticket in {ccache_name()} has expired"
        return f"the ticket cache {ccache_name()} is not usable: {text.splitlines()[0][:200]}"
    except Exception:  # noqa: BLE001 - a diagnosis must never fail the error it explains
        return None
    if lifetime is not None and lifetime <= 0:
        return f"the Kerberos ticket in {ccache_name()} has expired"
    return None


def gss_reason(e: BaseException) -> str | None:
    """The useful half of a GSSAPI failure from ``kerberos`` (pykerberos, pure-sasl's GSSAPI):
    its ``GSSError`` carries ``((major text, code), (minor text, code))`` and the minor text is
    the one that says what went wrong ("Server nothive/localhost@REALM not found in Kerberos
    database"); None when ``e`` is not such an error."""
    args = getattr(e, "args", ())
    parts = [a[0] for a in args if isinstance(a, tuple) and a and isinstance(a[0], str)]
    if not parts:
        return None
    minor = [p for p in parts[1:] if p.strip() and "Unknown error" not in p]
    text = (minor or parts)[-1].strip()
    if "not found in Kerberos database" in text and text.startswith("Server "):
        princ = text[len("Server ") :].split(" not found", 1)[0]
        return f"the KDC has no service principal {princ} (wrong &service=NAME or host name?)"
    return text


def host_hint(host: str) -> str | None:
    """Kerberos builds the service principal from the host name in the URL (``HTTP/HOST``,
    ``postgres/HOST``): an IP address rarely has one."""
    name = host.rsplit(":", 1)[0].strip("[]") if host.count(":") <= 1 or host.startswith("[") else host
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return None
    return f"use the server's host name in the URL, not {name}: the service principal is built from it"
