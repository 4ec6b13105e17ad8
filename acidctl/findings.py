"""Validation findings shared by ``dump --meta``, ``state`` and ``compact``.

A finding carries a stable check id (the ids of ../shared/spec/directory-state.md §9, e.g.
``F04``), a severity, the path it is about and a one-line message. Commands exit with
``ExitCode.VALIDATION`` when any finding has severity ``error``.
"""

from __future__ import annotations

import dataclasses
import enum


class Severity(str, enum.Enum):
    INFO = "info"
    WARN = "warn"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warn": 1, "error": 2}[self.value]


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str
    severity: Severity
    path: str
    message: str

    def to_dict(self) -> dict:
        return {"check": self.check, "severity": self.severity.value, "path": self.path, "message": self.message}


def has_errors(findings) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
