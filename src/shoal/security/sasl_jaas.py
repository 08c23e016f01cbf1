"""Kafka's JAAS config strings (`sasl.jaas.config`), parsed. Sans-I/O.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

One login module per string (Kafka allows exactly one in `sasl.jaas.config`): its class
name, control flag and `key="value"` options (quotes optional for simple values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))')


class JaasError(ValueError):
    """The JAAS string is malformed; the message never includes option values."""


@dataclass(frozen=True, slots=True)
class JaasModule:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def users(self) -> dict[str, str]:
        """PlainLoginModule's `user_<name>="<password>"` options."""
        options = self.options.items()
        return {k.removeprefix("user_"): v for k, v in options if k.startswith("user_")}


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise JaasError(f"unexpected character at offset {position} of the JAAS config")
        quoted, word, equals, semicolon = match.groups()
        if quoted is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", quoted)))
        elif word is not None:
            tokens.append(("word", word))
        elif equals is not None:
            tokens.append(("=", "="))
        elif semicolon is not None:
            tokens.append((";", ";"))
        position = match.end()
    return tokens


def parse_jaas(text: str) -> JaasModule:
    tokens = _tokens(text)
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise JaasError("a JAAS config starts with a login module class and a control flag")
    module, flag = tokens[0][1], tokens[1][1]
    if flag not in FLAGS:
        raise JaasError(f"invalid JAAS control flag {flag!r} (one of {', '.join(FLAGS)})")
    if tokens[-1][0] != ";":
        raise JaasError("a JAAS config must end with ';'")
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise JaasError("JAAS options must be key=value pairs")
    for index in range(0, len(body), 3):
        key, equals, value = body[index : index + 3]
        if key[0] != "word" or equals[0] != "=" or value[0] not in ("word", "value"):
            raise JaasError(f"invalid JAAS option near {key[1]!r}")
        options[key[1]] = value[1]
    return JaasModule(module, flag, options)
