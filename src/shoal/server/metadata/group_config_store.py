"""The broker's group configs (share, consumer and streams keys): the one store the
admin handlers change and the group coordinator and the share-partitions read
(docs/reference/configs.md).

- `GroupConfigStore` holds the current `GroupConfigs` (group/configs.py, pure) and the
  change listeners. `overrides(group_id)` is the lookup the group coordinator takes as
  `group_configs=` and the share-partitions resolve with their broker settings;
  `effective(group_id)` resolves every key against the broker's *current* config, so
  a later change of broker bounds clamps values set earlier (§3.3). `alter(group_id,
  proposed)` validates a group's full proposed set, persists it, adopts it, then calls
  each listener with the group id; a refused or unpersistable change changes nothing.
- The persistence is the metadata log (server/metadata/metadata_log.py): a group's overrides
  are ConfigRecords of resource type GROUP, the values as Kafka shows them; `alter`
  writes the group's whole new set through the shard (`set_configs`), fsynced before
  it is replayed and adopted.

`alter` is called in the broker's change lane (`DiskIO.changes`), one change at a time;
a reader meanwhile (a share-partition, DescribeConfigs) sees the configs before it.

On load each value is re-parsed with its key's definition; an entry that no longer
parses (a key Shoal dropped, a changed fixed bound) is skipped with a warning, as
persisted dynamic broker configs are. Broker ranges are not re-checked on load: values
set earlier are clamped instead. (Older versions kept `group-configs.json`; the
start-up migration moves it into the log: server/metadata/migration.py.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from shoal.config import BrokerConfig
from shoal.group.configs import (
    GroupConfigError,
    GroupConfigs,
    parse_override,
    render_overrides,
    validate_overrides,
)
from shoal.metadata.records import GROUP_RESOURCE
from shoal.server.metadata.metadata_log import MetadataLog

log = logging.getLogger(__name__)

GroupConfigListener = Callable[[str], None]
"""Called with a group id after that group's configs changed (and were persisted)."""


def parse_stored(group_id: str, raw: object) -> dict[str, Any]:
    """The typed overrides of a group's stored strings, skipping (with a warning) the
    entries that no longer parse."""
    if not isinstance(raw, Mapping):
        log.warning("ignoring persisted configs of group %r: not an object", group_id)
        return {}
    typed: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            typed[key] = parse_override(key, value)
        except GroupConfigError as exc:
            log.warning("ignoring persisted config of group %r: %s", group_id, exc)
    return typed


class GroupConfigStore:
    """The current share-group configs, kept in the metadata log, and their listeners."""

    def __init__(
        self,
        *,
        metadata: MetadataLog,
        broker_config: Callable[[], BrokerConfig],
    ) -> None:
        """Loads the configs of the metadata image. `broker_config` gives the
        broker's current (dynamic) config, read at each use."""
        self._metadata = metadata
        self._broker_config = broker_config
        image = metadata.image
        self._configs = GroupConfigs(
            {
                group_id: parse_stored(group_id, image.config(GROUP_RESOURCE, group_id))
                for group_id in image.config_resources(GROUP_RESOURCE)
                if group_id
            }
        )
        self.listeners: list[GroupConfigListener] = []
        """Called with the group id after each change; add and remove freely."""
        if len(self._configs):
            log.info("share-group configs loaded for %d groups", len(self._configs))

    @property
    def configs(self) -> GroupConfigs:
        return self._configs

    def overrides(self, group_id: str) -> Mapping[str, Any]:
        """The keys `group_id` sets, typed, unclamped (empty if none)."""
        return self._configs.overrides(group_id)

    def effective(self, group_id: str) -> dict[str, Any]:
        """Every share key's value for `group_id` under the current broker config."""
        return self._configs.effective(group_id, self._broker_config())

    def rendered_overrides(self, group_id: str) -> dict[str, str]:
        """The keys `group_id` sets, as the strings Kafka shows."""
        return render_overrides(self.overrides(group_id))

    async def alter(
        self, group_id: str, proposed: Mapping[str, str], *, validate_only: bool = False
    ) -> Mapping[str, Any]:
        """Make `proposed` the whole set of `group_id`'s overrides (a key left out
        falls back to the broker default). Raises GroupConfigError if any value is
        refused and OSError if the change cannot be persisted; nothing changes then.
        With `validate_only` only the validation runs. Returns the typed overrides."""
        assert group_id, "a group id is never empty"
        typed = validate_overrides(proposed, self._broker_config())
        if validate_only or typed == dict(self.overrides(group_id)):
            return typed
        updated = self._configs.with_overrides(group_id, typed)
        shard = self._metadata.shard
        await self._metadata.write(
            shard.set_configs(GROUP_RESOURCE, group_id, render_overrides(typed))
        )
        self._configs = updated
        self._notify(group_id)
        return typed

    def _notify(self, group_id: str) -> None:
        for listener in list(self.listeners):
            try:
                listener(group_id)
            except Exception:  # the change is durable; one bad listener must not undo it
                log.exception("group config listener %r failed for group %r", listener, group_id)
