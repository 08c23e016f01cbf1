"""The reference tables generated from the code: configs (shoal.config's table), the
CLI (the real argparse parsers), metrics (a never-started broker's registry), served
APIs (the handler registry, as ApiVersions advertises it), the extension APIs' message
layouts (the dataclasses kio encodes them with) and the named limits (limits.py with
its docstrings)."""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.metadata
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docsgen.markdown import cell, code, md_table

# ---- configs


def configs(scope_name: str) -> str:
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
        text = "null" if shown is None else "(empty)" if shown == "" else code(shown)
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
            parts.append("one of " + ", ".join(code(c) for c in d.choices))
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
            cell(d.doc) if marked is None else f"**Shoal extension**: {cell(marked)}. {cell(d.doc)}"
        )

    def why(d: cd.ConfigDef) -> str:
        reason = d.no_effect
        assert reason is not None
        return f"`{reason.name}`: {cell(reason.value)}"

    acting = sorted((d for d in keys.values() if d.no_effect is None), key=lambda d: d.name)
    idle = sorted(
        (d for d in keys.values() if d.no_effect is not None),
        key=lambda d: (list(cd.NoEffect).index(d.no_effect), d.name),  # type: ignore[arg-type]
    )
    parts = []
    if acting:
        parts.append(
            md_table(
                ("Key", "Type", "Default", "Valid values", "Update", "Description"),
                (
                    (
                        f'<a id="{config_anchor(scope_name, d.name)}"></a>{code(d.name)}',
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
            md_table(
                ("Key", "Type", "Kafka's default", "Update", "Why no effect"),
                (
                    (
                        f'<a id="{config_anchor(scope_name, d.name)}"></a>{code(d.name)}',
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


def cli() -> str:
    from shoal.cli.main import build_parser

    parser = build_parser()
    out: list[str] = []
    for path, sub in _walk_parsers(parser, ("shoal",)):
        if len(path) > 1:
            out.append(f"### `{' '.join(path)}` {{ #{command_anchor(path)} }}\n")
        help_text = _subcommand_help(parser, path)
        if help_text:
            out.append(f"{cell(help_text)[0].upper()}{cell(help_text)[1:]}.\n")
        out.append("```text\n" + usage(sub) + "\n```\n")
        rows = [_option_row(sub, action) for action in sub._actions if _shown(action)]
        if rows:
            out.append(md_table(("Option", "Argument", "Default", "Description"), rows) + "\n")
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
        names = ", ".join(code(o) for o in action.option_strings)
        takes = action.nargs != 0
        argument = formatter._format_args(action, action.dest.upper()) if takes else ""
    else:
        names = code(formatter._format_args(action, action.dest))
        argument = "(positional)"
    shown_default = ""
    if action.option_strings and action.nargs != 0:
        value = action.default
        if value not in (None, argparse.SUPPRESS, [], ()):
            shown_default = code(value)
    help_text = formatter._expand_help(action) if action.help else ""
    if action.choices and "{" not in argument:  # a metavar hides the choices
        help_text += f" (one of {', '.join(str(c) for c in action.choices)})"
    if action.required and action.option_strings:
        help_text += " Required."
    return (
        names,
        code(argument) if argument and argument != "(positional)" else argument,
        shown_default,
        cell(help_text),
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


def metrics() -> str:
    rows = (
        (code(name), kind, ", ".join(code(label) for label in labels), cell(doc))
        for name, kind, labels, doc in _metric_families()
    )
    return md_table(("Metric", "Type", "Labels", "Help"), rows) + "\n"


# ---- apis


def apis() -> str:
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
    listing = md_table(
        ("Key", "API", "Shoal (ApiVersions)", f"Schema versions (kio {kio_version})", "Origin"),
        rows,
    )
    unserved = sorted(set(api_key_map) - set(handlers))
    missing = ", ".join(f"{request_name(k)} ({k})" for k in unserved)
    return f"{listing}\n\nKafka APIs Shoal does not serve: {missing}.\n"


# ---- extension APIs' message layouts


def extensions() -> str:
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
                out.append(f"### {title}\n\n{md_table(header, rows)}")
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
                code(prefix + wire_name),
                cell(shown),
                "" if tag is None else str(tag),
                cell(default),
                cell(meaning),
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


# ---- limits


def limits() -> str:
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
        sections[-1][1].append((code(name), cell(shown), cell(doc)))
    out = []
    for title, rows in sections:
        out.append(f"**{title}**\n\n" + md_table(("Name", "Value", "Meaning"), rows))
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


"""Every NAME of `<!-- shoal:generate NAME -->`."""
