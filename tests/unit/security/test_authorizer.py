"""StandardAuthorizer: Kafka's documented decisions, filters, authorize_any, and a
property against a brute-force model of StandardAuthorizerData."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.security.acl import (
    AclOperation,
    Action,
    KafkaPrincipal,
    PatternType,
    PermissionType,
    ResourceType,
)
from shoal.security.authorizer import (
    MATCH_ALL,
    AclBinding,
    AclBindingFilter,
    StandardAuthorizer,
    parse_super_users,
)

Op, RT, PT, Perm = AclOperation, ResourceType, PatternType, PermissionType
ALICE = KafkaPrincipal("User", "alice")
BOB = KafkaPrincipal("User", "bob")
HOST = "10.0.0.1"


def acl(
    name: str,
    op: AclOperation = Op.READ,
    perm: PermissionType = Perm.ALLOW,
    *,
    rt: ResourceType = RT.TOPIC,
    pattern: PatternType = PT.LITERAL,
    principal: str = "User:alice",
    host: str = "*",
) -> AclBinding:
    return AclBinding(rt, name, pattern, principal, host, op, perm)


def allowed(
    authorizer: StandardAuthorizer,
    op: AclOperation,
    name: str,
    *,
    rt: ResourceType = RT.TOPIC,
    who: KafkaPrincipal = ALICE,
    host: str = HOST,
) -> bool:
    return authorizer.authorize(who, host, Action(op, rt, name))


# ---- Kafka's documented cases
CASES = [
    # (acls, operation, topic, principal, host, expected, why)
    ([], Op.READ, "t", ALICE, HOST, False, "no ACL: denied by default"),
    ([acl("t")], Op.READ, "t", ALICE, HOST, True, "literal allow"),
    ([acl("t")], Op.READ, "t2", ALICE, HOST, False, "literal is exact"),
    ([acl("t")], Op.READ, "t", BOB, HOST, False, "other principal"),
    ([acl("t", principal="User:*")], Op.READ, "t", BOB, HOST, True, "User:* wildcard"),
    ([acl("t", principal="Group:*")], Op.READ, "t", BOB, HOST, False, "only User:* is wild"),
    ([acl("*")], Op.READ, "anything", ALICE, HOST, True, "literal * matches every name"),
    ([acl("t", host=HOST)], Op.READ, "t", ALICE, HOST, True, "host match"),
    ([acl("t", host="10.0.0.2")], Op.READ, "t", ALICE, HOST, False, "other host"),
    ([acl("pay", pattern=PT.PREFIXED)], Op.READ, "payments", ALICE, HOST, True, "prefix"),
    ([acl("pay", pattern=PT.PREFIXED)], Op.READ, "pay", ALICE, HOST, True, "prefix = name"),
    ([acl("pay", pattern=PT.PREFIXED)], Op.READ, "pa", ALICE, HOST, False, "longer prefix"),
    ([acl("pay", pattern=PT.PREFIXED)], Op.READ, "xpay", ALICE, HOST, False, "not a prefix"),
    ([acl("*", pattern=PT.PREFIXED)], Op.READ, "t", ALICE, HOST, False, "prefixed * is literal"),
    (
        [acl("t"), acl("t", perm=Perm.DENY)],
        Op.READ,
        "t",
        ALICE,
        HOST,
        False,
        "deny beats allow",
    ),
    (
        [acl("t"), acl("t", Op.ALL, Perm.DENY)],
        Op.READ,
        "t",
        ALICE,
        HOST,
        False,
        "deny ALL denies every operation",
    ),
    (
        [acl("*"), acl("secret", perm=Perm.DENY)],
        Op.READ,
        "secret",
        ALICE,
        HOST,
        False,
        "literal deny beats wildcard allow",
    ),
    (
        [acl("t"), acl("t", perm=Perm.DENY, principal="User:*")],
        Op.READ,
        "t",
        ALICE,
        HOST,
        False,
        "wildcard-principal deny",
    ),
    (
        [acl("t"), acl("t", perm=Perm.DENY, host="10.0.0.2")],
        Op.READ,
        "t",
        ALICE,
        HOST,
        True,
        "deny for another host does not apply",
    ),
    (
        [acl("payments"), acl("pay", perm=Perm.DENY, pattern=PT.PREFIXED)],
        Op.READ,
        "payments",
        ALICE,
        HOST,
        False,
        "prefixed deny beats literal allow",
    ),
    ([acl("t", Op.ALL)], Op.WRITE, "t", ALICE, HOST, True, "ALL allows everything"),
    ([acl("t", Op.READ)], Op.DESCRIBE, "t", ALICE, HOST, True, "READ implies DESCRIBE"),
    ([acl("t", Op.WRITE)], Op.DESCRIBE, "t", ALICE, HOST, True, "WRITE implies DESCRIBE"),
    ([acl("t", Op.DELETE)], Op.DESCRIBE, "t", ALICE, HOST, True, "DELETE implies DESCRIBE"),
    ([acl("t", Op.ALTER)], Op.DESCRIBE, "t", ALICE, HOST, True, "ALTER implies DESCRIBE"),
    ([acl("t", Op.CREATE)], Op.DESCRIBE, "t", ALICE, HOST, False, "CREATE does not"),
    ([acl("t", Op.DESCRIBE)], Op.READ, "t", ALICE, HOST, False, "no implication upward"),
    (
        [acl("t", Op.ALTER_CONFIGS)],
        Op.DESCRIBE_CONFIGS,
        "t",
        ALICE,
        HOST,
        True,
        "ALTER_CONFIGS implies DESCRIBE_CONFIGS",
    ),
    (
        [acl("t", Op.READ), acl("t", Op.READ, Perm.DENY)],
        Op.DESCRIBE,
        "t",
        ALICE,
        HOST,
        True,
        "a DENY READ does not deny DESCRIBE",
    ),
    (
        [acl("t", Op.READ), acl("t", Op.DESCRIBE, Perm.DENY)],
        Op.DESCRIBE,
        "t",
        ALICE,
        HOST,
        False,
        "DENY DESCRIBE denies DESCRIBE",
    ),
    ([acl("t", Op.WRITE)], Op.READ, "t", ALICE, HOST, False, "other operation"),
]


@pytest.mark.parametrize(
    ("acls", "op", "topic", "who", "host", "expected"),
    [case[:6] for case in CASES],
    ids=[case[6] for case in CASES],
)
def test_kafka_cases(
    acls: list[AclBinding],
    op: AclOperation,
    topic: str,
    who: KafkaPrincipal,
    host: str,
    expected: bool,
) -> None:
    authorizer = StandardAuthorizer(acls=acls)
    assert allowed(authorizer, op, topic, who=who, host=host) is expected


def test_resource_types_do_not_mix() -> None:
    authorizer = StandardAuthorizer(acls=[acl("x", rt=RT.GROUP)])
    assert allowed(authorizer, Op.READ, "x", rt=RT.GROUP)
    assert not allowed(authorizer, Op.READ, "x", rt=RT.TOPIC)


def test_super_users_are_always_allowed_even_against_deny() -> None:
    authorizer = StandardAuthorizer(
        super_users=parse_super_users(" User:admin ; User:ops;"),
        acls=[acl("t", Op.ALL, Perm.DENY, principal="User:*")],
    )
    admin = KafkaPrincipal("User", "admin")
    assert allowed(authorizer, Op.WRITE, "t", who=admin)
    assert allowed(authorizer, Op.ALTER, "kafka-cluster", rt=RT.CLUSTER, who=admin)
    assert not allowed(authorizer, Op.WRITE, "t")
    assert parse_super_users("") == frozenset()


def test_allow_everyone_only_when_no_acl_names_the_resource() -> None:
    authorizer = StandardAuthorizer(
        allow_everyone_if_no_acl_found=True,
        acls=[
            acl("owned", principal="User:bob"),
            acl("pre", pattern=PT.PREFIXED, principal="User:bob"),
        ],
    )
    assert allowed(authorizer, Op.WRITE, "free")
    assert not allowed(authorizer, Op.READ, "owned"), "an ACL for bob names it"
    assert not allowed(authorizer, Op.READ, "prefix-covered"), "bob's prefixed ACL names it"
    authorizer.add([acl("*", Op.DESCRIBE, principal="User:carol")])
    assert not allowed(authorizer, Op.WRITE, "free"), "the wildcard ACL names every topic"


# ---- authorize_any (authorizeByResourceType)
def any_allowed(acls: list[AclBinding], op: AclOperation = Op.WRITE, **kw: object) -> bool:
    authorizer = StandardAuthorizer(acls=acls, **kw)  # type: ignore[arg-type]
    return authorizer.authorize_any(ALICE, HOST, op, RT.TOPIC)


def test_authorize_any_cases() -> None:
    assert not any_allowed([])
    assert any_allowed([], allow_everyone_if_no_acl_found=True)
    assert any_allowed([], super_users={"User:alice"})
    assert any_allowed([acl("t", Op.WRITE)])
    assert any_allowed([acl("t", Op.ALL)])
    assert not any_allowed([acl("t", Op.READ)]), "no implied operations"
    assert not any_allowed([acl("t", Op.WRITE, host="1.2.3.4")])
    assert any_allowed([acl("*", Op.WRITE)])
    assert not any_allowed([acl("*", Op.WRITE), acl("*", Op.WRITE, Perm.DENY)])
    assert not any_allowed([acl("t", Op.WRITE), acl("*", Op.ALL, Perm.DENY)])
    assert not any_allowed([acl("t", Op.WRITE), acl("t", Op.WRITE, Perm.DENY)])
    assert any_allowed([acl("t", Op.WRITE), acl("u", Op.WRITE, Perm.DENY)])
    # prefixed denies cover literal and prefixed allows that start with them
    deny_pre = acl("fo", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED)
    assert not any_allowed([acl("foo", Op.WRITE), deny_pre])
    assert not any_allowed([acl("foo", Op.WRITE, pattern=PT.PREFIXED), deny_pre])
    assert any_allowed([acl("f", Op.WRITE, pattern=PT.PREFIXED), deny_pre]), "f* is wider"
    assert any_allowed([acl("bar", Op.WRITE), deny_pre])
    # a literal deny never covers a prefixed allow (Kafka's algorithm)
    assert any_allowed([acl("foo", Op.WRITE, pattern=PT.PREFIXED), acl("foo", Op.WRITE, Perm.DENY)])
    # the "hardcode" probe: a prefixed allow on "hard" passes before the scan
    assert (
        any_allowed(
            [
                acl("hard", Op.WRITE, pattern=PT.PREFIXED),
                acl("h", Op.WRITE, Perm.DENY, pattern=PT.PREFIXED),
            ]
        )
        is False
    ), "the prefixed deny on h covers the probe and the allow"

    # ... and the probe applies implied operations, which the scan does not
    assert any_allowed([acl("hard", Op.READ, pattern=PT.PREFIXED)], Op.DESCRIBE)
    assert not any_allowed([acl("soft", Op.READ, pattern=PT.PREFIXED)], Op.DESCRIBE)


# ---- the set and filters
def test_add_remove_keep_index_consistent() -> None:
    a = acl("pay", pattern=PT.PREFIXED)
    b = acl("pax", pattern=PT.PREFIXED)
    authorizer = StandardAuthorizer(acls=[a, b, a])
    assert len(authorizer) == 2
    authorizer.remove([a])
    assert not allowed(authorizer, Op.READ, "payments")
    assert allowed(authorizer, Op.READ, "paxos")
    authorizer.remove([b, b])
    assert len(authorizer) == 0 and not allowed(authorizer, Op.READ, "paxos")
    authorizer.add([a])
    assert allowed(authorizer, Op.READ, "payments")


def test_filters_follow_kafka_pattern_semantics() -> None:
    lit = acl("payments")
    wild = acl("*")
    pre = acl("pay", pattern=PT.PREFIXED)
    other = acl("pay", rt=RT.GROUP)
    authorizer = StandardAuthorizer(acls=[lit, wild, pre, other])

    def names(f: AclBindingFilter) -> set[AclBinding]:
        return set(authorizer.acls(f))

    assert names(MATCH_ALL) == {lit, wild, pre, other}
    assert names(AclBindingFilter(resource_type=RT.TOPIC)) == {lit, wild, pre}
    assert names(AclBindingFilter(name="pay")) == {pre, other}, "ANY: exact names"
    assert names(AclBindingFilter(name="pay", pattern_type=PT.LITERAL)) == {other}
    assert names(AclBindingFilter(name="pay", pattern_type=PT.PREFIXED)) == {pre}
    assert names(
        AclBindingFilter(resource_type=RT.TOPIC, name="payments", pattern_type=PT.MATCH)
    ) == {lit, wild, pre}
    assert names(AclBindingFilter(pattern_type=PT.MATCH)) == {lit, wild, pre, other}
    assert names(AclBindingFilter(principal="User:bob")) == set()
    assert names(AclBindingFilter(operation=Op.WRITE)) == set()
    assert names(AclBindingFilter(permission=Perm.DENY)) == set()
    assert AclBindingFilter(pattern_type=PT.UNKNOWN).problem() is not None
    assert AclBindingFilter(operation=Op.UNKNOWN).problem() is not None
    assert MATCH_ALL.problem() is None


@pytest.mark.parametrize(
    ("binding", "fragment"),
    [
        (acl("t", rt=RT.ANY), "resourceType"),
        (acl("t", pattern=PT.MATCH), "patternType"),
        (acl("t", pattern=PT.ANY), "patternType"),
        (acl("t", Op.ANY), "operation"),
        (acl("t", perm=Perm.ANY), "permissionType"),
        (acl(""), "empty"),
        (acl("other", rt=RT.CLUSTER, op=Op.ALTER), "kafka-cluster"),
        (acl("t", principal="alice"), "colon"),
    ],
)
def test_invalid_bindings(binding: AclBinding, fragment: str) -> None:
    problem = binding.problem()
    assert problem is not None and fragment in problem
    with pytest.raises(AssertionError):
        StandardAuthorizer(acls=[binding])


# ---- property: the index agrees with a brute-force model of Kafka's rules
def model_authorize(
    acls: list[AclBinding],
    super_users: set[str],
    everyone: bool,
    who: str,
    host: str,
    action: Action,
) -> bool:
    if who in super_users:
        return True
    implied = {
        Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
        Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS},
    }.get(action.operation, set())
    on_resource = [
        a
        for a in acls
        if a.resource_type == action.resource_type
        and (
            (a.pattern_type == PT.LITERAL and a.name in (action.name, "*"))
            or (a.pattern_type == PT.PREFIXED and action.name.startswith(a.name))
        )
    ]
    applying = [a for a in on_resource if a.principal in (who, "User:*") and a.host in (host, "*")]
    if any(
        a.permission == Perm.DENY and a.operation in (Op.ALL, action.operation) for a in applying
    ):
        return False
    if any(
        a.permission == Perm.ALLOW and a.operation in {Op.ALL, action.operation} | implied
        for a in applying
    ):
        return True
    return everyone and not on_resource


NAMES = st.sampled_from(["a", "ab", "abc", "b", "*", "ba", "h"])
OPS = st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.ALTER_CONFIGS])
BINDINGS = st.builds(
    AclBinding,
    st.sampled_from([RT.TOPIC, RT.GROUP]),
    NAMES,
    st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "h1", "h2"]),
    OPS,
    st.sampled_from([Perm.ALLOW, Perm.DENY]),
)


@settings(max_examples=300, deadline=None)
@given(
    acls=st.lists(BINDINGS, max_size=12),
    removed=st.lists(BINDINGS, max_size=4),
    everyone=st.booleans(),
    super_alice=st.booleans(),
    who=st.sampled_from(["User:alice", "User:bob"]),
    host=st.sampled_from(["h1", "h2"]),
    rt=st.sampled_from([RT.TOPIC, RT.GROUP]),
    name=st.sampled_from(["a", "ab", "abc", "abd", "b", "ba", "c", "*"]),
    op=st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.DESCRIBE_CONFIGS]),
)
def test_authorize_agrees_with_brute_force_model(
    acls: list[AclBinding],
    removed: list[AclBinding],
    everyone: bool,
    super_alice: bool,
    who: str,
    host: str,
    rt: ResourceType,
    name: str,
    op: AclOperation,
) -> None:
    supers = {"User:alice"} if super_alice else set()
    authorizer = StandardAuthorizer(
        super_users=supers, allow_everyone_if_no_acl_found=everyone, acls=acls
    )
    authorizer.remove(removed)
    remaining = sorted(set(acls) - set(removed))
    assert authorizer.acls() == remaining
    action = Action(op, rt, name)
    principal = KafkaPrincipal.parse(who)
    expected = model_authorize(remaining, supers, everyone, who, host, action)
    assert authorizer.authorize(principal, host, action) is expected


@settings(max_examples=200, deadline=None)
@given(acls=st.lists(BINDINGS, max_size=10), name=NAMES, pattern=st.sampled_from(list(PT)[1:]))
def test_filter_match_of_a_name_lists_the_bindings_that_apply(
    acls: list[AclBinding], name: str, pattern: PatternType
) -> None:
    """MATCH filters list exactly the bindings `authorize` would consider."""
    authorizer = StandardAuthorizer(acls=acls)
    found = authorizer.acls(
        AclBindingFilter(resource_type=RT.TOPIC, name=name, pattern_type=PT.MATCH)
    )
    expected = [
        a
        for a in sorted(set(acls))
        if a.resource_type == RT.TOPIC
        and (
            (a.pattern_type == PT.LITERAL and a.name in (name, "*"))
            or (a.pattern_type == PT.PREFIXED and name.startswith(a.name))
        )
    ]
    assert found == expected
    assert authorizer.acls(AclBindingFilter(name=name, pattern_type=pattern)) == [
        a
        for a in sorted(set(acls))
        if (
            pattern is PT.MATCH
            and (a.name in (name, "*") if a.pattern_type == PT.LITERAL else name.startswith(a.name))
        )
        or (pattern is PT.ANY and a.name == name)
        or (a.pattern_type == pattern and a.name == name)
    ]


def model_authorize_any(
    acls: list[AclBinding], super_users: set[str], everyone: bool, who: str, host: str,
    op: AclOperation, rt: ResourceType,
) -> bool:  # fmt: skip
    """Kafka's Authorizer.authorizeByResourceType, step by step over every binding."""
    if model_authorize(acls, super_users, everyone, who, host, Action(op, rt, "hardcode")):
        return True
    deny: dict[PatternType, set[str]] = {PT.LITERAL: set(), PT.PREFIXED: set()}
    allow: dict[PatternType, set[str]] = {PT.LITERAL: set(), PT.PREFIXED: set()}
    wildcard_allow = False
    for a in acls:
        if a.resource_type != rt or a.host not in (host, "*") or a.principal not in (who, "User:*"):
            continue
        if a.operation not in (op, Op.ALL):
            continue
        if a.permission == Perm.DENY:
            if a.pattern_type == PT.LITERAL and a.name == "*":
                return False
            deny[a.pattern_type].add(a.name)
        elif a.pattern_type == PT.LITERAL and a.name == "*":
            wildcard_allow = True
        else:
            allow[a.pattern_type].add(a.name)
    if wildcard_allow:
        return True
    for pattern, names in allow.items():
        for name in names:
            if pattern == PT.LITERAL and name in deny[PT.LITERAL]:
                continue
            if not any(name[:i] in deny[PT.PREFIXED] for i in range(1, len(name) + 1)):
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(
    acls=st.lists(BINDINGS, max_size=12),
    everyone=st.booleans(),
    who=st.sampled_from(["User:alice", "User:bob"]),
    host=st.sampled_from(["h1", "h2"]),
    rt=st.sampled_from([RT.TOPIC, RT.GROUP]),
    op=st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER]),
)
def test_authorize_any_agrees_with_kafkas_algorithm(
    acls: list[AclBinding],
    everyone: bool,
    who: str,
    host: str,
    rt: ResourceType,
    op: AclOperation,
) -> None:
    authorizer = StandardAuthorizer(allow_everyone_if_no_acl_found=everyone, acls=acls)
    expected = model_authorize_any(sorted(set(acls)), set(), everyone, who, host, op, rt)
    assert authorizer.authorize_any(KafkaPrincipal.parse(who), host, op, rt) is expected


def test_authorize_any_answers_follow_changes_and_the_memory_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    authorizer = StandardAuthorizer()
    assert not authorizer.authorize_any(ALICE, HOST, Op.WRITE, RT.TOPIC)
    authorizer.add([acl("t", Op.WRITE)])
    assert authorizer.authorize_any(ALICE, HOST, Op.WRITE, RT.TOPIC), "add forgets answers"
    authorizer.remove([acl("t", Op.WRITE)])
    assert not authorizer.authorize_any(ALICE, HOST, Op.WRITE, RT.TOPIC), "so does remove"
    monkeypatch.setattr("shoal.security.authorizer.AUTHORIZE_ANY_CACHE_MAX", 3)
    for i in range(10):
        authorizer.authorize_any(ALICE, f"10.0.0.{i}", Op.WRITE, RT.TOPIC)
        assert len(authorizer._any_answers) <= 3
