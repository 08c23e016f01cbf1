"""`ssl.principal.mapping.rules`: from a client certificate's subject DN to a user name.

Kafka's SslPrincipalMapper rules, parsed and applied the same way: a comma-separated
list of `DEFAULT` (the DN itself) and `RULE:pattern/replacement/` with an optional `L`
or `U` after the last slash (lower- or upper-case the result). A rule applies when its
pattern matches the whole DN; the replacement (Java syntax: `$1` is group 1, `\\x` is a
literal x) is then substituted for every match. The first rule that applies wins; when
none does, `NoMatchingRule` (Kafka refuses the connection). Sans-I/O: the shell hands
the DN in RFC 2253 form (`CN=alice,OU=eng,O=shoal`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_RULES = "DEFAULT"

# Kafka's rule grammar: `DEFAULT`, or RULE:pattern/replacement/[LU], or anything else
# (which the full-length check below turns into an error).
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class InvalidRules(ValueError):
    """`ssl.principal.mapping.rules` does not parse; the message names the rule."""


class NoMatchingRule(LookupError):
    """No rule applies to a DN."""


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str] | None
    """None: the DEFAULT rule."""
    replacement: str = ""
    to_lower: bool = False
    to_upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        groups = self.pattern.groups
        result = self.pattern.sub(lambda m: _expand(self.replacement, m, groups), dn)
        if self.to_lower:
            return result.lower()
        if self.to_upper:
            return result.upper()
        return result


@dataclass(frozen=True, slots=True)
class PrincipalMapper:
    rules: tuple[Rule, ...]

    @classmethod
    def parse(cls, text: str | None) -> PrincipalMapper:
        """The rules of `text` (None: Kafka's default, `DEFAULT`); `InvalidRules`."""
        rules: list[Rule] = []
        for raw in _split(DEFAULT_RULES if text is None else text):
            match = _PARSER.match(raw)
            if match is None or match.end() != len(raw):
                rest = raw[match.end() :] if match is not None else raw
                raise InvalidRules(f"invalid rule `{raw}`, unmatched substring `{rest}`")
            if match.group(1) is not None:
                rules.append(Rule(None))
            elif match.group(2) is not None:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as exc:
                    raise InvalidRules(f"invalid rule `{raw}`: {exc}") from None
                case = match.group(6)
                rules.append(Rule(pattern, match.group(4), case == "L", case == "U"))
            # an empty rule is ignored, as in Kafka
        return cls(tuple(rules))

    def name(self, dn: str) -> str:
        """The user name for `dn`: the first rule that applies; `NoMatchingRule`."""
        for rule in self.rules:
            mapped = rule.apply(dn)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"no rules apply to {dn}")


def _split(text: str) -> list[str]:
    return [m.group(1) for m in _SPLITTER.finditer(text.strip()) if m.group(1) is not None]


def _expand(replacement: str, match: re.Match[str], groups: int) -> str:
    """Java's replacement syntax: `\\c` is c; `$n` the longest group number that exists
    (a reference to a group that does not exist stays literal, as Kafka escapes it)."""
    out: list[str] = []
    i = 0
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        if char == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            number = int(replacement[i + 1])
            if number > groups or groups == 0:
                out.append(char)
                i += 1
                continue
            j = i + 2
            while j < len(replacement) and replacement[j].isdigit():
                longer = number * 10 + int(replacement[j])
                if longer > groups:
                    break
                number = longer
                j += 1
            out.append(match.group(number) or "")
            i = j
            continue
        out.append(char)
        i += 1
    return "".join(out)
