"""The layering rule, checked: imports point down only, and core packages never touch
asyncio, sockets or the wall clock (docs/design/architecture.md, "The layers")."""

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


# ---- the documented layers match the code (docs/design/architecture.md)

ARCHITECTURE = SRC.parents[1] / "docs" / "design" / "architecture.md"


def _doc_section(title: str) -> str:
    """The text of architecture.md's `## title` section, up to the next `## ` heading."""
    text = ARCHITECTURE.read_text()
    assert f"\n## {title}\n" in text, f"architecture.md has no '## {title}' section"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _doc_table(section: str, first_header: str) -> list[list[str]]:
    """The body rows (as stripped cells) of the markdown table in `section` whose header
    row starts with the cell `first_header`."""
    rows: list[list[str]] = []
    inside = False
    for raw in section.splitlines():
        line = raw.strip()
        if not line.startswith("|"):
            if inside:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not inside:
            inside = cells[0] == first_header
            continue
        if set(cells[0]) <= {"-", ":"}:
            continue  # the separator row
        rows.append(cells)
    assert rows, f"architecture.md has no table headed '{first_header}'"
    return rows


def _names(cell: str) -> set[str]:
    """The backticked names of a table cell: `` `log`, `protocol` `` -> {"log", "protocol"}."""
    return {c.strip().strip("`/") for c in cell.split(",") if c.strip() not in {"", "—"}}


def _packages() -> set[str]:
    """The layered packages: every package but the leaves (`shoal.config` is a leaf
    that happens to be a package of modules)."""
    return {
        p.name
        for p in SRC.iterdir()
        if p.is_dir() and (p / "__init__.py").exists() and f"shoal.{p.name}" not in LEAVES
    }


def _doc_layers() -> dict[str, set[str]]:
    """The "may import" table of "The layers": one row per package, `| pkg/ | may import |`."""
    section = _doc_section("The layers").split("### ", 1)[0]
    return {cells[0].strip("`/"): _names(cells[1]) for cells in _doc_table(section, "package")}


def _doc_roles() -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
    """The roles table of "Roles inside server/": each role with the roles it may import,
    and the edges allowed only towards the modules named (`net`: `throttle`, `sasl`)."""
    section = _doc_section("The layers").split("### Roles inside server/", 1)[1]
    roles: dict[str, set[str]] = {}
    only: dict[tuple[str, str], set[str]] = {}
    for cells in _doc_table(section, "role"):
        role = cells[0].strip("`/")
        roles[role] = _names(cells[1])
        for part in filter(None, (p.strip() for p in cells[2].split(";"))):
            other, modules = part.split(":", 1)
            target = other.strip().strip("`")
            only[(role, target)] = {f"shoal.server.{target}.{m}" for m in _names(modules)}
    return roles, only


def test_every_package_is_in_the_layer_table() -> None:
    assert _packages() == set(ALLOWED), "a new package needs its row in ALLOWED and the doc"


def test_the_layer_table_is_the_checked_one() -> None:
    """architecture.md's layer table is exactly ALLOWED: an edge added to the code fails
    test_imports_point_down until it is in ALLOWED, and this test until the doc says it."""
    assert _doc_layers() == ALLOWED


def test_the_roles_table_is_the_checked_one() -> None:
    """architecture.md's roles table inside server/ is exactly SERVER_ROLES and
    SERVER_ROLE_ONLY (the same rule as the layer table, one level down)."""
    roles, only = _doc_roles()
    assert roles == SERVER_ROLES
    assert only == SERVER_ROLE_ONLY


def _layout() -> tuple[set[str], set[str]]:
    """The packages (`name/`) and modules (`name.py`) the Layout tree lists under
    `src/shoal/`: the first word of each line indented by two spaces."""
    block = _doc_section("Layout").split("```", 2)[1]
    tree = block.split("src/shoal/\n", 1)[1]
    lines = tree.splitlines()
    words = [line.split()[0] for line in lines if line.startswith("  ") and line[2] != " "]
    packages = {w.rstrip("/") for w in words if w.endswith("/")}
    return packages, {w for w in words if w.endswith(".py")}


def test_the_layout_names_every_package_and_module() -> None:
    packages, modules = _layout()
    on_disk = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == on_disk
    assert modules == {p.name for p in SRC.glob("*.py") if p.name != "__init__.py"}


def test_the_architecture_names_every_package() -> None:
    """Every package appears, as `pkg/`, in the text of "The layers" (its diagram and
    its prose), not only in the table."""
    text = _doc_section("The layers")
    named = {
        word.rstrip("/")
        for word in (w.strip("`.,:;()") for w in text.split())
        if word.endswith("/") and word[:1].isalpha()
    }
    missing = _packages() - named
    assert not missing, f"architecture.md's layer list lacks {sorted(missing)}"


def test_the_doc_checkers_see_a_disagreement() -> None:
    """Guard against checks that pass vacuously: a table parsed from a sample page."""
    section = "| package | may import |\n|---|---|\n| `log/` | `protocol` |\n| `protocol/` | — |\n"
    parsed = {r[0].strip("`/"): _names(r[1]) for r in _doc_table(section, "package")}
    assert parsed == {"log": {"protocol"}, "protocol": set()}
    assert _doc_layers() != {**ALLOWED, "extra": set()}
    assert _doc_roles()[0], "the roles table should parse"


# ---- roles inside server/ and protocols inside group/ (the shape scripts/relayout.py made)

SERVER_TOP = {
    "shoal.server",
    "shoal.server.broker",  # the composition root: the only module that imports every role
    "shoal.server.context",  # what a handler is given
    "shoal.server.registry",  # the API table net dispatches through (it loads handlers/)
    "shoal.server.refused",  # how a handler unwinds to its connection
    "shoal.server.handler_services",  # the services bundle handlers get
    "shoal.server.connection_info",  # a connection's state, shared by net, context, services
}
"""server/'s top level: the composition root and the contract between its roles."""

SERVER_ROLES: dict[str, set[str]] = {
    "net": {"services", "metadata", "observability"},
    "handlers": {"handlers.common", "services", "metadata", "net", "observability"},
    "handlers.common": {"services", "metadata"},
    "services": {"metadata", "observability"},
    "metadata": {"services"},
    "observability": {"services"},
}
"""Each role in server/ with the roles it may import (besides itself and SERVER_TOP
but the broker). Nothing imports handlers/ but the registry, so net reaches handlers only
through it; services never call handlers or net; observability reads the services and is
fed by the others, and never imports net, handlers or metadata (the console's opt-in
write actions go through the group service's admin operations)."""

SERVER_ROLE_ONLY: dict[tuple[str, str], set[str]] = {
    # a handler consults the wire-level gates: byte-rate throttling and the SASL session
    ("handlers", "net"): {"shoal.server.net.throttle", "shoal.server.net.sasl"},
    # the metadata stores write their files through the disk workers, off the loop
    ("metadata", "services"): {"shoal.server.services.disk_io"},
    # services feed diagnostics, nothing else of observability
    ("services", "observability"): {
        "shoal.server.observability.latency_trace",
        "shoal.server.observability.record_path",
    },
    ("handlers", "observability"): {"shoal.server.observability.record_path"},
}
"""Role edges allowed only towards the modules named (the exceptions, with why)."""

ROLE_PACKAGES = {"shoal.server." + r for r in SERVER_ROLES if r != "handlers.common"} | {
    "shoal.server.handlers.common"
}
"""The roles' `__init__` modules (docstrings only): `from shoal.server.net import sasl`
imports `sasl`, which the rule judges, and the package, which it does not."""


def _role(module: str) -> str:
    parts = module.split(".")
    if module in SERVER_TOP or len(parts) < 3:
        return "top"
    if parts[2] == "handlers":
        return "handlers.common" if parts[3:4] == ["common"] else "handlers"
    return parts[2]


def _role_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(graph.items()):
        role = _role(module)
        for target in sorted(targets):
            other = _role(target)
            if role in ("top", other) or target in ROLE_PACKAGES:
                continue
            if other == "top":
                ok = target != "shoal.server.broker"
            else:
                only = SERVER_ROLE_ONLY.get((role, other))
                ok = other in SERVER_ROLES.get(role, set()) and (only is None or target in only)
            if not ok:
                bad.append(f"{module} ({role}) imports {target} ({other})")
    return bad


def test_server_top_level_is_the_root_and_the_contract() -> None:
    top = {m for m in _server_graph() if len(m.split(".")) <= 3 and m not in SERVER_TOP}
    roles = {m.split(".")[2] for m in top}
    assert not top - {"shoal.server." + r for r in SERVER_ROLES}, (
        f"modules at server/'s top level with no role: {sorted(top)}; move each into "
        "net/, handlers/, services/, metadata/ or observability/"
    )
    assert roles == {"net", "handlers", "services", "metadata", "observability"}


def test_server_roles_import_as_layered() -> None:
    bad = _role_violations(_server_graph())
    assert not bad, "role rule violated in server/:\n" + "\n".join(bad)


def test_the_role_checker_sees_violations() -> None:
    assert _role_violations({"shoal.server.services.x": {"shoal.server.handlers.fetch"}})
    assert _role_violations({"shoal.server.net.connection": {"shoal.server.handlers.fetch"}})
    assert _role_violations({"shoal.server.metadata.x": {"shoal.server.services.timers"}})
    assert not _role_violations({"shoal.server.handlers.fetch": {"shoal.server.net.throttle"}})
    assert _role("shoal.server.handlers.common.authorization") == "handlers.common"


def test_share_groups_stand_apart_from_the_consumer_protocols() -> None:
    """group/share/ uses what group/ shares, never group/classic/ or group/consumer/;
    no protocol package imports the shard that ties them together."""
    bad = []
    for protocol in ("classic", "consumer", "share"):
        for path in _modules(f"group/{protocol}"):
            for name in _imports(path):
                shard = name == "shoal.group.shard"
                crossed = protocol == "share" and name.startswith(
                    ("shoal.group.classic", "shoal.group.consumer")
                )
                if shard or crossed:
                    bad.append(f"{path.relative_to(SRC)} imports {name}")
    assert _modules("group/share"), "the share protocol package should exist"
    assert not bad, "\n".join(bad)
