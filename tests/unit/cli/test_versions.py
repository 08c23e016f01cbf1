"""`shoal --version`: one source of the version (shoal.__version__, which
pyproject.toml reads as the package's), printed with the Kafka release it follows, the
same by every subcommand and the same as the installed distribution's metadata."""

from __future__ import annotations

import argparse
import importlib.metadata
import tomllib
from pathlib import Path

import pytest

import shoal
from shoal.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[3]


def test_the_package_version_is_read_from_shoal() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "shoal.__version__"}


def _subcommands() -> list[str]:
    parser = build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(commands.choices)


def test_every_subcommand_is_listed() -> None:
    # the parametrization below covers them all: a new tool is checked without a new line
    assert {"serve", "topics", "share-groups", "console-share-consumer"} <= set(_subcommands())


@pytest.mark.parametrize("argv", [["--version"], *([name, "--version"] for name in _subcommands())])
def test_version_prints_shoal_and_kafka_and_exits_0(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    assert capsys.readouterr().out == (
        f"shoal {shoal.__version__} (Apache Kafka {shoal.KAFKA_VERSION} protocol and tools)\n"
    )


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    """The metadata pip recorded (a wheel's, or the editable install's) says the same
    version as `shoal --version`: an install made before `__version__` changed is stale
    (scripts/setup reinstalls when pyproject.toml or src/shoal/__init__.py change)."""
    with pytest.raises(SystemExit):
        main(["--version"])
    printed = capsys.readouterr().out.split()
    assert printed[:2] == ["shoal", importlib.metadata.version("shoal")]
