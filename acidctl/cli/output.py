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
_HEADER_PAD = 2  # ... and makes each column at least its header + 2 wide (MIN_PADDING)
_MIN_CELL = 16  # free-text columns are never wrapped narrower than this


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
    return "\n".join(
        textwrap.wrap(
            line,
            width=max(limit, len(indent) + 20),
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def fit_widths(natural: Sequence[int], width: int) -> list[int | None] | None:
    """Per-column maximum content widths so that a table whose columns are ``natural`` wide fits
    ``width``, or None when it already fits. Only free-text columns (wider than ``_MIN_CELL``:
    reasons, messages, paths) wrap, the widest first, down to ``_MIN_CELL``; ids, states and
    counts stay whole. When even that does not fit, the narrowest such layout is returned."""
    cols = list(natural)
    total = sum(cols) + _GAP * (len(cols) - 1)
    if total <= width:
        return None
    while total > width:
        i = max(range(len(cols)), key=lambda k: cols[k])
        if cols[i] <= _MIN_CELL:
            break
        step = min(cols[i] - _MIN_CELL, total - width, max(1, cols[i] - _second_widest(cols, i)))
        cols[i] -= step
        total -= step
    return [c if c < n else None for c, n in zip(cols, natural)]


def _second_widest(cols: list[int], i: int) -> int:
    return max((c for k, c in enumerate(cols) if k != i), default=0)


def table(
    rows: Sequence[Sequence[Any]],
    headers: Sequence[str],
    *,
    keys: Sequence[str] | None = None,
    missing: str = "",
    width: int | None | bool = True,
) -> str:
    """A text table (tabulate, "simple"). Fitted to :func:`terminal_width` by wrapping the
    widest cells unless ``width`` is given (an int, or None/False for no limit).

    ``-o custom-columns=...`` keeps only the chosen columns (matched against ``headers`` and
    ``keys``, the JSON key of each column; by default the header in snake case); a table with
    none of them is left out (""). Only the kept columns are fitted to the terminal."""
    from tabulate import tabulate

    picked = choose_columns(headers, keys)
    if picked is not None:
        if not picked:
            return ""
        headers = [headers[k] for k in picked]
        rows = [[r[k] if k < len(r) else None for k in picked] for r in rows]
    limit = terminal_width() if width is True else (width or None)
    maxcolwidths = None
    if limit and rows:
        natural = _natural_widths(rows, [len(str(h)) for h in headers], missing)
        maxcolwidths = fit_widths(natural, limit)
        if _fitted_width(natural, maxcolwidths) > limit:
            # still too wide: stack multi-word headers one word a line (``DELETE`` over
            # ``DELTAS``), so a column is only as wide as its longest word or value
            narrow = _natural_widths(rows, [max(map(len, str(h).split())) for h in headers], missing)
            headers = ["\n".join(str(h).split()) for h in headers]
            maxcolwidths = fit_widths(narrow, limit)
    return tabulate(
        rows, headers=headers, tablefmt="simple", missingval=missing, disable_numparse=True, maxcolwidths=maxcolwidths
    )


def _natural_widths(rows: Sequence[Sequence[Any]], header_widths: list[int], missing: str) -> list[int]:
    """Each column's unwrapped width: its header (+ tabulate's padding) or its widest value line."""
    natural = [w + _HEADER_PAD for w in header_widths]
    for r in rows:
        for k, v in enumerate(r):
            if k < len(natural):
                text = missing if v is None else str(v)
                natural[k] = max(natural[k], max((len(x) for x in text.split("\n")), default=0))
    return natural


def _fitted_width(natural: list[int], maxcolwidths: list[int | None] | None) -> int:
    cols = natural if maxcolwidths is None else [m if m is not None else n for m, n in zip(maxcolwidths, natural)]
    return sum(cols) + _GAP * (len(cols) - 1)


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
