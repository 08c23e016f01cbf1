"""The documentation's examples, run against a real broker.

Every fenced code block of README.md and docs/tutorials/*.md whose fence line is
immediately preceded by a line `<!-- docs-test -->` is run, in page order, against a
fresh `shoal serve` from the `brokers` fixture (one broker per page):

- a ```python block with this test venv's python, a ```sh or ```bash block with
  `bash -euo pipefail` (the venv's bin first on PATH, so `shoal` and `python` are
  this checkout's; PYTHONPATH is inherited);
- each block in its own process, one after another, in a scratch directory shared by
  the page's blocks: a block may depend on what earlier blocks of its page did to the
  broker (topics, groups, records) or left in that directory, not on their variables;
- with every `localhost:9092` and `127.0.0.1:9092` in the block replaced by the
  broker's address;
- each bounded by BLOCK_TIMEOUT_S; a block fails the test when it exits non-zero or
  times out, and the failure names the page, the block's line and its output.

The broker gets the `--override KEY=VALUE` settings the page's own `shoal serve`
commands give (so a tutorial that lowers a lock floor runs against a broker that did),
except those naming a fixed host port (DROPPED_OVERRIDES: the page's HTTP listener).

README.md and every tutorial must have marked blocks, except the tutorials in NOT_RUN
(each with its reason). A marker that is not directly above a fence of a runnable language fails
the test: it would otherwise silently test nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.broker import Brokers

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- docs-test -->"
RUNNERS = {"python": "python", "sh": "sh", "bash": "sh"}
"""Fence language -> how the block is run."""
NOT_RUN = {
    "docs/tutorials/spark-pipeline.md": "each run starts a Spark JVM (about 25 s)",
    "docs/tutorials/securing.md": "its broker runs from a TLS config file and new certificates",
    "docs/tutorials/outgrowing.md": "it needs a Kafka cluster and MirrorMaker 2",
}
"""Tutorials whose examples this test does not run, and why; every other page must have
marked blocks."""
DOCUMENTED_ADDRESSES = ("localhost:9092", "127.0.0.1:9092")
DROPPED_OVERRIDES = frozenset({"metrics.listener"})
BLOCK_TIMEOUT_S = 60.0
_FENCE = re.compile(r"^```(\w*)\s*$")
_OVERRIDE = re.compile(r"--override\s+([\w.\-]+=\S+)")


@dataclass(frozen=True, slots=True)
class Block:
    """One marked code block: its language, body and 1-based line of its fence."""

    language: str
    body: str
    line: int


def pages() -> list[str]:
    tutorials = (REPO / "docs/tutorials").glob("*.md")
    return ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in tutorials)]


def code_blocks(text: str) -> list[tuple[str, str, int, bool]]:
    """Every fenced block of `text`: (language, body, fence line, marked)."""
    lines = text.splitlines()
    blocks: list[tuple[str, str, int, bool]] = []
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        start = index
        index += 1
        while index < len(lines) and lines[index].rstrip() != "```":
            index += 1
        marked = start > 0 and lines[start - 1].strip() == MARKER
        body = "\n".join(lines[start + 1 : index]) + "\n"
        blocks.append((opened.group(1), body, start + 1, marked))
        index += 1
    return blocks


def marked_blocks(text: str) -> list[Block]:
    """The marked blocks of a page, in order; a stray marker is an error."""
    blocks = code_blocks(text)
    fence_lines = {line for _, _, line, _ in blocks}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() == MARKER and number + 1 not in fence_lines:
            raise AssertionError(f"line {number}: {MARKER} is not directly above a code fence")
    out = []
    for language, body, line, marked in blocks:
        if not marked:
            continue
        if language not in RUNNERS:
            raise AssertionError(f"line {line}: a marked block of language {language!r} cannot run")
        out.append(Block(RUNNERS[language], body, line))
    return out


def serve_overrides(text: str) -> list[str]:
    """The `--override` settings of the page's `shoal serve` commands."""
    found: list[str] = []
    for language, body, _, _ in code_blocks(text):
        if language in RUNNERS and "shoal serve" in body:
            for setting in _OVERRIDE.findall(body):
                if setting.split("=", 1)[0] not in DROPPED_OVERRIDES and setting not in found:
                    found.append(setting)
    return found


def run_block(block: Block, bootstrap: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    """Run one block against `bootstrap` in `workdir`; never raises on its failure."""
    body = block.body
    for address in DOCUMENTED_ADDRESSES:
        body = body.replace(address, bootstrap)
    script = workdir / f"block-{block.line}.{'py' if block.language == 'python' else 'sh'}"
    script.write_text(body, encoding="utf-8")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    if block.language == "python":
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", str(script)]
    try:
        return subprocess.run(
            command,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        err = expired.stderr.decode() if isinstance(expired.stderr, bytes) else expired.stderr
        return subprocess.CompletedProcess(
            command, -1, out or "", f"{err or ''}\ntimed out after {BLOCK_TIMEOUT_S} s"
        )


@pytest.mark.parametrize("page", pages())
def test_marked_examples_run(page: str, brokers: Brokers, tmp_path: Path) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    blocks = marked_blocks(text)
    if page in NOT_RUN:
        assert not blocks, f"{page} has {MARKER} blocks but is in NOT_RUN"
        pytest.skip(f"{page} is not run: {NOT_RUN[page]}")
    assert blocks, f"{page} has no {MARKER} block"
    broker = brokers.start(*serve_overrides(text))
    workdir = tmp_path / "work"
    workdir.mkdir()
    for block in blocks:
        done = run_block(block, broker.bootstrap, workdir)
        assert done.returncode == 0, (
            f"{page}, the {block.language} block at line {block.line}, exit {done.returncode}\n"
            f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )


def test_a_failing_block_fails(tmp_path: Path) -> None:
    """The runner reports a block that breaks (so a broken example cannot pass), a
    stray marker is refused, and the documented address is replaced."""
    page = (
        "<!-- docs-test -->\n```python\nprint('localhost:9092')\n```\n"
        "<!-- docs-test -->\n```sh\nshoal --version\nexit 3\n```\n"
    )
    first, second = marked_blocks(page)
    done = run_block(first, "127.0.0.1:1", tmp_path)
    assert (done.returncode, done.stdout) == (0, "127.0.0.1:1\n")
    done = run_block(second, "127.0.0.1:1", tmp_path)
    assert done.returncode == 3
    assert done.stdout.startswith("shoal "), done.stdout
    with pytest.raises(AssertionError, match="not directly above"):
        marked_blocks("<!-- docs-test -->\n\n```python\npass\n```\n")
    assert serve_overrides(
        "```sh\nshoal serve --override a.b=1 \\\n    --override metrics.listener=http://x:1\n```\n"
    ) == ["a.b=1"]
