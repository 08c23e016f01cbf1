"""The docs site's generated reference pages and charts (scripts/docsgen.py, the build
hook mkdocs.yml names): every config key, CLI option, metric family, served API and
named limit is in its generated table; bad placeholders and chart sources stop the
build; a chart draws the JSON's values."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import shoal.limits
from shoal.cli.main import build_parser
from shoal.config.table import BROKER_KEYS, CLIENT_METRICS_KEYS, GROUP_KEYS, TOPIC_KEYS
from shoal.server.registry import api_ranges, load_all_handlers
from tests.support.docs_site import DOCS, ROOT, code_names, docsgen, table_rows
from tests.support.unstarted_broker import unstarted_broker

SCOPES = {
    "configs-broker": BROKER_KEYS,
    "configs-topic": TOPIC_KEYS,
    "configs-group": GROUP_KEYS,
    "configs-client-metrics": CLIENT_METRICS_KEYS,
}


@pytest.mark.parametrize("name", sorted(SCOPES))
def test_every_config_key_is_in_its_scope_table(name: str) -> None:
    rows = table_rows(docsgen().generate(name))
    listed = [code_names(row[0])[0] for row in rows]
    assert sorted(listed) == sorted(SCOPES[name])
    for row in rows:
        definition = SCOPES[name][code_names(row[0])[0]]
        assert row[1] == definition.type.name.lower()


def test_each_key_has_an_anchor_and_synonyms_link_to_broker_rows() -> None:
    """Pages link a key as configs.md#<scope>-<key>; a topic or group key's default
    links its broker synonym's row."""
    anchors = set()
    links = set()
    for name in SCOPES:
        generated = docsgen().generate(name)
        for row in table_rows(generated):
            scope = name.removeprefix("configs-")
            assert row[0].startswith(f'<a id="{scope}-{code_names(row[0])[0]}"></a>'), row[0]
        anchors |= set(re.findall(r'<a id="([^"]+)"></a>', generated))
        links |= set(re.findall(r"\]\(#([^)]+)\)", generated))
    assert links and links <= anchors
    assert "broker-log.cleanup.policy" in links


def test_config_defaults_bounds_and_read_only_are_shown() -> None:
    rows = {code_names(r[0])[0]: r for r in table_rows(docsgen().generate("configs-broker"))}
    assert rows["node.id"][2] == "`1`" and rows["node.id"][3] == "≥ 0"
    assert rows["node.id"][4] == "read-only"
    assert rows["log.cleaner.io.max.bytes.per.second"][2] == "`1.7976931348623157E308`"
    assert rows["auto.create.topics.enable"][4].startswith("dynamic (Shoal")
    assert rows["log.retention.check.interval.ms"][4] == "static"


def test_shoal_extensions_are_marked() -> None:
    rows = {code_names(r[0])[0]: r for r in table_rows(docsgen().generate("configs-broker"))}
    shoal_own = [key for key in BROKER_KEYS if key.startswith("shoal.")]
    assert shoal_own
    for key in shoal_own:
        assert "**Shoal extension**" in rows[key][-1], key
    assert "Shoal extension" not in rows["num.partitions"][-1]


def _sections(markdown: str) -> dict[str, str]:
    """The generated CLI reference by command: `shoal` (before the first heading) and
    each `### `shoal ...`` section."""
    heading = r"^### `([^`]+)` \{ #command-[\w-]+ \}$"
    parts = re.split(heading, markdown, flags=re.MULTILINE)
    sections = {"shoal": parts[0]}
    sections.update(zip(parts[1::2], parts[2::2], strict=True))
    return sections


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(" ".join(path), parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


def test_every_cli_command_and_option_is_in_the_cli_reference() -> None:
    sections = _sections(docsgen().generate("cli"))
    commands = _commands(build_parser(), ("shoal",))
    assert len(commands) > 10
    assert sorted(sections) == sorted(name for name, _ in commands)
    for name, parser in commands:
        options = {name for row in table_rows(sections[name]) for name in code_names(row[0])}
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                continue
            for option in action.option_strings:
                assert option in options, f"{name} {option}"
        assert docsgen().usage(parser) in sections[name]
        assert f"usage: {name} " in sections[name]


def test_every_metric_family_a_scrape_shows_is_listed(tmp_path: Path) -> None:
    broker = unstarted_broker(tmp_path)
    try:
        exposition = generate_latest(broker.metrics.registry).decode()
    finally:
        broker.logs.close()
    scraped = {
        family.name + ("_total" if family.type == "counter" else ""): family.type
        for family in text_string_to_metric_families(exposition)
        if not family.name.endswith("_created")  # a counter's or histogram's start time
    }
    rows = table_rows(docsgen().generate("metrics"))
    listed = {code_names(row[0])[0]: row[1] for row in rows}
    assert len(scraped) > 40
    assert listed == scraped
    labels = {code_names(row[0])[0]: code_names(row[2]) for row in rows}
    assert labels["kafka_network_requestmetrics_requests_total"] == ["request", "version"]
    assert labels["shoal_share_partition_records"] == ["group", "topic", "partition", "state"]


def test_every_served_api_is_listed_with_its_versions() -> None:
    rows = table_rows(docsgen().generate("apis"))
    listed = {int(row[0]): row for row in rows}
    served = api_ranges(load_all_handlers())
    assert len(served) > 60
    assert sorted(listed) == sorted(r.api_key for r in served)
    for served_range in served:
        row = listed[served_range.api_key]
        assert row[2] == f"{served_range.min_version}-{served_range.max_version}"
    assert listed[78][1] == "ShareFetch"
    assert "Shoal extension" in listed[30000][4] and listed[0][4] == "Kafka"


def test_every_extension_field_is_in_its_layout() -> None:
    """Each field of each extension message, nested ones by path, with its tag."""
    import dataclasses

    from shoal.protocol.extensions.share_group_browse.v0 import response

    out = docsgen().generate("extensions")
    rows = {row[0].strip("`"): row for row in table_rows(out)}
    for struct, path in (
        (response.ShareGroupBrowseResponse, ""),
        (response.BrowsedPartition, "Partitions[]."),
        (response.InFlightEntry, "Partitions[].Entries[]."),
    ):
        for f in dataclasses.fields(struct):
            name = path + "".join(part.capitalize() for part in f.name.split("_"))
            assert name in rows, name
            assert rows[name][2] == str(f.metadata.get("tag", "")), name
    assert "### ShareGroupBrowseRequest (key 30000, v0)" in out


def test_the_side_by_side_table_is_the_results_file() -> None:
    """One row per row of bench/results/side_by_side.json, in its order, with Shoal's
    ratio to Kafka and whether each goal was met; the run's machine in the caption."""
    gen = docsgen()
    data = json.loads((ROOT / gen.SIDE_BY_SIDE).read_text())
    out = gen.generate("side-by-side")
    rows = table_rows(out)
    assert [row[0] for row in rows] == [row["metric"] for row in data["rows"]]
    for row, source in zip(rows, data["rows"], strict=True):
        ratio = source["shoal/kafka"]
        assert row[4] == (f"{ratio:.2f}x" if ratio is not None else "—")
        if source["met"] is not None:
            assert row[5].rstrip("*").endswith("met"), row
            assert ("not met" in row[5]) is (source["met"] is False), row
    assert f"at Shoal {data['machine']['git_commit']}" in out


def test_every_named_limit_is_listed_with_its_value_and_doc() -> None:
    generated = docsgen().generate("limits")
    rows = {code_names(row[0])[0]: row for row in table_rows(generated)}
    constants = {
        name: value
        for name, value in vars(shoal.limits).items()
        if name.isupper() and isinstance(value, int | float)
    }
    assert len(constants) > 50
    assert sorted(rows) == sorted(constants)
    for name, value in constants.items():
        assert rows[name][1].split(" (")[0] == f"{value:,}", name
        assert rows[name][2], f"{name} has no docstring"
    assert rows["CONNECTION_WRITE_BUFFER_HIGH_BYTES"][1] == "262,144 (`256 * 1024`)"
    assert (
        rows["TOPIC_NAME_LENGTH_MAX"][2] == "Kafka's limit on a topic name's length "
        "(INVALID_TOPIC_EXCEPTION beyond)."
    )
    assert "**Topics and partitions**" in generated


def test_an_unknown_name_stops_the_build() -> None:
    gen = docsgen()
    with pytest.raises(gen.DocsGenError, match="unknown shoal:generate NAME 'configs-brokers'"):
        gen.expand("# T\n\n<!-- shoal:generate configs-brokers -->\n")
    with pytest.raises(gen.DocsGenError, match="malformed"):
        gen.expand("<!-- shoal:generate limits --> and more\n")


def test_placeholders_in_code_blocks_are_left_alone() -> None:
    text = "```markdown\n<!-- shoal:generate nothing -->\n```\n"
    assert docsgen().expand(text) == text


def _chart_page(source: str, bars: dict[str, str], **extra: object) -> str:
    spec = {"title": "Drain", "source": source, "unit": "records/s", "bars": bars, **extra}
    body = str(yaml.safe_dump(spec, sort_keys=False))
    return "Before.\n\n<!-- shoal:chart\n" + body + "-->\n"


def test_a_chart_draws_one_bar_per_label_with_the_jsons_values(tmp_path: Path) -> None:
    results = {"kafka": {"runs": [{"rate": 41000.5}]}, "shoal": [[1, 2], {"rate": 26500}]}
    (tmp_path / "r.json").write_text(json.dumps(results))
    page = _chart_page(
        "r.json",
        {"Kafka 4.2": "kafka.runs[0].rate", "Shoal": "shoal.1.rate", "Second": "shoal[0][1]"},
        scale=2,
        note="two cores",
    )
    out = docsgen().expand(page, root=tmp_path)
    assert out.startswith("Before.\n\n<figure")
    assert "shoal:chart" not in out and "\n\n" not in out.split("<figure", 1)[1]
    bars = re.findall(r'<rect class="bar" data-label="([^"]+)" data-value="([^"]+)"', out)
    assert bars == [("Kafka 4.2", "82001.0"), ("Shoal", "53000.0"), ("Second", "4.0")]
    widths = [float(w) for w in re.findall(r'<rect class="bar"[^>]* width="([\d.]+)"', out)]
    assert widths[0] > widths[1] > widths[2] > 0  # the smallest is still seen
    assert widths[1] / widths[0] == pytest.approx(53000 / 82001, rel=1e-2)
    for text in ("82,001 records/s", "53,000 records/s", "4 records/s", "two cores"):
        assert f">{text}<" in out
    assert 'fill="currentColor"' in out


@pytest.mark.parametrize(
    ("source", "path", "error"),
    [
        ("missing.json", "a", "missing.json not found"),
        ("r.json", "a.c", "has no key 'c'"),
        ("r.json", "a.b[3]", "has no item 3"),
        ("r.json", "a.b", "not a number"),
    ],
)
def test_a_bad_chart_source_or_path_stops_the_build(
    tmp_path: Path, source: str, path: str, error: str
) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"a": {"b": [1, 2]}}))
    gen = docsgen()
    with pytest.raises(gen.DocsGenError, match=re.escape(error)):
        gen.expand(_chart_page(source, {"x": path}), root=tmp_path)


def test_a_chart_path_may_pick_a_row_by_its_key(tmp_path: Path) -> None:
    """`rows[key=x]` names a row by a field, so a benchmark reordering its rows moves
    nothing; no such row, or two, stops the build."""
    rows = [{"key": "drain", "shoal": 800}, {"key": "paced", "shoal": 2}, {"key": "twice"}]
    rows.append({"key": "twice"})
    (tmp_path / "r.json").write_text(json.dumps({"rows": rows}))
    gen = docsgen()
    out = gen.expand(_chart_page("r.json", {"Shoal": "rows[key=drain].shoal"}), root=tmp_path)
    assert re.findall(r'data-label="([^"]+)" data-value="([^"]+)"', out) == [("Shoal", "800.0")]
    for path, error in (("rows[key=nope].shoal", "0 items"), ("rows[key=twice].x", "2 items")):
        with pytest.raises(gen.DocsGenError, match=error):
            gen.expand(_chart_page("r.json", {"x": path}), root=tmp_path)


def test_an_included_root_file_gets_the_sites_links(tmp_path: Path) -> None:
    gen = docsgen()
    (tmp_path / "CONTRIBUTING.md").write_text(
        "See [the layers](docs/design/architecture.md#the-layers), [changes](CHANGELOG.md),"
        " [Kafka](https://kafka.apache.org) and [below](#set-up).\n"
    )
    out = gen.expand("# Contributing\n<!-- shoal:include CONTRIBUTING.md -->", root=tmp_path)
    assert out == (
        "# Contributing\nSee [the layers](design/architecture.md#the-layers), "
        "[changes](changelog.md), [Kafka](https://kafka.apache.org) and [below](#set-up).\n"
    )
    (tmp_path / "CONTRIBUTING.md").write_text("[code](src/shoal/limits.py)\n")
    with pytest.raises(gen.DocsGenError, match="which the site does not have"):
        gen.expand("<!-- shoal:include CONTRIBUTING.md -->", root=tmp_path)
    with pytest.raises(gen.DocsGenError, match="is not one of"):
        gen.expand("<!-- shoal:include NOTES.md -->", root=tmp_path)


def test_a_chart_block_with_an_unknown_key_stops_the_build(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"a": 1}))
    gen = docsgen()
    with pytest.raises(gen.DocsGenError, match="unknown keys"):
        gen.expand(_chart_page("r.json", {"x": "a"}, colour="red"), root=tmp_path)


def test_every_page_expands_and_the_reference_pages_use_the_generators() -> None:
    """What the build does to each page, without mkdocs: no page has a placeholder or
    chart that fails, and each generated table has its page."""
    gen = docsgen()
    used: set[str] = set()
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        used |= set(re.findall(r"^<!-- shoal:generate ([\w-]+) -->$", text, re.MULTILINE))
        gen.expand(text, root=ROOT)
    assert used == set(gen.GENERATORS)


def test_mkdocs_runs_the_hook_and_checks_links() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["hooks"] == ["scripts/docs_hook.py"]
    assert config["strict"] is True
    assert set(config["validation"]["links"].values()) == {"warn"}
    assert config["theme"]["font"] is False


def test_prose_in_a_cell_is_shown_as_written() -> None:
    """A help text's `ssl.*, sasl.*` or `<key>` is not read as emphasis or a tag;
    code spans are left as they are."""
    cell = docsgen().cell("names (ssl.*, sasl.*) <key>=v, a|b\n `x_*<y>` _z_")
    assert cell == r"names (ssl.\*, sasl.\*) &lt;key>=v, a\|b `x_*<y>` \_z\_"


def test_a_chart_scale_is_a_number(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"a": 2000}))
    gen = docsgen()
    page = _chart_page("r.json", {"x": "a"}, scale="1e-3")  # YAML reads 1e-3 as text
    assert ">2 records/s<" in gen.expand(page, root=tmp_path)
    with pytest.raises(gen.DocsGenError, match="scale 'fast' is not a number"):
        gen.expand(_chart_page("r.json", {"x": "a"}, scale="fast"), root=tmp_path)


def test_the_root_files_link_only_to_what_the_repository_has() -> None:
    """README.md (read on the forge, not built by the site), CONTRIBUTING.md and
    CHANGELOG.md: every relative link names a file or folder that exists."""
    checked = 0
    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#", 1)[0]
            if not path or "://" in path or path.startswith("mailto:"):
                continue
            assert (ROOT / path).exists(), f"{name} links {target!r}, which does not exist"
            checked += 1
    assert checked >= 20, f"only {checked} relative links found: is the pattern still right?"
