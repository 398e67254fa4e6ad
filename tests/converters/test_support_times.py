"""support.times.time_keys: sort keys that order times as the times themselves order (read independently here)."""
from __future__ import annotations

import random
from datetime import datetime, timezone

from ls_trajeval.converters.support.times import time_keys


def _order(keys: list) -> list[int]:
    """Indices in sort order as tree_order sorts: by key (None last), then input order."""
    return sorted(range(len(keys)), key=lambda i: (keys[i] is None, keys[i] if keys[i] is not None else 0, i))


def _true_ns(text: str) -> int:
    """Nanoseconds since the epoch of a UTC ISO time, read without the code under test."""
    body = text.removesuffix("Z").removesuffix("+00:00")
    whole, _, frac = body.partition(".")
    dt = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)).days * 86400 * 10**9 + \
        (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)).seconds * 10**9 + int(frac.ljust(9, "0") or 0)


def test_one_shape_orders_by_time():
    times = ["2024-03-01T10:00:00.250Z", "2024-02-28T23:59:59.999Z", "2024-03-01T09:59:59.000Z",
             "2024-02-28T23:59:59.999Z"]
    # by hand: Feb 28 (twice, input order kept), then 09:59:59 on Mar 1, then 10:00:00.25
    assert _order(time_keys(times)) == [1, 3, 2, 0]


def test_mixed_offsets_are_read_not_compared_as_text():
    # 01:00 at +02:00 is 23:00 UTC the day before: first, though its text sorts last
    times = ["2024-01-01T00:00:00Z", "2024-01-01T01:00:00+02:00", "2024-01-01T00:30:00+00:00"]
    assert _order(time_keys(times)) == [1, 0, 2]


def test_a_day_that_does_not_exist_is_unreadable_and_sorts_last():
    times = ["2023-02-29T00:00:00Z", "2023-02-28T00:00:00Z", "2023-03-01T00:00:00Z"]
    keys = time_keys(times)
    assert keys[0] is None
    assert _order(keys) == [1, 2, 0]


def test_nines_of_nanoseconds_and_nulls():
    times = ["2024-01-01T00:00:00.000000002Z", None, "2024-01-01T00:00:00.000000001Z"]
    assert _order(time_keys(times)) == [2, 0, 1]


def test_random_shapes_order_as_their_times():
    rnd = random.Random(7)
    for trial in range(300):
        digits = rnd.choice([0, 1, 3, 6, 9])
        suffix = rnd.choice(["Z", "+00:00", ""])
        times = []
        for _ in range(rnd.randint(1, 12)):
            t = f"{rnd.randint(1990, 2030)}-{rnd.randint(1, 12):02}-{rnd.randint(1, 28):02}T" \
                f"{rnd.randint(0, 23):02}:{rnd.randint(0, 59):02}:{rnd.randint(0, 59):02}"
            if digits:
                t += "." + "".join(rnd.choice("0123456789") for _ in range(digits))
            times.append(t + suffix)
        if trial % 3 == 0 and len(times) > 1:  # repeats: equal times keep input order
            times[-1] = times[0]
        if trial % 5 == 0:  # another shape in the list: the general reading
            times.append(times[0][:19] + "Z")
        truth = [_true_ns(t) for t in times]
        assert _order(time_keys(times)) == _order(truth), times


def test_digit_strings_scale_by_their_size():
    from ls_trajeval.converters.support.times import time_key
    assert time_key("1700000000000001500") == 1_700_000_000_000_001_500  # OTLP nanoseconds, kept
    assert time_key("100000000000000000") == 10**17 * 1000  # exactly 10**17 is not past it: microseconds
    assert time_key("0000000000000000001") == 10**9  # 1 written with leading zeros: seconds
    assert time_key("1700000000") == 1_700_000_000 * 10**9


def test_values_holding_line_breaks_are_not_taken_for_times():
    # each value is two times on two lines: none is a time (both unreadable, input order kept), though joined one per
    # line they look like four
    times = ["2024-01-01T00:00:05Z\n2024-01-01T00:00:01Z", "2024-01-01T00:00:02Z\n2024-01-01T00:00:03Z"]
    keys = time_keys(times)
    assert keys == [None, None]
    assert _order(keys) == [0, 1]
