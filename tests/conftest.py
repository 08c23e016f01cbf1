"""Shared fixtures: a real broker process per test module, or per test.

Two settings for speed, neither changing what a test checks:
- compiled modules are cached even where PYTHONDONTWRITEBYTECODE is set: the suite starts
  hundreds of Python processes (brokers, tools, clients), each of which would otherwise
  compile Shoal's sources again, and each pytest worker its test modules (about 15 s of
  CPU per worker for the collection alone). `__pycache__` is git-ignored.
- temporary directories (brokers' data directories among them) are on /dev/shm when it
  is a tmpfs with room (`_SHM_FREE_BYTES_MIN`) and neither TMPDIR nor
  PYTEST_DEBUG_TEMPROOT says otherwise: a broker's fsyncs (about 1,100 to create its
  internal topics' 100 partitions) cost nothing there, several ms each on the VM's
  disk. A SIGKILL loses nothing on either, as a crash of the process keeps what was
  written; the full-disk test mounts a tmpfs of its own.

Hypothesis runs under one of three profiles, chosen by HYPOTHESIS_PROFILE (pytest's
--hypothesis-profile wins over it):
- `ci` (the default, so scripts/test and .ci/run use it): derandomised (the examples
  follow from each test's own code, so a run fails or passes the same way every time),
  at most 100 examples per test, no deadline (a busy machine's slow example is not a
  failure) and no example database;
- `dev`: random exploration, 100 examples, no deadline, remembering failures in
  .hypothesis/ (`HYPOTHESIS_PROFILE=dev scripts/test tests/unit` looks for new cases);
- `nightly`: random, 5,000 examples per test, no deadline.
Tests that set their own `max_examples` keep it under every profile.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.broker import BrokerProcess, running

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

HYPOTHESIS_PROFILE_DEFAULT = "ci"
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", derandomize=False, max_examples=100, deadline=None)
settings.register_profile(
    "nightly",
    derandomize=False,
    max_examples=5_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# loaded before any test module is imported: settings(...) objects made at import
# take their unset values from the profile loaded then
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or HYPOTHESIS_PROFILE_DEFAULT)

_SHM = "/dev/shm"
_SHM_FREE_BYTES_MIN = 4 << 30
"""Free space /dev/shm must have to hold the suite's temporary data (a full run writes
a few hundred MB; a container's default 64 MB /dev/shm would fill up: then the
default temporary directory is kept)."""


def _is_tmpfs(path: str) -> bool:
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            return any(line.split()[1:3] == [path, "tmpfs"] for line in mounts)
    except OSError:
        return False


if (
    not os.environ.get("TMPDIR")
    and not os.environ.get("PYTEST_DEBUG_TEMPROOT")
    and _is_tmpfs(_SHM)
    and os.access(_SHM, os.W_OK)
    and shutil.disk_usage(_SHM).free >= _SHM_FREE_BYTES_MIN
):
    tempfile.tempdir = _SHM  # pytest's base temporary directory follows tempfile's


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole test module (tests use distinct topic names)."""
    yield from running(tmp_path_factory.mktemp("broker") / "data")


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for tests that restart or crash it."""
    yield from running(tmp_path / "data")
