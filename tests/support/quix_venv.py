"""The virtual environment Quix Streams runs in for the ecosystem tests.

Quix Streams pins confluent-kafka below the version Shoal's own environment has, so it
gets a separate venv under `~/.cache/shoal/quix-venv` (or `$SHOAL_QUIX_VENV`), made
from `tests/ecosystem/quix/requirements.txt` once and reused while that file is
unchanged (a stamp holds the file's hash). A file lock keeps two test workers from
building it at the same time. Test support, never part of Shoal.

`python -m tests.support.quix_venv` builds it and prints its python.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parent.parent / "ecosystem" / "quix" / "requirements.txt"
BUILD_TIMEOUT_S = 900.0
"""pip's first install of Quix Streams and its dependencies (about 40 wheels)."""


class QuixUnavailable(RuntimeError):
    """The venv could not be built (no venv module, or pip could not reach PyPI)."""


def venv_dir() -> Path:
    root = os.environ.get("SHOAL_QUIX_VENV")
    return Path(root) if root else Path.home() / ".cache" / "shoal" / "quix-venv"


def python() -> Path:
    """The venv's python, building the venv first if it is missing or stale."""
    home = venv_dir()
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]
    exe = home / "bin" / "python"
    stamp = home / "installed"
    if _read(stamp) == want and exe.exists():
        return exe
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(stamp) == want and exe.exists():
            return exe
        # Built in place; the stamp, written last, marks it complete.
        shutil.rmtree(home, ignore_errors=True)
        try:
            _build(home)
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            raise
        stamp.write_text(want)
    return exe


def _build(target: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(target)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        raise QuixUnavailable(f"python -m venv failed:\n{made.stderr}")
    done = subprocess.run(
        [
            str(target / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise QuixUnavailable(f"pip could not install Quix Streams:\n{done.stdout}{done.stderr}")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


if __name__ == "__main__":
    print(python())
