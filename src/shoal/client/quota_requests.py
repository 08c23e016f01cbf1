"""Request builders for client quota administration: DescribeClientQuotas (48) and
AlterClientQuotas (49), v0-v1.

An entity is a sequence of (entity type, name) pairs, the name None for the default
entity (`<default>` in the CLI). A filter component is (entity type, match type,
name): match type 0 = exactly that name, 1 = the default entity, 2 = any name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shoal.client.calls import Call
from shoal.protocol.schema import Schema, request_schema

API_DESCRIBE_CLIENT_QUOTAS = 48
API_ALTER_CLIENT_QUOTAS = 49
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

QuotaEntity = Sequence[tuple[str, str | None]]


def _call(api_key: int, build: Any) -> Call:
    return Call(api_key, 0, 1, lambda version: build(request_schema(api_key, version)))


def describe_client_quotas(
    components: Sequence[tuple[str, int, str | None]], *, strict: bool = False
) -> Call:
    def build(s: Schema) -> Any:
        return s.make(
            "DescribeClientQuotasRequest",
            components=tuple(
                s.make("ComponentData", entity_type=kind, match_type=match_type, match=name)
                for kind, match_type, name in components
            ),
            strict=strict,
        )

    return _call(API_DESCRIBE_CLIENT_QUOTAS, build)


def alter_client_quotas(
    entries: Sequence[tuple[QuotaEntity, Mapping[str, float | None]]],
    *,
    validate_only: bool = False,
) -> Call:
    """Each entry: the entity and its changes, key -> new value (None removes it)."""

    def build(s: Schema) -> Any:
        return s.make(
            "AlterClientQuotasRequest",
            entries=tuple(
                s.make(
                    "EntryData",
                    entity=tuple(
                        s.make("EntityData", entity_type=kind, entity_name=name)
                        for kind, name in entity
                    ),
                    ops=tuple(
                        s.make("OpData", key=key, value=value or 0.0, remove=value is None)
                        for key, value in changes.items()
                    ),
                )
                for entity, changes in entries
            ),
            validate_only=validate_only,
        )

    return _call(API_ALTER_CLIENT_QUOTAS, build)
