"""Ages given on the command line (``clean --min-age``, ``show … --older-than``), in one unit.

``0``, ``500ms``, ``90s``, ``10m``, ``2h``, ``1d`` or a plain number of seconds → seconds (a
float); callers that compare with the metastore's epoch-millisecond columns multiply by 1000.
Hand-written: a regular expression is all this needs, and the suffixes are those of Hive's
own duration settings (``hive.compactor.*``).
"""

from __future__ import annotations

import re

from acidctl.errors import UsageError

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.I)
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_age(text: str) -> float:
    """An age in seconds; raises UsageError (exit 2) for anything else."""
    m = _AGE.match(text or "")
    if not m:
        raise UsageError(f"bad age {text!r}: expected e.g. 0, 500ms, 30s, 10m, 2h, 1d")
    return float(m.group(1)) * _SECONDS[(m.group(2) or "s").lower()]
