"""The layering rule, checked: imports point down only, and core packages never touch
asyncio, sockets or the wall clock (see shared/design/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "shoal"

# Each package with the packages it may import (besides itself and the leaf modules).
LEAVES = {
    "shoal.limits",
    "shoal.clock",
    "shoal.config",
    "shoal.iso_duration",
    "shoal.progress",
    "shoal",
}
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "log": {"protocol"},
    "coordinator": {"log", "protocol"},
    "share_coordinator": {"coordinator", "log", "protocol"},
    "share": {"coordinator", "share_coordinator", "log", "protocol"},
    "group": {"coordinator", "share", "log", "protocol"},
    "security": {"protocol"},
    "txn": {"coordinator", "log", "protocol"},
    "metadata": {"coordinator", "log", "protocol", "security"},
    "server": {
        "metadata",
        "group",
        "share",
        "share_coordinator",
        "txn",
        "coordinator",
        "log",
        "protocol",
        "security",
    },
    "client": {"protocol", "security"},
    "cli": {"client", "server", "protocol", "security"},
    "spark": {"client", "protocol", "security"},
    # Deterministic simulation: a harness above the shell. It drives the cores and the
    # log directly (world.py) and runs the real server on its own loop,
    # network and disk, reached by clients over the wire (shell_world.py).
    "sim": {
        "server",
        "client",
        "share",
        "share_coordinator",
        "group",
        "txn",
        "coordinator",
        "log",
        "protocol",
        "security",
    },
}
CORES = [
    "protocol",
    "log",
    "coordinator",
    "share_coordinator",
    "share",
    "group",
    "txn",
    "metadata",
    "security",
]
CLIENT_DRIVERS = {"sync.py", "aio.py", "share_runner.py", "share_thread.py"}
"""The client's only modules with I/O; the rest of `client/` is its sans-I/O core."""
BANNED_IN_CORES = {"asyncio", "socket", "selectors", "threading"}
WALL_CLOCK_CALLS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "time_ns"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
}


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py")) if (SRC / package).exists() else []


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down(package: str) -> None:
    allowed = {f"shoal.{p}" for p in ALLOWED[package] | {package}}
    bad = []
    for path in _modules(package):
        for name in _imports(path):
            top = ".".join(name.split(".")[:2])
            if not name.startswith("shoal.") or name in LEAVES or top in LEAVES:
                continue
            if top not in allowed:
                bad.append(f"{path.relative_to(SRC)} imports {name}")
    assert not bad, "layering violated:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", CORES)
def test_cores_have_no_io_loop_or_sockets(package: str) -> None:
    bad = []
    for path in _modules(package):
        for name in _imports(path):
            if name.split(".")[0] in BANNED_IN_CORES:
                bad.append(f"{path.relative_to(SRC)} imports {name}")
    assert not bad, "\n".join(bad)


def test_client_core_has_no_io_loop_or_sockets() -> None:
    core = [p for p in _modules("client") if p.name not in CLIENT_DRIVERS]
    assert any(p.name == "operations.py" for p in core), "the client core should exist"
    bad = [
        f"{path.relative_to(SRC)} imports {name}"
        for path in core
        for name in _imports(path)
        if name.split(".")[0] in BANNED_IN_CORES
    ]
    assert not bad, "\n".join(bad)


def _wall_clock_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id, node.func.attr) in WALL_CLOCK_CALLS
        ):
            found.append(f"{path.name}:{node.lineno} {node.func.value.id}.{node.func.attr}()")
    return found


def test_only_clock_module_reads_the_wall_clock() -> None:
    offenders = [
        call
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "clock.py"
        for call in _wall_clock_calls(path)
    ]
    assert not offenders, "\n".join(offenders)


def test_the_checker_sees_violations(tmp_path: Path) -> None:
    """Guard against a checker that passes vacuously."""
    sample = tmp_path / "x.py"
    sample.write_text("import asyncio\nimport time\nfrom shoal.server import broker\ntime.time()\n")
    assert "asyncio" in _imports(sample)
    assert "shoal.server" in _imports(sample)
    assert len(_wall_clock_calls(sample)) == 1
    assert _modules("protocol"), "the protocol package should exist"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _server_graph() -> dict[str, set[str]]:
    """Every `shoal.server` module with the `shoal.server` modules it imports, counting
    imports under `if TYPE_CHECKING:` and inside functions (the whole AST), and
    `from shoal.server import x` as an import of the module `shoal.server.x`."""
    modules = {_module_name(path): path for path in _modules("server")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                edges.add(node.module)
                edges.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (as a path that ends where it starts), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        path.append(module)
        for target in sorted(graph[module]):
            found = visit(target)
            if found is not None:
                return found
        path.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        found = visit(module)
        if found is not None:
            return found
    return None


def test_server_has_no_import_cycle() -> None:
    graph = _server_graph()
    assert graph.get("shoal.server.broker"), "the graph should see the broker's imports"
    cycle = _cycle(graph)
    assert cycle is None, "import cycle in server/: " + " -> ".join(cycle or [])


def test_only_the_cli_imports_the_broker() -> None:
    importers = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if "shoal.server.broker" in _imports(path)
    )
    assert importers == ["cli/serve.py", "sim/shell_world.py"]  # the simulator runs it too


def test_no_handler_references_the_broker() -> None:
    offenders = []
    for path in _modules("server/handlers"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
            if name in {"Broker", "broker"}:
                offenders.append(f"{path.name}:{getattr(node, 'lineno', '?')} {name}")
    assert not offenders, "handlers get services, not the broker:\n" + "\n".join(offenders)


def test_the_cycle_finder_sees_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


# ---- the documented layers match the code

README = SRC.parents[1] / "README.md"
ARCHITECTURE = SRC.parents[2] / "shared" / "design" / "architecture.md"


def _packages() -> set[str]:
    """The layered packages: every package but the leaves (`shoal.config` is a leaf
    that happens to be a package of modules)."""
    return {
        p.name
        for p in SRC.iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and f"shoal.{p.name}" not in LEAVES
    }


def _readme_layers() -> dict[str, set[str]]:
    """The README's "Layers" table: one row per package, `| pkg/ | may import |`."""
    text = README.read_text()
    section = text.split("### Layers", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        package = cells[0].strip("`/")
        imports = {c.strip().strip("`/") for c in cells[1].split(",") if c.strip() not in {"", "—"}}
        table[package] = imports
    return table


def test_every_package_is_in_the_layer_table() -> None:
    assert _packages() == set(ALLOWED), "a new package needs its row in ALLOWED and the README"


def test_the_readme_layer_table_is_the_checked_one() -> None:
    """README.md's Layers table is exactly ALLOWED: an edge added to the code fails
    test_imports_point_down until it is in ALLOWED, and this test until the README says it."""
    assert _readme_layers() == ALLOWED


def test_the_readme_layout_names_every_package() -> None:
    layout = README.read_text().split("## Layout", 1)[1].split("```", 2)[1]
    listed = {
        line.split()[0].rstrip("/")
        for line in layout.splitlines()[2:]
        if line.startswith("  ") and line.split()[0].endswith("/")
    }
    assert listed == _packages()


@pytest.mark.skipif(not ARCHITECTURE.exists(), reason="../shared is not beside this checkout")
def test_the_architecture_names_every_package() -> None:
    text = ARCHITECTURE.read_text().split("## The layers", 1)[1].split("\n## ", 1)[0]
    named = {word.rstrip("/") for word in text.split() if word.endswith("/") and word[0].isalpha()}
    missing = _packages() - named - _beyond_the_design()
    assert not missing, (
        f"architecture.md's layer list lacks {sorted(missing)}: add them there, or name them "
        "in the README's 'Beyond the design's layer list' line with their place"
    )


def _beyond_the_design() -> set[str]:
    """Packages the README says the shared design does not list yet (that document is
    not ours to edit here): the backticked `pkg/` names of its one 'Beyond' line."""
    section = README.read_text().split("### Layers", 1)[1]
    line = section.split("Beyond the design's layer list", 1)[1].split("\n\n", 1)[0]
    return {
        w.strip("`/.,:")
        for w in line.split()
        if w.startswith("`") and w.rstrip("`.,:").endswith("/")
    }
