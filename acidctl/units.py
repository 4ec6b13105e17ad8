"""Sizes, durations and ratios as text output shows them: one way in every command.

JSON keeps raw numbers (bytes, seconds, milliseconds); text uses these. Sizes are binary units
through ``humanize`` (``3.6 KiB``; bytes below 1 KiB stay exact: ``772 B``). Durations use the
suffixes that ``--min-age`` / ``--older-than`` accept (acidctl/durations.py), so what a command
prints can be typed back: ``228ms``, ``3.2s``, ``10m``, ``1h``, ``2h 5m``, ``1d 3h``.
"""

from __future__ import annotations


def size(n: float | int | None) -> str:
    """Bytes as a binary-unit size (``772 B``, ``3.6 KiB``, ``1.2 GiB``); ``""`` for None."""
    if n is None:
        return ""
    if abs(n) < 1024:
        return f"{int(n)} B"
    import humanize

    return humanize.naturalsize(n, binary=True, format="%.1f")


def duration(seconds: float | int | None) -> str:
    """Seconds as ``228ms``, ``3.2s``, ``45s``, ``5m 3s``, ``1h``, ``2h 5m``, ``1d 3h``; ``""`` for None.

    Two units at most (the larger ones), each an integer except seconds under a minute."""
    if seconds is None:
        return ""
    s = float(seconds)
    sign = "-" if s < 0 else ""
    s = abs(s)
    if s == 0:
        return "0s"
    if s < 1:
        return f"{sign}{s * 1000:.0f}ms"
    if s < 10:
        return f"{sign}{s:.1f}".rstrip("0").rstrip(".") + "s"
    if s < 60:
        return f"{sign}{s:.0f}s"
    whole = int(round(s))
    for big, big_name, small, small_name in ((86400, "d", 3600, "h"), (3600, "h", 60, "m"), (60, "m", 1, "s")):
        if whole >= big:
            a, rest = divmod(whole, big)
            b = rest // small
            return f"{sign}{a}{big_name}" + (f" {b}{small_name}" if b else "")
    return f"{sign}{whole}s"  # pragma: no cover (s >= 60 always matched above)


def duration_ms(ms: float | int | None) -> str:
    """Milliseconds (the metastore's unit) as :func:`duration`."""
    return "" if ms is None else duration(ms / 1000)


def ratio(x: float | None) -> str:
    """A ratio with three significant digits and no exponent (``0.1``, ``1.85``, ``1,460``)."""
    if x is None:
        return "n/a"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 file``, ``2 files``, ``1 directory``, ``3 directories``, ``0 files`` (``words``: an
    irregular plural). Text never says ``file(s)``."""
    return f"{n} {noun(n, word, words)}"


def noun(n: int, word: str, words: str | None = None) -> str:
    """The form of ``word`` that goes with ``n`` things (``lock`` / ``locks``), without the number."""
    if n == 1:
        return word
    if words is None:
        words = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return words
