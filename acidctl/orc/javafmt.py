"""Scalar formatting rules of ORC's Java FileDump (``orc-tools data``), value by value.

FileDump prints values with Java library code: ``java.sql.Date``/``Timestamp.toString`` (hybrid
Julian/Gregorian calendar), Java's UTF-8 decoder, gson-style string escaping, HiveDecimal's
canonical form and Java 17's ``Double.toString``. No Python library reproduces these exactly,
so the rules are written out here; the vectorised renderer (``render.py``) uses them for the
rare values its fast paths do not cover, and the pure-Python fallback uses them for everything.
The goldens under ../shared/fixtures/golden/filedump are the oracle for all of it.
"""

from __future__ import annotations

import codecs
import decimal
import json

# 1582-10-15, the first Gregorian day of Java's hybrid calendar, as days since 1970-01-01
GREGORIAN_CUTOVER_DAY = -141427
GREGORIAN_CUTOVER_SECONDS = GREGORIAN_CUTOVER_DAY * 86400
_EPOCH_JDN = 2440588  # Julian Day Number of 1970-01-01


def _civil_from_days_gregorian(z: int) -> tuple[int, int, int]:
    # Howard Hinnant's days_from_civil inverse (proleptic Gregorian)
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


def _civil_from_days_julian(days: int) -> tuple[int, int, int]:
    c = days + _EPOCH_JDN + 32082
    d = (4 * c + 3) // 1461
    e = c - (1461 * d) // 4
    m = (5 * e + 2) // 153
    day = e - (153 * m + 2) // 5 + 1
    month = m + 3 - 12 * (m // 10)
    year = d - 4800 + m // 10
    return (year, month, day)


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) in Java's default hybrid calendar."""
    if days >= GREGORIAN_CUTOVER_DAY:
        return _civil_from_days_gregorian(days)
    return _civil_from_days_julian(days)


def _year(y: int) -> str:
    # java.sql.Date/Timestamp pad the year to 4 digits; years before 1 AD are printed as
    # GregorianCalendar's era year (1 BC = year 1), which never occurs in Hive data.
    if y <= 0:
        y = 1 - y
    return "%04d" % y


def java_date(days: int) -> str:
    y, m, d = civil_from_days(days)
    return "%s-%02d-%02d" % (_year(y), m, d)


def java_timestamp(seconds: int, nanos: int) -> str:
    """``java.sql.Timestamp.toString()`` in UTC: fraction without trailing zeros, at least one digit."""
    days, sod = divmod(seconds, 86400)
    y, m, d = civil_from_days(days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    frac = ("%09d" % nanos).rstrip("0") or "0"
    return "%s-%02d-%02d %02d:%02d:%02d.%s" % (_year(y), m, d, hh, mm, ss, frac)


# -- strings -----------------------------------------------------------------------------


def json_string(s: str) -> str:
    """A JSON string literal as FileDump writes it: control characters escaped (lowercase hex),
    U+2028/U+2029 escaped, everything else (non-ASCII, U+007F, HTML characters) raw."""
    return json.dumps(s, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _java_utf8_errors(exc: UnicodeError) -> tuple[str, int]:
    # Java's decoder treats a well-formed 3-byte sequence that encodes a UTF-16 surrogate
    # (ED A0..BF 80..BF) as ONE malformed input of length 3; Python reports it byte by byte.
    # Everything else matches Python's "replace" (maximal subparts, one U+FFFD each).
    assert isinstance(exc, UnicodeDecodeError)  # registered for decoding only
    b = exc.object
    i = exc.start
    if b[i] == 0xED and i + 2 < len(b) and 0xA0 <= b[i + 1] <= 0xBF and 0x80 <= b[i + 2] <= 0xBF:
        return ("\ufffd", i + 3)
    return ("\ufffd", exc.end)


codecs.register_error("acidctl-java-utf8", _java_utf8_errors)


def java_decode_utf8(b: bytes) -> str:
    """Decode bytes the way Java's UTF-8 charset decoder does (malformed input → U+FFFD)."""
    return b.decode("utf-8", "acidctl-java-utf8")


# -- decimals ----------------------------------------------------------------------------

_DEC_CTX = decimal.Context(prec=200)  # ORC decimals have at most 38 digits: never round


def decimal_str(d: decimal.Decimal) -> str:
    """HiveDecimal's canonical text: no trailing fractional zeros, no exponent."""
    if d.is_zero():
        return "0"
    return format(d.normalize(_DEC_CTX), "f")


def decimal_text_str(text: str) -> str:
    """Canonical form of a decimal given as text (e.g. Arrow's cast, which may use exponents)."""
    return decimal_str(decimal.Decimal(text))
