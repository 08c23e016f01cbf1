"""Request builders for SCRAM credential administration:
DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), both v0.

`upsertion` salts the password client side, as Kafka's admin client does: the broker
receives the salt, the iterations and the salted password, never the password.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shoal.client.calls import Call
from shoal.protocol.schema import Schema, request_schema
from shoal.security.scram import MECHANISMS, salted_password

API_DESCRIBE_USER_SCRAM_CREDENTIALS = 50
API_ALTER_USER_SCRAM_CREDENTIALS = 51
SALT_BYTES = 32


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    user: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes


def upsertion(
    user: str, mechanism: str, password: str, *, iterations: int, salt: bytes
) -> ScramUpsertion:
    """A credential for `user`; `salt` is fresh randomness given by the caller."""
    scram = MECHANISMS[mechanism]
    return ScramUpsertion(
        user, mechanism, iterations, salt, salted_password(scram, password, salt, iterations)
    )


def _call(api_key: int, build: Any) -> Call:
    return Call(api_key, 0, 0, lambda version: build(request_schema(api_key, version)))


def describe_user_scram_credentials(users: Sequence[str] | None) -> Call:
    """Every user with credentials when `users` is None or empty."""

    def build(s: Schema) -> Any:
        names = tuple(s.make("UserName", name=u) for u in users or ())
        return s.make("DescribeUserScramCredentialsRequest", users=names or None)

    return _call(API_DESCRIBE_USER_SCRAM_CREDENTIALS, build)


def alter_user_scram_credentials(
    *, upsertions: Sequence[ScramUpsertion] = (), deletions: Sequence[tuple[str, str]] = ()
) -> Call:
    """`deletions` are (user, mechanism name) pairs."""

    def build(s: Schema) -> Any:
        return s.make(
            "AlterUserScramCredentialsRequest",
            deletions=tuple(
                s.make("ScramCredentialDeletion", name=u, mechanism=MECHANISMS[m].type_id)
                for u, m in deletions
            ),
            upsertions=tuple(
                s.make(
                    "ScramCredentialUpsertion",
                    name=u.user,
                    mechanism=MECHANISMS[u.mechanism].type_id,
                    iterations=u.iterations,
                    salt=u.salt,
                    salted_password=u.salted_password,
                )
                for u in upsertions
            ),
        )

    return _call(API_ALTER_USER_SCRAM_CREDENTIALS, build)
