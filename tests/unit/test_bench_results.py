"""bench/results holds one current file per benchmark, and the docs' charts read it.

Each committed file in bench/results is a JSON document named after the benchmark that
writes it: a name a script under bench/ passes to `save_result` (read from the scripts'
source, nothing is run), or a scenario's file of `python -m shoal.sim`
(`shoal.sim.__main__.result_name`). No benchmark has two files there: a new run replaces
its file (docs/performance/index.md says which figures each one backs).

The docs' charts read these files through the site's build hook, whose own tests
(tests/unit/test_docs_site.py) expand every page. The performance pages that code and
docs cite (`docs/performance/<page>.md, "Section"`)
exist, with the sections they name.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

from shoal.sim.__main__ import result_name
from shoal.sim.run import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
DOCS = ROOT / "docs"

PERFORMANCE_CITATION = re.compile(r'docs/performance/([\w-]+\.md)(?:,\s*"([^"]+)")?')


def _saved_names(call: ast.Call, script: Path) -> list[str]:
    """The results names a `save_result(NAME, ...)` call can write: a string literal, or
    a conditional between two (`"x-quick" if args.quick else "x"`)."""
    arg = call.args[0] if call.args else None
    options = [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else [arg]
    names = []
    for option in options:
        if not (isinstance(option, ast.Constant) and isinstance(option.value, str)):
            raise AssertionError(
                f"{script.relative_to(ROOT)}:{call.lineno}: save_result's name is not a "
                "string literal; this test reads the names from the source"
            )
        names.append(option.value)
    return names


def bench_writers() -> dict[str, str]:
    """Results file name (without `.json`) -> the benchmark that writes it: the script's
    module (`bench.latency`), or `shoal.sim --scenario S` for the simulator's files."""
    writers: dict[str, str] = {}
    for script in sorted(BENCH.rglob("*.py")):
        module = ".".join(script.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(script.read_text(), str(script))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called != "save_result":
                continue
            for name in _saved_names(node, script):
                owner = writers.setdefault(name, module)
                assert owner == module, f"{name}.json is written by {owner} and {module}"
    for scenario in SCENARIOS:
        name = result_name(scenario)
        assert name not in writers, f"{name}.json is written by {writers[name]} and shoal.sim"
        writers[name] = f"shoal.sim --scenario {scenario}"
    return writers


def committed_results() -> list[Path]:
    """The files of bench/results in git (a benchmark run leaves artefacts such as a
    profile next to them that are not committed); the directory's files outside git."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--", "bench/results"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return sorted(path for path in RESULTS.iterdir() if path.is_file())
    return sorted(ROOT / name for name in listed)


def test_the_writers_are_found() -> None:
    writers = bench_writers()
    # A few the docs quote, so a change to how the scripts call save_result that made
    # this reader find nothing fails here rather than passing on an empty table.
    assert writers["side_by_side"] == "bench.side_by_side"
    assert writers["paced"] == "bench.peers.paced"
    assert writers["first_record"] == "bench.peers.first_record"
    assert writers["recompression-quick"] == writers["recompression"] == "bench.recompression"
    assert writers["sim"] == "shoal.sim --scenario share"


def test_every_results_file_is_json_named_after_its_benchmark() -> None:
    writers = bench_writers()
    files = committed_results()
    assert files, "bench/results is empty"
    by_benchmark: dict[str, list[str]] = {}
    for path in files:
        assert path.parent == RESULTS, f"{path.relative_to(ROOT)}: not directly in bench/results"
        assert path.suffix == ".json", f"{path.name}: not a .json results file"
        assert path.stem in writers, f"{path.name}: no benchmark writes it (save_result names)"
        document = json.loads(path.read_text())
        assert isinstance(document, dict), f"{path.name}: not a JSON object"
        by_benchmark.setdefault(writers[path.stem], []).append(path.name)
    doubled = {bench: names for bench, names in by_benchmark.items() if len(names) > 1}
    assert not doubled, f"benchmarks with more than one results file: {doubled}"


def test_cited_performance_pages_and_sections_exist() -> None:
    cited = 0
    for tree in ("src", "tests", "bench", "docs"):
        for path in sorted((ROOT / tree).rglob("*")):
            if path.suffix not in {".py", ".md"} or not path.is_file():
                continue
            for match in PERFORMANCE_CITATION.finditer(path.read_text()):
                page, section = match.groups()
                target = DOCS / "performance" / page
                where = f"{path.relative_to(ROOT)}: docs/performance/{page}"
                assert target.is_file(), f"{where}: no such page"
                cited += 1
                if section is None:
                    continue
                headings = [
                    line.lstrip("#").strip()
                    for line in target.read_text().splitlines()
                    if line.startswith("#")
                ]
                assert any(heading.startswith(section) for heading in headings), (
                    f"{where}: no section {section!r}"
                )
    assert cited, "no citation of docs/performance/ found"
