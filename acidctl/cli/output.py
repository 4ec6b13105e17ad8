"""The one renderer: text (tabulate tables) or JSON, chosen once by ``--output``.

Commands compute plain data (dicts, lists, dataclasses with ``to_dict``) and hand it to
:meth:`Output.emit` together with a function that turns the same data into text. JSON mode
prints one document (``emit``) or JSON Lines (``jsonl``); errors always go to stderr: one line
of text, or one JSON object ``{"error": {...}}`` in JSON mode. stdout carries results only.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import re
import sys
from typing import Any, Callable, Iterable, Sequence

from acidctl.errors import AcidctlError, UsageError, redact


def _default(obj: Any):
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, (_dt.datetime, _dt.date)):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def to_json(data: Any, *, pretty: bool = True) -> bytes:
    import orjson

    opts = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if pretty else 0)
    return orjson.dumps(data, default=_default, option=opts)


_GAP = 2  # tabulate's "simple" format puts two spaces between columns
_MIN_TEXT = 8  # free-text columns are not wrapped narrower than this (nor than their longest word)


@dataclasses.dataclass(frozen=True)
class Col:
    """One column of a text table, declared by the command that prints it.

    ``header``: the text heading (printed in UPPER CASE, kubectl's style, whatever the
    declaration's case); ``key``: the JSON key of the same value in the command's ``-o json``
    (default: the header in snake case), so a column can be found in JSON and chosen by either
    name with ``-o custom-columns``; ``text``: free text (a reason, message, hint) that may wrap
    at spaces to fit the terminal — every other cell (names, paths, partition specs, ids,
    numbers) is never split; ``wide``: shown only with ``-o wide`` (or when chosen by
    ``-o custom-columns``), not in the default view."""

    header: str
    key: str = ""
    text: bool = False
    wide: bool = False

    @property
    def json_key(self) -> str:
        return self.key or _key(self.header)


@dataclasses.dataclass
class _Layout:
    """How text tables are laid out in this invocation (set once by the CLI's global options),
    and which column names the tables printed so far offered and matched (for
    :meth:`Output.emit`'s check of ``custom-columns``)."""

    wide: bool = False
    columns: tuple[str, ...] | None = None  # -o custom-columns=A,B: names as given
    offered: list[str] = dataclasses.field(default_factory=list)
    matched: set[str] = dataclasses.field(default_factory=set)
    tables: int = 0
    #: (header, JSON key) of the columns each table printed in this process showed (tests map
    #: every text column to its JSON key with it)
    shown: list[list[tuple[str, str]]] = dataclasses.field(default_factory=list)


_layout = _Layout()

#: ``-o/--output`` values: ``text``, ``json``, ``wide`` (text at full width) and
#: ``custom-columns=COL1,COL2,...`` (text tables with only these columns, as kubectl's)
OUTPUT_CHOICES = ("text", "json", "wide", "custom-columns=")
CUSTOM_COLUMNS = "custom-columns="


def parse_output(value: str) -> tuple[str, bool, tuple[str, ...] | None]:
    """An ``-o/--output`` value → (mode ``text``/``json``, wide, chosen columns or None).

    Raises ``ValueError`` (with the one-line reason) for anything else; ``text`` and ``json`` are
    case-insensitive as before, and so is the ``custom-columns=`` prefix (the names keep their
    spelling for the messages; they are matched case-insensitively)."""
    text = value.strip()
    low = text.lower()
    if low in ("text", "json"):
        return low, False, None
    if low == "wide":
        return "text", True, None
    if low.startswith(CUSTOM_COLUMNS):
        names = tuple(n.strip() for n in text[len(CUSTOM_COLUMNS) :].split(","))
        if not names or any(not n for n in names):
            raise ValueError(
                "custom-columns= needs a comma-separated list of column names, e.g. custom-columns=NAME,ROLE"
            )
        return "text", False, names
    raise ValueError("must be text, json, wide or custom-columns=COL1,COL2,...")


def set_wide(wide: bool) -> None:
    """``--wide`` / ``-o wide``: never fit tables to the terminal (set once per invocation)."""
    _layout.wide = bool(wide)


def set_columns(columns: Sequence[str] | None) -> None:
    """``-o custom-columns=...``: the column names every text table keeps (None: all)."""
    _layout.columns = tuple(columns) if columns else None


def _key(name: str) -> str:
    """A header as the JSON key it would be (``WRITE IDS`` → ``write_ids``), for matching."""
    return "_".join(name.lower().replace("-", " ").split())


def choose_columns(headers: Sequence[str], keys: Sequence[str] | None) -> list[int] | None:
    """Indexes of ``-o custom-columns`` in this table, in the order given (None: every column).

    A name matches a column whose text header or JSON key is the same, ignoring case (and
    spaces/underscores between words). The names offered and matched are recorded so that
    :meth:`Output.emit` can tell a name no table of the result has (a usage error)."""
    if _layout.columns is None:
        return None
    keys = list(keys) if keys is not None else [_key(h) for h in headers]
    _layout.tables += 1
    picked = []
    for name in _layout.columns:
        want = _key(name)
        for k, (h, key) in enumerate(zip(headers, keys)):
            if want in (_key(h), _key(key)):
                picked.append(k)
                _layout.matched.add(name)
                break
    for h, key in zip(headers, keys):
        for offer in (h,) if _key(key) == _key(h) else (h, key):
            if offer not in _layout.offered:
                _layout.offered.append(offer)
    return picked


def terminal_width() -> int | None:
    """How many columns text tables may use, or None for no limit.

    ``--wide`` → no limit; ``$COLUMNS`` when set; the terminal's width when stdout is a
    terminal; no limit when stdout is a pipe or file (scripts grep whole lines; they should
    read ``--output json`` anyway), as kubectl and docker do.
    """
    import os
    import shutil

    if _layout.wide:
        return None
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        if sys.stdout.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


def wrap(line: str, *, indent: str = "    ") -> str:
    """A prose line (a finding, a replay step) wrapped to :func:`terminal_width`, continuation
    lines indented; unchanged without a limit (pipes, ``--wide``). Words are never broken (a
    path longer than the width keeps its own line), so nothing is lost for copy and paste."""
    import textwrap

    limit = terminal_width()
    if not limit or len(line) <= limit:
        return line
    # a quantity stays on one line with its unit ("325 B", "1.7 KiB", "5m 3s": acidctl.units)
    glued = _UNIT_SPACE.sub(lambda m: (m.group(1) or m.group(2)) + _GLUE, line)
    return "\n".join(
        textwrap.wrap(
            glued,
            width=max(limit, len(indent) + 20),
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    ).replace(_GLUE, " ")


#: the space inside a size or a two-unit duration (acidctl.units.size / duration: ``325 B``,
#: ``1.7 KiB``, ``5m 3s``), which :func:`wrap` never breaks; textwrap splits only at ASCII
#: whitespace, so the glue holds
_UNIT_SPACE = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?) (?=(?:B|KiB|MiB|GiB|TiB|PiB)\b)|(?<![\w.])(\d+[dhm]) (?=\d+[hms]\b)"
)
_GLUE = "\x1f"


def fit_widths(natural: Sequence[int], floors: Sequence[int | None], width: int) -> list[int] | None:
    """Content widths so that columns ``natural`` wide fit ``width`` (None: they already fit).

    Only columns with a floor (free text) shrink, the widest first, never below their floor
    (``max(_MIN_TEXT, longest word)``, so no word is split); the others keep their width. When
    even that does not fit, the narrowest such layout is returned (the line is then longer
    than ``width``: names are never broken to make it fit)."""
    cols = list(natural)
    total = sum(cols) + _GAP * (len(cols) - 1)
    if total <= width:
        return None
    while total > width:
        movable = [k for k, f in enumerate(floors) if f is not None and cols[k] > f]
        if not movable:
            break
        i = max(movable, key=lambda k: cols[k])
        floor = floors[i]
        assert floor is not None
        others = max((cols[k] for k in movable if k != i), default=floor)
        step = min(cols[i] - floor, total - width, max(1, cols[i] - others))
        cols[i] -= step
        total -= step
    return cols


def _cell(v: Any, missing: str) -> str:
    return missing if v is None else str(v)


def _wrap_cell(text: str, width: int) -> str:
    import textwrap

    out = []
    for para in text.split("\n"):
        out.extend(textwrap.wrap(para, width=width, break_long_words=False, break_on_hyphens=False) or [""])
    return "\n".join(out)


def _columns(columns: Sequence[Col | str]) -> list[Col]:
    return [c if isinstance(c, Col) else Col(c) for c in columns]


def table(
    rows: Sequence[Sequence[Any]],
    columns: Sequence[Col | str],
    *,
    missing: str = "",
    empty: str = "(none)",
    width: int | None | bool = True,
) -> str:
    """A text table (tabulate, "simple") of ``rows`` (one value per declared column).

    The view: ``-o custom-columns=...`` → the chosen columns (by header or JSON key, in the
    order given; a table with none of them is left out: ""); ``-o wide`` → every column;
    otherwise the default view (the columns not declared ``wide``) — the same on a terminal,
    a pipe or a file. Headers print in UPPER CASE. On a terminal (or with ``$COLUMNS``) the
    free-text columns (``Col(text=True)``) wrap at spaces to fit :func:`terminal_width`
    (``width``: an int, or None/False for no limit); names, paths, ids and numbers never
    split, and headers split only between words. No rows: ``empty`` (e.g. ``No
    transactions.``) instead of bare headers."""
    from tabulate import tabulate
    import tabulate as tabulate_mod

    cols = _columns(columns)
    keys = [c.json_key for c in cols]
    picked = choose_columns([c.header.upper() for c in cols], keys)
    if picked is not None:
        if not picked:
            return ""
    elif _layout.wide:
        picked = list(range(len(cols)))
    else:
        picked = [k for k, c in enumerate(cols) if not c.wide]
    shown = [cols[k] for k in picked]
    if not rows:
        return empty
    _layout.shown.append([(c.header.upper(), c.json_key) for c in shown])
    cells = [[_cell(r[k] if k < len(r) else None, missing) for k in picked] for r in rows]
    headers = [c.header.upper() for c in shown]
    limit = terminal_width() if width is True else (width or None)
    if limit:
        cells, headers = _fit(cells, headers, shown, limit)
    saved = tabulate_mod.MIN_PADDING
    tabulate_mod.MIN_PADDING = 0  # columns as wide as their header or widest value, no more
    try:
        return tabulate(cells, headers=headers, tablefmt="simple", disable_numparse=True)
    finally:
        tabulate_mod.MIN_PADDING = saved


def _widths(cells: list[list[str]], headers: list[str]) -> list[int]:
    out = [max(len(x) for x in h.split("\n")) for h in headers]
    for r in cells:
        for k, v in enumerate(r):
            out[k] = max(out[k], max(len(x) for x in v.split("\n")))
    return out


def _fit(cells: list[list[str]], headers: list[str], cols: list[Col], limit: int):
    """Wrap the free-text cells (and, if that is not enough, stack multi-word headers one word
    a line) so that the table fits ``limit`` columns if it can."""

    def floors_of(natural: list[int], hs: list[str]) -> list[int | None]:
        out: list[int | None] = []
        for k, c in enumerate(cols):
            head = max(len(x) for x in hs[k].split("\n"))
            longest = max((len(w) for r in cells for w in r[k].split()), default=0)
            out.append(max(min(_MIN_TEXT, natural[k]), longest, head) if c.text else None)
        return out

    natural = _widths(cells, headers)
    floors = floors_of(natural, headers)
    fitted = fit_widths(natural, floors, limit)
    if fitted is not None and sum(fitted) + _GAP * (len(fitted) - 1) > limit:
        # still too wide: multi-word headers take one word a line (never split inside a word)
        headers = ["\n".join(h.split()) for h in headers]
        natural = _widths(cells, headers)
        floors = floors_of(natural, headers)
        fitted = fit_widths(natural, floors, limit)
    if fitted is None:
        return cells, headers
    wrapped = [
        [_wrap_cell(v, fitted[k]) if floors[k] is not None and fitted[k] < natural[k] else v for k, v in enumerate(r)]
        for r in cells
    ]
    return wrapped, headers


def shown_columns() -> list[list[tuple[str, str]]]:
    """(header, JSON key) of each table printed so far in this process (tests read it)."""
    return _layout.shown


def _check_columns() -> None:
    if _layout.columns is None or not _layout.tables:
        return  # no table printed: the option has nothing to choose from
    unknown = [n for n in _layout.columns if n not in _layout.matched]
    if unknown:
        raise UsageError(
            f"unknown column {', '.join(map(repr, unknown))} in -o custom-columns; "
            f"available: {','.join(_layout.offered)}"
        )


class Output:
    def __init__(self, mode: str = "text", *, verbose: bool = False, out=None, err=None):
        if mode not in ("text", "json"):
            raise ValueError(mode)
        self.mode = mode
        self.verbose = verbose
        self._out = out
        self._err = err

    @property
    def json(self) -> bool:
        return self.mode == "json"

    @property
    def out(self):
        return self._out or sys.stdout

    @property
    def err(self):
        return self._err or sys.stderr

    # -- results ---------------------------------------------------------------------
    def emit(self, data: Any, text: Callable[[Any], str], *, performed: bool = False) -> None:
        """Print one result: ``data`` as a JSON document, or ``text(data)``.

        With ``-o custom-columns=...``, a name that no table of ``text(data)`` has is a usage
        error (nothing printed; the message lists the names the tables have). ``performed``: the
        result reports work already done (a compaction, a clean, metastore writes): it is never
        withheld for a bad column name — a warning says so and every column is printed."""
        if self.json:
            self.write_bytes(to_json(data) + b"\n")
        else:
            _layout.offered, _layout.matched, _layout.tables = [], set(), 0
            s = text(data)
            try:
                _check_columns()
            except UsageError as e:
                if not performed:
                    raise
                self.warn(f"{e}; printing every column")
                chosen = _layout.columns
                _layout.columns = None
                try:
                    s = text(data)
                finally:
                    _layout.columns = chosen
            if s:
                self.out.write(s if s.endswith("\n") else s + "\n")
                self.out.flush()

    def rows_only(self, what: str, *, hint: str | None = None) -> None:
        """A command printing rows as JSON lines (``dump``, ``dump --merged``, ``changes``) has
        no table whose columns ``-o custom-columns=...`` could choose: a usage error (exit 2),
        before anything is read, rather than the option silently ignored."""
        if _layout.columns is not None:
            raise UsageError(
                f"-o custom-columns does not apply to {what}: it prints rows as JSON lines, not a table",
                hint=hint or "drop -o custom-columns (or pick fields with jq)",
            )

    def jsonl(self, items: Iterable[Any]) -> None:
        for item in items:
            self.write_bytes(to_json(item, pretty=False) + b"\n")

    def write_bytes(self, data: bytes | memoryview) -> None:
        buf = getattr(self.out, "buffer", None)
        if buf is not None:
            self.out.flush()
            buf.write(data)
            buf.flush()
        else:
            self.out.write(bytes(data).decode("utf-8", "surrogateescape"))

    # -- diagnostics (stderr) ----------------------------------------------------------
    def note(self, message: str) -> None:
        """An informational line on stderr (text mode only; JSON consumers read stdout)."""
        if not self.json:
            self.err.write(redact(message) + "\n")

    def warn(self, message: str) -> None:
        self.err.write("acidctl: warning: " + redact(message) + "\n")

    def error(self, exc: BaseException) -> None:
        if isinstance(exc, AcidctlError):
            payload = exc.to_dict()
        else:
            payload = {"type": "InternalError", "message": redact(f"{type(exc).__name__}: {exc}"), "exit_code": 1}
        if self.json:
            self.err.write(to_json({"error": payload}, pretty=False).decode() + "\n")
        else:
            line = f"acidctl: error: {payload['message']}"
            if payload.get("hint"):
                line += f" ({payload['hint']})"
            self.err.write(line + "\n")
        self.err.flush()
