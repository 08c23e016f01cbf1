"""AlterUserScramCredentials (51) v0: add, replace or delete users' SCRAM credentials.

An upsertion carries the client-salted password (Kafka's tools salt it client side);
the broker derives StoredKey and ServerKey and keeps only those (server/metadata/scram_store.py,
in the metadata log).
One change per user and request, as Kafka 4.2's controller takes them; the response
follows the durable write. Errors, with Kafka's messages: UNSUPPORTED_SASL_MECHANISM
(unknown mechanism), UNACCEPTABLE_CREDENTIAL (empty user name, iterations outside
4096-16384), RESOURCE_NOT_FOUND (deleting a credential that does not exist),
DUPLICATE_RESOURCE (a user named twice in one request, whatever the mechanisms),
UNKNOWN_SERVER_ERROR without a message (an empty salted password: Kafka's HMAC
refuses the empty key). An empty salt is accepted, as Kafka accepts it. Needs ALTER on
the cluster (CLUSTER_AUTHORIZATION_FAILED for every user otherwise).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.security.scram import (
    ITERATIONS_MAX,
    ITERATIONS_MIN,
    MECHANISMS_BY_ID,
    credential_from_salted,
)
from shoal.server.context import RequestContext
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.metadata.scram_store import Deletion, ScramStore, Upsertion
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 51
_ZERO = datetime.timedelta(0)
Problem = tuple[ErrorCode, str | None]


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    assert ctx.services.sasl is not None, "the broker wires the SASL service"
    store = ctx.services.sasl.scram
    refusal = cluster_refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        refused_code, refused_message = refusal
        refused = dict.fromkeys(str(c.name) for c in (*request.deletions, *request.upsertions))
        return schema.response(
            throttle_time=_ZERO,
            results=tuple(
                schema.make(
                    "AlterUserScramCredentialsResult",
                    user=user,
                    error_code=refused_code,
                    error_message=refused_message,
                )
                for user in refused
            ),
        )
    return await ctx.services.disk.changes.run(lambda: _alter(schema, store, request))


async def _alter(schema: Schema, store: ScramStore, request: Any) -> Any:
    """Decide and write the changes, in the broker's change lane (a deletion checks the
    credentials every earlier change left). As Kafka's controller decides them
    (ScramControlManager.alterCredentials): deletions first, then upsertions; a user
    named by a second change of any mechanism gets DUPLICATE_RESOURCE and none of its
    changes apply; the answers list the deletions made, the upsertions made, then the
    users refused."""
    deletions: dict[str, Deletion] = {}
    upsertions: dict[str, Upsertion] = {}
    problems: dict[str, Problem] = {}
    for deletion in request.deletions:
        name = str(deletion.name)
        if name in problems:
            continue
        if deletions.pop(name, None) is not None:
            problems[name] = _DUPLICATE
            continue
        problem = _check_name_and_mechanism(name, int(deletion.mechanism))
        if problem is None and store.credential(_mechanism(deletion), name) is None:
            problem = (
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
        if problem is not None:
            problems[name] = problem
        else:
            deletions[name] = Deletion(name, _mechanism(deletion))
    for upsertion in request.upsertions:
        name = str(upsertion.name)
        if name in problems:
            continue
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            problems[name] = _DUPLICATE
            continue
        problem = _check_name_and_mechanism(name, int(upsertion.mechanism)) or _check_upsertion(
            upsertion
        )
        if problem is not None:
            problems[name] = problem
            continue
        if not upsertion.salted_password:  # Kafka's HMAC refuses an empty key
            problems[name] = (ErrorCode.unknown_server_error, None)
            continue
        mechanism = MECHANISMS_BY_ID[int(upsertion.mechanism)]
        credential = credential_from_salted(
            mechanism, bytes(upsertion.salted_password), bytes(upsertion.salt), upsertion.iterations
        )
        upsertions[name] = Upsertion(name, mechanism.name, credential)
    write_problem = await _write(store, list(upsertions.values()), list(deletions.values()))
    outcomes: dict[str, Problem] = {
        user: write_problem or (ErrorCode.none, None) for user in (*deletions, *upsertions)
    }
    results = []
    for user, (code, message) in [*outcomes.items(), *problems.items()]:
        if code is not ErrorCode.none:
            log.info("AlterUserScramCredentials for %r refused: %s (%s)", user, code.name, message)
        results.append(
            schema.make(
                "AlterUserScramCredentialsResult", user=user, error_code=code, error_message=message
            )
        )
    return schema.response(throttle_time=_ZERO, results=tuple(results))


def _mechanism(change: Any) -> str:
    return MECHANISMS_BY_ID[int(change.mechanism)].name


_DUPLICATE: Problem = (
    ErrorCode.duplicate_resource,
    "A user credential cannot be altered twice in the same request",
)


def _check_name_and_mechanism(name: str, mechanism: int) -> Problem | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISMS_BY_ID:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def _check_upsertion(upsertion: Any) -> Problem | None:
    if upsertion.iterations < ITERATIONS_MIN:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if upsertion.iterations > ITERATIONS_MAX:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    return None


async def _write(
    store: ScramStore, upsertions: list[Upsertion], deletions: list[Deletion]
) -> tuple[ErrorCode, str] | None:
    if not upsertions and not deletions:
        return None
    try:
        await store.apply(upsertions=upsertions, deletions=deletions)
    except OSError as exc:
        log.error("writing the SCRAM credentials failed: %s", exc)
        return ErrorCode.unknown_server_error, "The SCRAM credentials could not be stored"
    for upsertion in upsertions:
        log.info("SCRAM credential %s of user %r set", upsertion.mechanism, upsertion.user)
    for deletion in deletions:
        log.info("SCRAM credential %s of user %r deleted", deletion.mechanism, deletion.user)
    return None
