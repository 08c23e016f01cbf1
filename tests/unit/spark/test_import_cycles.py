"""The PySpark connector's modules import each other without a cycle, counting imports
inside functions (a function-level import is how a cycle hides): the shared pieces live
in modules both sides import (offset_ranges.py, sink_produce.py)."""

from __future__ import annotations

import ast

from tests.unit.test_layering import _cycle, _module_name, _modules


def _spark_graph() -> dict[str, set[str]]:
    """Each module of spark/ with those it imports (`from shoal.spark import x` as an
    import of `shoal.spark.x`); the package's `__init__` is left out: it is loaded
    before any of its modules, and imports them only when `register()` is called."""
    modules = {_module_name(path): path for path in _modules("spark")}
    del modules["shoal.spark"]
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


def test_spark_has_no_import_cycle() -> None:
    graph = _spark_graph()
    assert "shoal.spark.sink_transactions" in graph["shoal.spark.sink"], "the graph sees imports"
    cycle = _cycle(graph)
    assert cycle is None, "import cycle in spark/: " + " -> ".join(cycle or [])
