"""The docs site's build hook (mkdocs.yml `hooks:`): reference tables generated from the
code, and bar charts drawn from bench/results, so neither can drift from what they show.

Two conventions, for any page under docs/ (outside fenced code blocks):

- A line `<!-- shoal:generate NAME -->` is replaced by generated markdown. NAMEs
  (`GENERATORS`): configs-broker, configs-topic, configs-group, configs-client-metrics
  (shoal.config's table), cli (the real argparse parsers of `shoal`), metrics (the
  families a broker's registry exports), apis (the handler registry, i.e. ApiVersions),
  limits (the named constants of shoal/limits.py, with their docstrings).
- A comment block opening with `<!-- shoal:chart` and closing with `-->` holds YAML
  (title, source, unit, bars, optional scale and note) and is replaced by an inline SVG
  horizontal bar chart of values read from the JSON file `source` (relative to the
  repository root); `bars` maps each label to a dotted path into that JSON (list
  indices as `name[0]` or `.0.`, or the item whose field has a value as
  `name[key=share_drain_rps]`, which survives a benchmark reordering its rows).
- A line `<!-- shoal:include FILE -->` is replaced by the repository-root markdown file
  FILE (CONTRIBUTING.md, CHANGELOG.md), its links rewritten for the site: `docs/X` to
  `X`, the root files to their pages (`INCLUDED_PAGES`); any other relative link in it
  fails the build, so a root file only links what the site has.

An unknown NAME, a malformed block, a missing file or a path that leads nowhere fails
the build (`DocsGenError`, raised as mkdocs' PluginError) with the page and the reason.

The code documented is this checkout's: `src/` beside this file goes first on the path.
Tests load this file by path (tests/unit/test_docs_site.py).
"""

from __future__ import annotations

import argparse
import ast
import functools
import html
import importlib.metadata
import itertools
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML comes with mkdocs

ROOT = Path(__file__).resolve().parents[1]
"""The repository root: chart sources are relative to it."""
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))


class DocsGenError(Exception):
    """A placeholder or chart the build cannot honour; the message says why."""


# ---------------------------------------------------------------- page expansion

_GENERATE = re.compile(r"^<!-- shoal:generate ([A-Za-z0-9_-]+) -->[ \t]*$")
_CHART_OPEN = re.compile(r"^<!-- shoal:chart[ \t]*$")
_INCLUDE = re.compile(r"^<!-- shoal:include ([A-Za-z0-9_.-]+\.md) -->[ \t]*$")
INCLUDED_PAGES = {
    "README.md": "index.md",
    "CONTRIBUTING.md": "contributing.md",
    "CHANGELOG.md": "changelog.md",
}
"""The repository-root files the site shows, and the page (under docs/) that shows each."""
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_ANY_MARK = re.compile(r"<!--\s*shoal:")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def expand(markdown: str, *, root: Path = ROOT) -> str:
    """`markdown` with every `shoal:generate` line and `shoal:chart` block replaced;
    fenced code blocks are left alone (a page may show the conventions)."""
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opened:
            fence = opened.group(1)
            out.append(line)
        elif match := _GENERATE.match(line.strip()):
            out.append(generate(match.group(1)))
        elif match := _INCLUDE.match(line.strip()):
            out.append(include(match.group(1), root=root))
        elif _CHART_OPEN.match(line.strip()):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->"), None)
            if end is None:
                raise DocsGenError("a `<!-- shoal:chart` block is never closed by a `-->` line")
            out.append(chart("\n".join(lines[i + 1 : end]), root=root))
            i = end
        elif _ANY_MARK.search(line):
            raise DocsGenError(
                f"malformed shoal placeholder {line.strip()!r}: write "
                "`<!-- shoal:generate NAME -->` alone on its line, or open a chart "
                "block with `<!-- shoal:chart` alone on its line"
            )
        else:
            out.append(line)
        i += 1
    return "\n".join(out)


def include(name: str, *, root: Path = ROOT) -> str:
    """The root file `name`, its links pointed at the site's pages (see the module doc)."""
    if name not in INCLUDED_PAGES:
        raise DocsGenError(f"shoal:include: {name} is not one of {sorted(INCLUDED_PAGES)}")
    text = (root / name).read_text(encoding="utf-8")

    def relink(match: re.Match[str]) -> str:
        target = match.group(2)
        path, hash_, anchor = target.partition("#")
        if not path or "://" in path or path.startswith("mailto:"):
            return match.group(0)
        if path.startswith("docs/"):
            path = path.removeprefix("docs/")
        elif path in INCLUDED_PAGES:
            path = INCLUDED_PAGES[path]
        else:
            raise DocsGenError(
                f"shoal:include: {name} links {target!r}, which the site does not have: "
                "link a docs/ page, or write the path as code"
            )
        return f"{match.group(1)}{path}{hash_}{anchor}{match.group(3)}"

    return _LINK.sub(relink, text)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: expand the page's placeholders; a failure stops the build."""
    from mkdocs.exceptions import PluginError

    try:
        return expand(markdown)
    except DocsGenError as error:
        raise PluginError(f"docs/{page.file.src_uri}: {error}") from error


# ---------------------------------------------------------------- generated markdown


def generate(name: str) -> str:
    """The markdown a `<!-- shoal:generate NAME -->` line becomes."""
    generator = GENERATORS.get(name)
    if generator is None:
        known = ", ".join(sorted(GENERATORS))
        raise DocsGenError(f"unknown shoal:generate NAME {name!r} (known: {known})")
    return generator()


_CODE_SPAN = re.compile(r"(`[^`]*`)")
_MARKUP = re.compile(r"([*_\\\[\]])")


def _cell(text: object) -> str:
    """Prose (a doc, a help text) as one markdown table cell: on one line, its bars
    escaped and, outside its `code spans`, what markdown would read as markup (`*`,
    `_`, brackets, a `<` starting a tag) shown as written."""
    parts = _CODE_SPAN.split(" ".join(str(text).split()))
    for index in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[index] = _MARKUP.sub(r"\\\1", parts[index]).replace("<", "&lt;")
    return "".join(parts).replace("|", "\\|")


def _code(text: object) -> str:
    """A value as inline code in a table cell (`` `` `` with a space pad when the text
    has backticks)."""
    value = " ".join(str(text).split()).replace("|", "\\|")
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ---- configs


def _configs(scope_name: str) -> str:
    from shoal.config import definition as cd
    from shoal.config import table
    from shoal.group.configs import SHOAL_GROUP_EXTENSIONS
    from shoal.server.metadata.dynamic_config import KAFKA_DYNAMIC_KEYS, SHOAL_DYNAMIC_KEYS

    keys: dict[str, cd.ConfigDef] = {
        "broker": table.BROKER_KEYS,
        "topic": table.TOPIC_KEYS,
        "group": table.GROUP_KEYS,
        "client-metrics": table.CLIENT_METRICS_KEYS,
    }[scope_name]

    def default(d: cd.ConfigDef) -> str:
        broker = f"the broker's [`{d.synonym}`](#{config_anchor('broker', d.synonym)})"
        if d.default is None and d.synonym:
            return broker
        shown = cd.render(d, d.default)
        text = "null" if shown is None else "(empty)" if shown == "" else _code(shown)
        return f"{text} ({broker})" if d.synonym else text

    def valid(d: cd.ConfigDef) -> str:
        def num(value: float) -> str:
            return cd.java_double(value) if isinstance(value, float) else str(value)

        parts = []
        if d.min is not None and d.max is not None:
            parts.append(f"[{num(d.min)}, {num(d.max)}]")
        elif d.min is not None:
            parts.append(f"≥ {num(d.min)}")
        elif d.max is not None:
            parts.append(f"≤ {num(d.max)}")
        if d.choices:
            parts.append("one of " + ", ".join(_code(c) for c in d.choices))
        if d.nullable and d.default is not None:
            parts.append("or null")
        return "; ".join(parts)

    def update(d: cd.ConfigDef) -> str:
        if d.read_only:
            return "read-only"
        if scope_name != "broker":
            return f"per {scope_name.replace('-', ' ')}"
        if d.name in KAFKA_DYNAMIC_KEYS:
            return "dynamic"
        if d.name in SHOAL_DYNAMIC_KEYS:
            return "dynamic (Shoal; static in Kafka 4.2)"
        return "static"

    def extension(d: cd.ConfigDef) -> str | None:
        if scope_name == "group" and d.name in SHOAL_GROUP_EXTENSIONS:
            return SHOAL_GROUP_EXTENSIONS[d.name]
        if d.name.startswith("shoal."):
            return "Shoal's own key"
        return None

    def describe(d: cd.ConfigDef) -> str:
        marked = extension(d)
        return (
            _cell(d.doc)
            if marked is None
            else f"**Shoal extension**: {_cell(marked)}. {_cell(d.doc)}"
        )

    def why(d: cd.ConfigDef) -> str:
        reason = d.no_effect
        assert reason is not None
        return f"`{reason.name}`: {_cell(reason.value)}"

    acting = sorted((d for d in keys.values() if d.no_effect is None), key=lambda d: d.name)
    idle = sorted(
        (d for d in keys.values() if d.no_effect is not None),
        key=lambda d: (list(cd.NoEffect).index(d.no_effect), d.name),  # type: ignore[arg-type]
    )
    parts = []
    if acting:
        parts.append(
            _table(
                ("Key", "Type", "Default", "Valid values", "Update", "Description"),
                (
                    (
                        f'<a id="{config_anchor(scope_name, d.name)}"></a>{_code(d.name)}',
                        d.type.name.lower(),
                        default(d),
                        valid(d),
                        update(d),
                        describe(d),
                    )
                    for d in acting
                ),
            )
        )
    if idle:
        parts.append(
            f"Kafka 4.2's {scope_name.replace('-', ' ')} keys that Shoal accepts, stores "
            "and shows as Kafka does, without effect on one Shoal node (the reason "
            "is `NoEffect` in `src/shoal/config/definition.py`):"
        )
        parts.append(
            _table(
                ("Key", "Type", "Kafka's default", "Update", "Why no effect"),
                (
                    (
                        f'<a id="{config_anchor(scope_name, d.name)}"></a>{_code(d.name)}',
                        d.type.name.lower(),
                        default(d),
                        update(d),
                        why(d),
                    )
                    for d in idle
                ),
            )
        )
    return "\n\n".join(parts) + "\n"


def config_anchor(scope: str, key: str | None) -> str:
    """The anchor of a key's row in docs/reference/configs.md (`#broker-log.retention.ms`,
    `#group-share.record.lock.duration.ms`): pages link a key as
    `configs.md#<scope>-<key>`, and strict builds check the anchor exists."""
    return f"{scope}-{key}"


# ---- cli


def _cli() -> str:
    from shoal.cli.main import build_parser

    parser = build_parser()
    out: list[str] = []
    for path, sub in _walk_parsers(parser, ("shoal",)):
        if len(path) > 1:
            out.append(f"### `{' '.join(path)}` {{ #{command_anchor(path)} }}\n")
        help_text = _subcommand_help(parser, path)
        if help_text:
            out.append(f"{_cell(help_text)[0].upper()}{_cell(help_text)[1:]}.\n")
        out.append("```text\n" + usage(sub) + "\n```\n")
        rows = [_option_row(sub, action) for action in sub._actions if _shown(action)]
        if rows:
            out.append(_table(("Option", "Argument", "Default", "Description"), rows) + "\n")
    return "\n".join(out)


USAGE_WIDTH = 88
"""Columns the usage lines are wrapped at (argparse would take the terminal's)."""


def usage(parser: argparse.ArgumentParser) -> str:
    """`parser`'s usage line as `--help` prints it, wrapped at `USAGE_WIDTH` whatever
    the terminal the site is built in."""
    formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def command_anchor(path: tuple[str, ...]) -> str:
    """The anchor of a subcommand's section in docs/reference/cli.md
    (`#command-shoal-share-groups`, `#command-shoal-transactions-list`)."""
    return "command-" + "-".join(path)


def _walk_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """`parser` and, depth first, each subcommand's parser (aliases once)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from _walk_parsers(sub, (*path, name))


def _subcommand_help(root: argparse.ArgumentParser, path: tuple[str, ...]) -> str:
    """The help line a subcommand is listed with in its parent's `--help`."""
    if len(path) == 1:
        return ""
    parent = root
    for name in path[1:-1]:
        parent = _subparsers(parent).choices[name]
    for choice in _subparsers(parent)._choices_actions:
        if choice.dest == path[-1] and choice.help not in (None, argparse.SUPPRESS):
            return str(choice.help).rstrip(".")
    return ""


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _shown(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS and not isinstance(action, argparse._SubParsersAction)


def _option_row(parser: argparse.ArgumentParser, action: argparse.Action) -> tuple[str, ...]:
    formatter = parser._get_formatter()
    if action.option_strings:
        names = ", ".join(_code(o) for o in action.option_strings)
        takes = action.nargs != 0
        argument = formatter._format_args(action, action.dest.upper()) if takes else ""
    else:
        names = _code(formatter._format_args(action, action.dest))
        argument = "(positional)"
    shown_default = ""
    if action.option_strings and action.nargs != 0:
        value = action.default
        if value not in (None, argparse.SUPPRESS, [], ()):
            shown_default = _code(value)
    help_text = formatter._expand_help(action) if action.help else ""
    if action.choices and "{" not in argument:  # a metavar hides the choices
        help_text += f" (one of {', '.join(str(c) for c in action.choices)})"
    if action.required and action.option_strings:
        help_text += " Required."
    return (
        names,
        _code(argument) if argument and argument != "(positional)" else argument,
        shown_default,
        _cell(help_text),
    )


# ---- metrics


@functools.cache
def _metric_families() -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    """(exposed name, type, label names, help) of every family a broker's registry
    exports: a broker is built on a manual clock in a scratch directory, never started
    (its collectors read its empty state), then closed."""
    from shoal.clock import ManualClock
    from shoal.config import BrokerConfig
    from shoal.server.broker import Broker

    with tempfile.TemporaryDirectory(prefix="shoal-docsgen-") as data:
        raw = {
            "log.dirs": data,
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "offsets.topic.num.partitions": "1",
            "share.coordinator.state.topic.num.partitions": "1",
        }
        broker = Broker(BrokerConfig.from_raw(raw), clock=ManualClock())
        try:
            families = []
            for metric in broker.metrics.registry.collect():
                labels: tuple[str, ...] = tuple(getattr(metric, "_labelnames", ()) or ())
                if not labels:  # prometheus-client's own Counter/Gauge/Histogram
                    seen = {k for sample in metric.samples for k in sample.labels}
                    labels = tuple(sorted(seen - {"le", "quantile"}))
                name = metric.name + ("_total" if metric.type == "counter" else "")
                families.append((name, metric.type, labels, metric.documentation))
            return tuple(families)
        finally:
            broker.logs.close()


def _metrics() -> str:
    rows = (
        (_code(name), kind, ", ".join(_code(label) for label in labels), _cell(doc))
        for name, kind, labels, doc in _metric_families()
    )
    return _table(("Metric", "Type", "Labels", "Help"), rows) + "\n"


# ---- apis


def _apis() -> str:
    from kio.schema.index import api_key_map

    from shoal.protocol import codec
    from shoal.server.observability.metrics import request_name
    from shoal.server.registry import load_all_handlers

    handlers = load_all_handlers()
    kio_version = importlib.metadata.version("kio")
    rows = []
    for key in sorted(handlers):
        handler = handlers[key]
        name = codec.api_name(key) or f"api_{key}"
        versions = sorted(codec.SCHEMA_NAMES.get(name, {}))
        shoal_range = f"{handler.min_version}-{handler.max_version}"
        if key in api_key_map:
            schema = f"{versions[0]}-{versions[-1]}" if versions else ""
            origin = "Kafka"
        else:
            schema = "—"
            origin = "**Shoal extension**"
        rows.append((str(key), request_name(key), shoal_range, schema, origin))
    table = _table(
        ("Key", "API", "Shoal (ApiVersions)", f"Schema versions (kio {kio_version})", "Origin"),
        rows,
    )
    unserved = sorted(set(api_key_map) - set(handlers))
    missing = ", ".join(f"{request_name(k)} ({k})" for k in unserved)
    return f"{table}\n\nKafka APIs Shoal does not serve: {missing}.\n"


# ---- extension APIs' message layouts


def _extensions() -> str:
    """Each Shoal extension API's request and response, field by field, read from the
    dataclasses kio encodes them with (`shoal.protocol.extensions`): a nested field is
    named by its path (`Partitions[].Entries[].State`), a tagged one shows its tag."""
    import dataclasses
    import importlib
    import typing

    from kio.static.constants import EntityType

    from shoal.protocol.extensions import API_KEYS, SCHEMAS

    out: list[str] = []
    for key, name in sorted(API_KEYS.items()):
        for version, kinds in sorted(SCHEMAS[name].items()):
            for kind in (EntityType.request, EntityType.response):
                module_name, _, class_name = kinds[kind].partition(":")
                module = importlib.import_module(module_name)
                message = getattr(module, class_name)
                docs = _field_docs(Path(str(module.__file__)).read_text(encoding="utf-8"))
                rows: list[tuple[str, ...]] = []
                _message_rows(message, "", docs, rows, dataclasses, typing)
                title = f"{class_name} (key {key}, v{version})"
                header = ("Field", "Type", "Tag", "Default", "Meaning")
                out.append(f"### {title}\n\n{_table(header, rows)}")
    return "\n\n".join(out) + "\n"


def _field_docs(source: str) -> dict[tuple[str, str], str]:
    """(class, field) -> the docstring written under the field in `source`."""
    docs: dict[tuple[str, str], str] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for stmt, after in itertools.pairwise(body):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[(node.name, stmt.target.id)] = " ".join(after.value.value.split())
    return docs


def _message_rows(
    message: type,
    prefix: str,
    docs: dict[tuple[str, str], str],
    rows: list[tuple[str, ...]],
    dataclasses: Any,
    typing: Any,
) -> None:
    hints = typing.get_type_hints(message)
    for f in dataclasses.fields(message):
        wire_name = "".join(part.capitalize() for part in f.name.split("_"))
        hint = hints[f.name]
        nested = _nested_struct(hint, dataclasses, typing)
        kafka_type = f.metadata.get("kafka_type", "")
        is_array = typing.get_origin(hint) is tuple
        shown = f"[]{nested.__name__}" if nested else f"[]{kafka_type}" if is_array else kafka_type
        if not nested and "None" in str(hint):
            shown = f"nullable {shown}"
        tag = f.metadata.get("tag")
        default = "" if f.default is dataclasses.MISSING else repr(f.default)
        if f.default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            default = repr(f.default_factory())
        meaning = docs.get((message.__name__, f.name), "")
        rows.append(
            (
                _code(prefix + wire_name),
                _cell(shown),
                "" if tag is None else str(tag),
                _cell(default),
                _cell(meaning),
            )
        )
        if nested:
            _message_rows(nested, f"{prefix}{wire_name}[].", docs, rows, dataclasses, typing)


def _nested_struct(hint: Any, dataclasses: Any, typing: Any) -> type | None:
    """The struct type of an array-of-structs field, else None."""
    if typing.get_origin(hint) is tuple:
        (item, *_rest) = typing.get_args(hint)
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            return item
    return None


# ---- bench/results/side_by_side.json as a table

SIDE_BY_SIDE = "bench/results/side_by_side.json"
_UNITS = {"rate": ("/s", 1.0), "ms": (" ms", 1.0), "s": (" s", 1.0), "MiB": (" MiB", 1.0)}


def _side_by_side() -> str:
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
        goal = f"{_cell(row['goal'])}: {met}" if row.get("goal") else ""
        rows.append(
            (
                _cell(row["metric"]),
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
    return f"{_table(header, rows)}\n\n{caption}\n"


def _rate(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f} M/s"
    if value >= 1e3:
        return f"{value / 1e3:.0f} k/s"
    return f"{value:.0f}/s"


def _load(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "?"


# ---- limits


def _limits() -> str:
    from shoal import limits

    source = Path(limits.__file__).read_text(encoding="utf-8")
    sections: list[tuple[str, list[tuple[str, str, str]]]] = []
    for title, name, expression, doc in _limit_constants(source):
        if not sections or sections[-1][0] != title:
            sections.append((title, []))
        value = getattr(limits, name)
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        if expression.replace("_", "") not in (str(value), f"{value!r}"):
            shown = f"{shown} (`{expression}`)"
        sections[-1][1].append((_code(name), _cell(shown), _cell(doc)))
    out = []
    for title, rows in sections:
        out.append(f"**{title}**\n\n" + _table(("Name", "Value", "Meaning"), rows))
    return "\n\n".join(out) + "\n"


def _limit_constants(source: str) -> Iterator[tuple[str, str, str, str]]:
    """(section, name, value expression, docstring) of each module-level constant, in
    file order; a section is a comment line after a blank line (`# Connections`,
    `# ---- web console (...)`)."""
    lines = source.splitlines()
    headings: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        if line.startswith("#") and (number == 1 or not lines[number - 2].strip()):
            title = line.lstrip("#- ").strip()
            headings[number] = title[:1].upper() + title[1:]
    body = ast.parse(source).body
    section = "General"
    for index, node in enumerate(body):
        if not isinstance(node, ast.AnnAssign | ast.Assign):
            continue
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
        if not isinstance(target, ast.Name) or not target.id.isupper() or node.value is None:
            continue
        for number in sorted(headings):
            if number < node.lineno:
                section = headings[number]
        following = body[index + 1] if index + 1 < len(body) else None
        doc = ""
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            doc = following.value.value
        expression = ast.get_source_segment(source, node.value) or ""
        yield section, target.id, expression, doc


GENERATORS: dict[str, Callable[[], str]] = {
    "configs-broker": functools.partial(_configs, "broker"),
    "configs-topic": functools.partial(_configs, "topic"),
    "configs-group": functools.partial(_configs, "group"),
    "configs-client-metrics": functools.partial(_configs, "client-metrics"),
    "cli": _cli,
    "metrics": _metrics,
    "apis": _apis,
    "extensions": _extensions,
    "side-by-side": _side_by_side,
    "limits": _limits,
}
"""Every NAME of `<!-- shoal:generate NAME -->`."""


# ---------------------------------------------------------------- charts

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


def format_value(value: float) -> str:
    """A value as a chart prints it: grouped thousands, about three significant digits."""
    magnitude = abs(value)
    if magnitude >= 100 or value == int(value):
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


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
