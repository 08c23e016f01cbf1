"""ISO-8601 durations (`PT1H`, `P1DT30M`, `PT0.5S`), as Kafka's `by_duration:` reset uses.

Kafka parses these with java.time.Duration, which accepts days, hours, minutes and
seconds (no years or months) and a leading sign; Shoal refuses negative durations as
Kafka's group config validation does.
"""

from __future__ import annotations

import re

_PATTERN = re.compile(
    r"^P(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d{1,9})?)S)?)?$"
)


def parse_iso_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration; ValueError if unparsable or negative."""
    if text.startswith("-"):
        raise ValueError(f"duration {text!r} is negative")
    match = _PATTERN.match(text.upper())
    if match is None or text.upper() in ("P", "PT") or text.upper().endswith("T"):
        raise ValueError(f"duration {text!r} is not an ISO-8601 duration such as PT1H")
    days = int(match["days"] or 0)
    hours = int(match["hours"] or 0)
    minutes = int(match["minutes"] or 0)
    seconds = float(match["seconds"] or 0)
    return round(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)
