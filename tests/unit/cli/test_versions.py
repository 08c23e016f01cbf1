"""`shoal --version`: one source of the version (shoal.__version__, which
pyproject.toml reads as the package's), printed with the Kafka release it follows."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import shoal
from shoal.cli.main import main

ROOT = Path(__file__).resolve().parents[3]


def test_the_package_version_is_read_from_shoal() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "shoal.__version__"}


@pytest.mark.parametrize(
    "argv", [["--version"], ["configs", "--version"], ["console-consumer", "--version"]]
)
def test_version_prints_shoal_and_kafka_and_exits_0(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    assert capsys.readouterr().out == (
        f"shoal {shoal.__version__} (Apache Kafka {shoal.KAFKA_VERSION} protocol and tools)\n"
    )
