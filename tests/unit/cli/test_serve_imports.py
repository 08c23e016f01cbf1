"""What `shoal serve` imports before its broker answers (docs/performance/startup.md): none of the
client tools, and no library that only TLS handshakes, SASL/OAUTHBEARER tokens or the
metrics listener use. A fresh interpreter, since the test process has them all."""

from __future__ import annotations

import json
import subprocess
import sys

NOT_AT_START = (
    "shoal.client",
    "shoal.cli.topics",
    "shoal.cli.acls",
    "shoal.cli.share_groups",
    "shoal.cli.console_consumer",
    "jwt",
    "cryptography",
    "uvicorn",
    "click",
    "starlette",
)

PROBE = """
import json, sys
from shoal.cli.main import _without_hypothesis, build_parser
_without_hypothesis()
args = build_parser("serve").parse_args(["serve", "--port", "0"])
from shoal.server.broker import run_broker  # what serve's run imports next
print(json.dumps(sorted(sys.modules)))
"""


def test_serve_loads_neither_the_tools_nor_the_optional_libraries() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded = set(json.loads(out))
    assert "shoal.server.broker" in loaded and "shoal.cli.serve" in loaded
    present = sorted(
        name for name in loaded if any(name == m or name.startswith(m + ".") for m in NOT_AT_START)
    )
    assert present == []


def test_the_full_parser_still_has_every_tool() -> None:
    from shoal.cli.main import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"serve", "topics", "acls", "configs", "share-groups", "consumer-groups"} <= set(
        commands
    )
    assert list(build_parser("serve")._subparsers._group_actions[0].choices) == ["serve"]  # type: ignore[union-attr]
