"""ssl.principal.mapping.rules, on the examples of Kafka's own SslPrincipalMapper tests."""

from __future__ import annotations

import pytest

from shoal.security.principal_mapping import InvalidRules, NoMatchingRule, PrincipalMapper

KAFKA_RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, "
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, "
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, "
    "DEFAULT"
)


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules_parse(rules: str) -> None:
    assert PrincipalMapper.parse(rules).rules


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT/L",
        "DEFAUL",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/L",
        "RULE:CN=(.*?),OU=ServiceUsers.*/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/LU",
    ],
)
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(InvalidRules):
        PrincipalMapper.parse(rules)


@pytest.mark.parametrize(
    ("dn", "name"),
    [
        ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
        ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
        ("cn=duke,ou=assembly,dc=meo,dc=com", "DUKE@ASSEMBLY"),
        ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
        ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),
    ],
)
def test_kafka_examples_map(dn: str, name: str) -> None:
    assert PrincipalMapper.parse(KAFKA_RULES).name(dn) == name


def test_default_is_the_dn_itself() -> None:
    assert PrincipalMapper.parse(None).name("CN=alice,O=shoal") == "CN=alice,O=shoal"


def test_escaped_comma_and_whitespace() -> None:
    mapper = PrincipalMapper.parse(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz") == r"Tkac\, Adam"


def test_back_reference_to_a_missing_group_stays_literal() -> None:
    mapper = PrincipalMapper.parse("RULE:^CN=(.*?),O=(.*)$/$1@$3/")
    assert mapper.name("CN=a,O=b") == "a@$3"


def test_two_digit_reference_falls_back_to_one_digit() -> None:
    mapper = PrincipalMapper.parse("RULE:^CN=(.*?),O=(.*)$/$12/")
    assert mapper.name("CN=a,O=b") == "a2"


def test_no_rule_applies() -> None:
    mapper = PrincipalMapper.parse("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule):
        mapper.name("CN=alice,O=shoal")
