"""Shoal as a user installs it: a wheel built from this checkout, pip-installed into a
fresh virtual environment (its dependencies from PyPI or pip's cache), run from a
directory outside the repository with no PYTHONPATH, so nothing of the checkout helps.

- Every file under src/shoal that is not Python source (the web console's page,
  script and style) is in the wheel: package data pyproject.toml forgets is what this
  test exists to find, since every other test runs the checkout itself.
- `shoal --version` prints the version the wheel's metadata records.
- `shoal serve` starts on a free loopback port with a fresh data directory; a producer
  and a ShareConsumer (confluent-kafka of the test's own environment) round-trip
  records through it; its HTTP listener (`metrics.listener`) serves `/metrics` and the
  console's page and assets, byte for byte the checkout's; SIGTERM stops it cleanly.

The wheel is built from a copy of the sources in the test's tmp dir, so the build's
`build/` and `*.egg-info` never land in the checkout. With pip's cache warm the build,
the venv and the install take about 20 s; the broker part a few seconds more.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest

import shoal
from tests.support.broker import BrokerProcess
from tests.support.metrics import METRICS_OVERRIDE, metrics_url, scrape, value
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    close_all,
    poll_until,
    produce_values,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "shoal"
SOURCE_FILES = ("pyproject.toml", "README.md")
"""What the build reads besides src/ (pyproject's `readme`); there is no setup.py or
MANIFEST.in."""
LICENSE_GLOBS = ("LICEN[CS]E*", "NOTICE*", "COPYING*", "AUTHORS*")
"""Files setuptools puts in the wheel's metadata by default (`license-files`), when the
checkout has them."""
PIP_TIMEOUT_S = 600.0
"""A cold pip cache downloads cryptography, uvloop and the rest: minutes on a slow link."""
START_TIMEOUT_S = 120.0
CHECKOUT_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
"""Variables that could lead the installed program back to the checkout or this venv."""
RECORDS = 20

pytestmark = pytest.mark.timeout(PIP_TIMEOUT_S + 300)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    outside: Path
    """A directory outside the repository, the installed programs' cwd."""

    @property
    def shoal(self) -> Path:
        return self.venv / "bin" / "shoal"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in CHECKOUT_ENV}


def _run(args: list[str | Path], *, cwd: Path, timeout_s: float = 60.0) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, args))} exited {done.returncode}\n"
        f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )
    return done.stdout


def _pip(python: Path | str, *args: str | Path, cwd: Path) -> str:
    return _run(
        [python, "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
        cwd=cwd,
        timeout_s=PIP_TIMEOUT_S,
    )


def _source_copy(into: Path) -> Path:
    """The files the build reads, copied (without bytecode or old build metadata)."""
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, into / name)
    for pattern in LICENSE_GLOBS:
        for path in ROOT.glob(pattern):
            shutil.copy2(path, into / path.name)
    shutil.copytree(
        ROOT / "src", into / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    return into


def build_wheel(source: Path, dist: Path) -> Path:
    """`pip wheel` with build isolation: setuptools as pyproject's build-system asks
    for it (from pip's cache once fetched), not whatever this venv happens to hold."""
    _pip(sys.executable, "wheel", "--no-deps", "--wheel-dir", dist, source, cwd=source)
    (wheel,) = dist.glob("shoal-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel-install")
    source = root / "source"
    source.mkdir()
    wheel = build_wheel(_source_copy(source), root / "dist")
    venv = root / "venv"
    outside = root / "elsewhere"
    outside.mkdir()
    _run([sys.executable, "-m", "venv", venv], cwd=outside, timeout_s=120.0)
    _pip(venv / "bin" / "python", "install", wheel, cwd=outside)
    return Installed(wheel=wheel, venv=venv, outside=outside)


def wheel_metadata(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(name).decode("utf-8"))
    return {key: str(message[key]) for key in ("Name", "Version")}


def package_data() -> list[str]:
    """Every file of the package that is not Python source, as a wheel names it."""
    return sorted(
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    )


def test_the_wheel_holds_every_file_of_the_package(installed: Installed) -> None:
    data = package_data()
    assert data, "the console's static files are package data; none found in the checkout"
    with zipfile.ZipFile(installed.wheel) as archive:
        names = set(archive.namelist())
    python = sorted(
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    )
    assert [name for name in data if name not in names] == [], "package data left out"
    assert [name for name in python if name not in names] == [], "modules left out"
    licenses = sorted(path.name for pattern in LICENSE_GLOBS for path in ROOT.glob(pattern))
    shipped = {name.rsplit("/", 1)[-1] for name in names if ".dist-info/" in name}
    assert [name for name in licenses if name not in shipped] == [], "license files left out"


def test_the_installed_program_comes_from_the_venv(installed: Installed) -> None:
    where = _run(
        [installed.python, "-c", "import shoal; print(shoal.__file__)"], cwd=installed.outside
    )
    assert Path(where.strip()).is_relative_to(installed.venv), where


def test_version_is_the_wheels(installed: Installed) -> None:
    metadata = wheel_metadata(installed.wheel)
    assert metadata == {"Name": "shoal", "Version": shoal.__version__}
    assert installed.wheel.name.startswith(f"shoal-{shoal.__version__}-")
    printed = _run([installed.shoal, "--version"], cwd=installed.outside)
    assert printed == (
        f"shoal {metadata['Version']} (Apache Kafka {shoal.KAFKA_VERSION} protocol and tools)\n"
    )
    for tool in ("serve", "topics", "share-groups", "console-share-consumer"):
        assert _run([installed.shoal, tool, "--version"], cwd=installed.outside) == printed


@pytest.fixture
def broker(installed: Installed, tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        tmp_path / "data",
        overrides=(*SHARE_TEST_BROKER_OVERRIDES, METRICS_OVERRIDE),
        command=[str(installed.shoal)],
        cwd=installed.outside,
        env_removed=CHECKOUT_ENV,
        start_timeout_s=START_TIMEOUT_S,
    )
    try:
        yield process.start()
    finally:
        process.kill()


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return int(response.status), response.read()


def test_the_installed_broker_serves_share_groups_and_its_console(broker: BrokerProcess) -> None:
    topic, group = topic_name("wheel"), topic_name("wheel-group")
    create_topic(broker.bootstrap, topic)
    share_group(broker.bootstrap, group)
    values = [b"wheel-%d" % i for i in range(RECORDS)]
    produce_values(broker.bootstrap, topic, values)

    received: list[bytes] = []
    consumer = share_consumer(broker.bootstrap, group, [topic])
    try:
        poll_until(
            [consumer],
            lambda: len(received) >= RECORDS,
            on_message=lambda _i, m: received.append(m.value()),
            what=f"{RECORDS} records from the installed broker",
        )
    finally:
        close_all([consumer])
    assert sorted(received) == sorted(values)

    url = metrics_url(broker, timeout_s=START_TIMEOUT_S)
    samples = scrape(url)
    messages_in = "kafka_server_brokertopicmetrics_messagesin_total"
    assert value(samples, messages_in, {"topic": topic}) == RECORDS
    status, page = _get(f"{url}/console/")
    assert status == 200
    assert b"static/console.js" in page
    static = PACKAGE / "server" / "observability" / "console" / "static"
    for asset in sorted(static.iterdir()):
        status, body = _get(f"{url}/console/static/{asset.name}")
        assert (status, body) == (200, asset.read_bytes()), asset.name

    assert broker.stop(timeout_s=60.0) == 0
    assert broker.wait_for_log(r"shutdown complete", timeout_s=10.0) is not None
