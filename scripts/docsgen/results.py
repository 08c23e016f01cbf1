"""What bench/results holds, as the pages show it: the side-by-side run as a table
(`side_by_side`) and `shoal:chart` blocks as inline SVG bar charts (`chart`)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML comes with mkdocs

from docsgen import ROOT, DocsGenError
from docsgen.markdown import cell, format_value, md_table

# ---- bench/results/side_by_side.json as a table

SIDE_BY_SIDE = "bench/results/side_by_side.json"
_UNITS = {"rate": ("/s", 1.0), "ms": (" ms", 1.0), "s": (" s", 1.0), "MiB": (" MiB", 1.0)}


def side_by_side() -> str:
    """Every figure of the side-by-side run, as the results file holds it: the
    metric, each broker's median, Shoal's ratio to Kafka and the harness's goal."""
    data = json.loads((ROOT / SIDE_BY_SIDE).read_text(encoding="utf-8"))
    rows = []
    for row in data["rows"]:
        unit = row["unit"]

        def shown(value: object, unit: str = unit) -> str:
            if not isinstance(value, int | float) or isinstance(value, bool):
                return "—"
            if unit == "rate":
                return _rate(float(value))
            if unit == "us":
                return f"{format_value(float(value))} µs"
            suffix, _ = _UNITS.get(unit, (f" {unit}", 1.0))
            return f"{format_value(float(value))}{suffix}"

        ratio = row.get("shoal/kafka")
        met = {True: "met", False: "**not met**"}.get(row.get("met"), "")
        goal = f"{cell(row['goal'])}: {met}" if row.get("goal") else ""
        rows.append(
            (
                cell(row["metric"]),
                shown(row.get("kafka")),
                shown(row.get("shoal")),
                shown(row.get("redis")),
                f"{ratio:.2f}x" if isinstance(ratio, int | float) else "—",
                goal,
            )
        )
    machine = data.get("machine", {})
    versions = data.get("versions", {})
    before = machine.get("load_average_before") or [None]
    after = machine.get("load_average_after") or [None]
    caption = (
        f"Run {data.get('timestamp', '?')} at Shoal {machine.get('git_commit', '?')}: "
        f"{machine.get('cores', '?')} cores ({machine.get('cpu', '?')}), "
        f"{machine.get('ram_gib', '?')} GiB, Kafka {versions.get('kafka', '?')}, "
        f"Redis {versions.get('redis', '?')}, confluent-kafka "
        f"{versions.get('confluent_kafka', '?')}; medians of "
        f"{data.get('settings', {}).get('reps', '?')} reps; load average (1 min) "
        f"{_load(before[0])} before, {_load(after[0])} after."
    )
    header = ("Metric", "Kafka 4.2", "Shoal", "Redis Streams", "Shoal / Kafka", "Goal")
    return f"{md_table(header, rows)}\n\n{caption}\n"


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f} M/s"
    if value >= 1e3:
        return f"{value / 1e3:.0f} k/s"
    return f"{value:.0f}/s"


def _load(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "?"


_CHART_KEYS = {"title", "source", "unit", "bars", "scale", "note"}
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]|\[([A-Za-z_]\w*)=([^\]]+)\]")


def chart(body: str, *, root: Path = ROOT) -> str:
    """The inline SVG (in a `<figure>`) a `shoal:chart` block's YAML `body` describes."""
    try:
        spec = yaml.safe_load(body)
    except yaml.YAMLError as error:
        raise DocsGenError(f"shoal:chart: the block is not YAML: {error}") from None
    if not isinstance(spec, dict):
        raise DocsGenError("shoal:chart: the block must be a YAML mapping")
    unknown = set(spec) - _CHART_KEYS
    missing = {"title", "source", "bars"} - set(spec)
    if unknown or missing:
        raise DocsGenError(
            f"shoal:chart: unknown keys {sorted(unknown)}, missing keys {sorted(missing)} "
            f"(keys: {', '.join(sorted(_CHART_KEYS))})"
        )
    bars = spec["bars"]
    if not isinstance(bars, dict) or not bars:
        raise DocsGenError("shoal:chart: `bars` must map each label to a path in the JSON")
    source = root / str(spec["source"])
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DocsGenError(f"shoal:chart: source {spec['source']} not found ({source})") from None
    except json.JSONDecodeError as error:
        raise DocsGenError(f"shoal:chart: source {spec['source']} is not JSON: {error}") from None
    try:
        scale = float(spec.get("scale", 1))
    except (TypeError, ValueError):
        raise DocsGenError(f"shoal:chart: scale {spec['scale']!r} is not a number") from None
    values = [
        (str(label), lookup(data, str(path), spec["source"]) * scale)
        for label, path in bars.items()
    ]
    return render_chart(
        str(spec["title"]), values, unit=str(spec.get("unit", "")), note=spec.get("note")
    )


def lookup(data: Any, path: str, source: str = "the JSON") -> float:
    """The number at `path` (`a.b[0].c`, `a.b.0.c` or `a.b[key=x].c`) in `data`."""
    steps: list[str | int | tuple[str, str]] = []
    for part in path.split("."):
        matches = list(_STEP.finditer(part))
        if not part or "".join(m.group(0) for m in matches) != part:
            raise DocsGenError(f"shoal:chart: bad path {path!r}")
        for match in matches:
            if match.group(1) is not None:
                steps.append(match.group(1))
            elif match.group(2) is not None:
                steps.append(int(match.group(2)))
            else:
                steps.append((match.group(3), match.group(4)))
    node = data
    walked = ""
    for step in steps:
        if isinstance(step, tuple):
            field, wanted = step
            chosen = [
                item
                for item in (node if isinstance(node, list) else [])
                if isinstance(item, dict) and str(item.get(field)) == wanted
            ]
            if len(chosen) != 1:
                raise DocsGenError(
                    f"shoal:chart: {source}: {walked or 'the top'} has {len(chosen)} items "
                    f"with {field} = {wanted!r}, not one (path {path!r})"
                )
            node = chosen[0]
            walked += f"[{field}={wanted}]"
            continue
        if isinstance(node, list):
            try:
                node = node[int(step)]
            except (ValueError, IndexError):
                raise DocsGenError(
                    f"shoal:chart: {source}: {walked or 'the top'} has no item {step!r} "
                    f"(path {path!r})"
                ) from None
        elif isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        else:
            raise DocsGenError(
                f"shoal:chart: {source}: {walked or 'the top'} has no key {step!r} (path {path!r})"
            )
        walked += f"[{step}]" if isinstance(step, int) else f".{step}" if walked else str(step)
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise DocsGenError(f"shoal:chart: {source}: {path!r} is {node!r}, not a number")
    return float(node)


_CHAR_PX = 7.2
"""Rough width of one character of the chart's 13 px text (no font metrics offline)."""


def render_chart(
    title: str, values: list[tuple[str, float]], *, unit: str = "", note: object = None
) -> str:
    """An inline SVG horizontal bar chart: one bar per (label, value), the value and
    unit printed at the bar's end. Text is `currentColor` and the bars take the
    theme's accent, so it reads in light and dark schemes alike; no script, no font."""
    if any(value < 0 for _, value in values):
        raise DocsGenError(f"shoal:chart {title!r}: negative values cannot be drawn as bars")
    suffix = f" {unit}" if unit else ""
    texts = [format_value(v) + suffix for _, v in values]
    label_w = max(len(label) for label, _ in values) * _CHAR_PX + 12
    value_w = max(len(t) for t in texts) * _CHAR_PX + 8
    width = 720
    bar_h, gap, top = 22, 10, 8
    plot_w = max(width - label_w - value_w, 120)
    height = top * 2 + len(values) * (bar_h + gap) - gap
    biggest = max((v for _, v in values), default=0) or 1
    e = html.escape
    parts = [
        f'<svg class="shoal-chart" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" style="max-width:100%;height:auto" '
        'xmlns="http://www.w3.org/2000/svg" '
        f'font-size="13" font-family="inherit">',
        f"<title>{e(title)}</title>",
    ]
    for index, ((label, value), text) in enumerate(zip(values, texts, strict=True)):
        y = top + index * (bar_h + gap)
        length = max(value / biggest * plot_w, 1.0) if value else 0.0  # a sliver stays seen
        mid = y + bar_h / 2
        parts += [
            f'<text x="{label_w - 8:.1f}" y="{mid:.1f}" text-anchor="end" '
            f'dominant-baseline="middle" fill="currentColor">{e(label)}</text>',
            f'<rect class="bar" data-label="{e(label)}" data-value="{value!r}" '
            f'x="{label_w:.1f}" y="{y}" width="{length:.1f}" height="{bar_h}" rx="2" '
            'style="fill:var(--md-accent-fg-color,#526cfe)"/>',
            f'<text x="{label_w + length + 6:.1f}" y="{mid:.1f}" dominant-baseline="middle" '
            f'fill="currentColor">{e(text)}</text>',
        ]
    parts.append("</svg>")
    caption = f"<figcaption>{e(title)}"
    if note:
        caption += f"<br><small>{e(str(note))}</small>"
    caption += "</figcaption>"
    return '<figure class="shoal-chart">\n' + "\n".join(parts) + "\n" + caption + "\n</figure>"
