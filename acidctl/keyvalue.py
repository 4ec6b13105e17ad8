"""Repeatable ``KEY=VALUE`` options (``--spark-conf``, ``--tblproperty``, ``--fs-option``) as a
dict: one parser for the CLI and the library that decides with them (acidctl.compact.prepare)."""

from __future__ import annotations

from acidctl.errors import UsageError


def parse_kv(pairs, option: str) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` of a repeatable option → dict (values kept as strings)."""
    out = {}
    for pair in pairs or ():
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"{option} expects KEY=VALUE, got {pair!r}")
        out[k.strip()] = v.strip()
    return out
