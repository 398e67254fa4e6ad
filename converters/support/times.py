"""Times as sources write them: ISO 8601 text (any fraction length, "Z" or an offset, or none: then UTC)
and epoch numbers or digit strings in seconds, milliseconds, microseconds or nanoseconds (told apart
by their size). Used to order spans and runs; step timestamps themselves are kept as written.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from ISO text or epoch numbers in s/ms/us/ns; None when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        s = value.strip()
        if _NUMBER.fullmatch(s):
            return parse_time(float(s) if "." in s else int(s))
        try:
            dt = datetime.fromisoformat(s)  # Python 3.11 reads "Z" and long fractions itself: the fast path
        except ValueError:
            try:
                s = s.replace("Z", "+00:00").replace("z", "+00:00")
                # older fromisoformat takes at most 6 fractional digits; OTel/LangSmith often write 9
                s = _LONG_FRACTION.sub(r"\1", s)
                dt = datetime.fromisoformat(s)
            except ValueError:
                return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    if isinstance(value, (int, float)):
        v = float(value)
        a = abs(v)
        if a > 1e17:
            return v / 1e9
        if a > 1e14:
            return v / 1e6
        if a > 1e11:
            return v / 1e3
        return v
    return None


_INT = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"-?\d+\.\d+")
_ISO_FAST = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|z|[+-]\d{2}:\d{2})?")
_EPOCH_ORD = date(1970, 1, 1).toordinal()
_EPOCH_DT = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_NAIVE = datetime(1970, 1, 1)  # a time without an offset counts as UTC, as in parse_time
_MICROSECOND = timedelta(microseconds=1)
_DIGITS = re.compile(r"\d+")
_ISO_FRAC = re.compile(r"^(.*?T\d{2}:\d{2}:\d{2})(?:[.,](\d+))?(.*)$")


def time_key(value: Any) -> int | None:
    """Integer nanoseconds since the epoch, exact (float seconds lose the ns that order OTel spans)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        s = value.strip()
        if s.isdigit() and s.isascii():  # OTLP's startTimeUnixNano is a decimal string
            if len(s) > 18 and s[0] != "0":  # a hot path: past 10**18, nanoseconds already (as the int branch says)
                return int(s)
            return time_key(int(s))
        if s[4:5] == "-":
            try:
                dt = datetime.fromisoformat(s)  # C code, and exact to the microsecond (3.11 reads "Z")
            except ValueError:
                dt = None
            if dt is not None:
                ns = (dt - (_EPOCH_DT if dt.tzinfo is not None else _EPOCH_NAIVE)) // _MICROSECOND * 1000
                dot = s.find(".", 19)
                if dot == -1:
                    dot = s.find(",", 19)
                if dot != -1:
                    digits = _DIGITS.match(s, dot + 1)
                    if digits is not None and len(digits.group()) > 6:  # digits past the microsecond: OTel's ns
                        ns += int(digits.group()[6:9].ljust(3, "0"))
                return ns
            m = _ISO_FAST.fullmatch(s)  # what an older fromisoformat refuses ("Z", 9 digits)
            if m is not None:
                y, mo, d, h, mi, sec, frac, tz = m.groups()
                try:
                    days = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORD
                except ValueError:
                    days = None
                hh, mm, ss = int(h), int(mi), int(sec)
                if days is not None and hh < 24 and mm < 60 and ss < 60:
                    off = 0
                    if tz and tz not in "Zz":
                        off = (int(tz[1:3]) * 3600 + int(tz[-2:]) * 60) * (1 if tz[0] == "+" else -1)
                    secs = days * 86400 + hh * 3600 + mm * 60 + ss - off
                    return secs * 1_000_000_000 + (int(frac[:9].ljust(9, "0")) if frac else 0)
        if _INT.fullmatch(s):
            return time_key(int(s))
        if _DECIMAL.fullmatch(s):
            return time_key(float(s))
        m = _ISO_FRAC.match(s)
        if not m:
            t = parse_time(s)
            return None if t is None else int(round(t * 1e9))
        base = parse_time(m.group(1) + m.group(3))
        if base is None:
            return None
        frac = (m.group(2) or "")[:9].ljust(9, "0")
        return int(round(base)) * 1_000_000_000 + int(frac)
    if isinstance(value, int):
        a = abs(value)
        if a > 10**17:
            return value
        if a > 10**14:
            return value * 1_000
        if a > 10**11:
            return value * 1_000_000
        return value * 1_000_000_000
    if isinstance(value, float):
        t = parse_time(value)
        return None if t is None else int(round(t * 1e9))
    return None


# a UTC time in ISO text whose fields exist on every calendar day (days past the 28th, hour 24 and the year
# 0 are left to time_key, which knows which of them exist); ASCII digits only ([0-9], not \d)
_ISO_UTC_TIME = (
    r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]{1,9})?"
)
#: such times one per line, all with the first one's suffix ("Z", "+00:00" or none)
_ISO_UTC_LINES = re.compile(rf"{_ISO_UTC_TIME}(Z|\+00:00|)(?:\n{_ISO_UTC_TIME}\1)*")


def time_keys(values: list) -> list:
    """Sort keys ordering ``values`` as their :func:`time_key` values order them (equal times equal keys).

    A hot path: when every value is UTC ISO text of one shape (one length, one suffix), the text itself
    is the key, since such strings compare in time order; anything else is read by time_key. The shape
    is checked by one match over all the values joined one per line (so no value may hold a line break).
    """
    if values and values[0].__class__ is str and set(map(type, values)) == {str} and len(set(map(len, values))) == 1:
        lines = "\n".join(values)
        if lines.count("\n") == len(values) - 1 and _ISO_UTC_LINES.fullmatch(lines):
            return list(values)
    return [time_key(v) for v in values]
