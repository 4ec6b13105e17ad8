"""A command's TABLE argument and snapshot options → :class:`acidctl.target.Target`, with what
the resolution found told to the user the same way in every command (stderr; JSON on stdout
stays clean): its warnings as notes, and, for commands that print rows, each assumption.

Only the resolution's messages here; the resolution itself is :func:`acidctl.target.resolve_target`
(imported inside, so ``acidctl --help`` stays fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

#: how every command's TABLE argument is told apart (appended to its help): acidctl.target.names_table
from acidctl.cli.options import TABLE_RULE  # noqa: F401  (declared once, with the options)

if TYPE_CHECKING:
    from acidctl.acid.writeids import WriteIdList
    from acidctl.target import Target


def resolve(settings: Any, spec: str, *, warn_assumptions: bool = False, **snapshot_options: Any) -> Target:
    """:func:`acidctl.target.resolve_target` for ``spec``; prints each warning (and with
    ``warn_assumptions`` each ``ASSUMED:`` line, for output that does not carry them itself)."""
    from acidctl.target import resolve_target

    target = resolve_target(settings, spec, **snapshot_options)
    if warn_assumptions:
        for note in target.assumptions:
            settings.output.warn("ASSUMED: " + note)
    for w in target.warnings:
        settings.output.note("acidctl: warning: " + w)
    for n in target.notes:
        settings.output.note("acidctl: note: " + n)
    return target


def snapshot_as_of(target: Target, as_of: int | None) -> WriteIdList:
    """The target's write-id list, cut at ``--as-of`` when given."""
    return target.write_ids if as_of is None else target.write_ids.as_of(as_of)
