"""The broker's group configs (share, consumer and streams keys): the one store the
admin handlers change and the group coordinator and the share-partitions read
(docs/configs.md).

- `GroupConfigStore` holds the current `GroupConfigs` (group/configs.py, pure) and the
  change listeners. `overrides(group_id)` is the lookup the group coordinator takes as
  `group_configs=` and the share-partitions resolve with their broker settings;
  `effective(group_id)` resolves every key against the broker's *current* config, so
  a later change of broker bounds clamps values set earlier (§3.3). `alter(group_id,
  proposed)` validates a group's full proposed set, persists it, adopts it, then calls
  each listener with the group id; a refused or unpersistable change changes nothing.
- `GroupConfigFile` is the persistence: `group-configs.json` in the data directory,
  replaced atomically off the event loop (the broker's `DiskIO.write_atomic`). It sits
  behind the two-method `GroupConfigPersistence` protocol so it can move onto an
  internal topic later.

`alter` is called in the broker's change lane (`DiskIO.changes`), one change at a time;
a reader meanwhile (a share-partition, DescribeConfigs) sees the configs before it.

File format: {"version": 1, "groups": {"<group id>": {"<key>": "<value as Kafka shows
it>"}}}. On load each value is re-parsed with its key's definition; an entry that no
longer parses (a key Shoal dropped, a changed fixed bound) is skipped with a warning,
as persisted dynamic broker configs are. Broker ranges are not re-checked on load:
values set earlier are clamped instead. An unreadable file stops start-up (OSError)
rather than silently reverting every group to the defaults.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from shoal.config import BrokerConfig
from shoal.group.configs import (
    GroupConfigError,
    GroupConfigs,
    parse_override,
    render_overrides,
    validate_overrides,
)
from shoal.log.fileio import read_file
from shoal.server.disk_io import AtomicWrite

log = logging.getLogger(__name__)

GROUP_CONFIGS_FILE = "group-configs.json"
_FORMAT_VERSION = 1

GroupConfigListener = Callable[[str], None]
"""Called with a group id after that group's configs changed (and were persisted)."""


class GroupConfigPersistence(Protocol):
    def load(self) -> GroupConfigs:
        """The persisted configs (empty if none); raises OSError if unreadable."""
        ...

    async def save(self, configs: GroupConfigs) -> None:
        """Persist `configs` durably and atomically; raises OSError."""
        ...


class GroupConfigFile:
    """`group-configs.json` in a data directory (see the module docstring)."""

    def __init__(self, data_dir: Path, *, write: AtomicWrite) -> None:
        self.path = data_dir / GROUP_CONFIGS_FILE
        self._write = write

    def load(self) -> GroupConfigs:
        data = read_file(self.path)
        if data is None:
            return GroupConfigs()
        try:
            document = json.loads(data)
            version, groups = document["version"], document["groups"]
            if version != _FORMAT_VERSION or not isinstance(groups, dict):
                raise ValueError(f"unsupported version {version!r} or malformed groups")
        except (ValueError, KeyError, TypeError) as exc:
            raise OSError(f"{self.path} is unreadable: {exc}") from exc
        return GroupConfigs(
            {
                str(group_id): _parse_stored(str(group_id), raw)
                for group_id, raw in groups.items()
                if group_id
            }
        )

    async def save(self, configs: GroupConfigs) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "groups": {group_id: render_overrides(o) for group_id, o in configs.items()},
        }
        text = json.dumps(document, indent=1, sort_keys=True) + "\n"
        await self._write(self.path, text.encode("utf-8"))


def _parse_stored(group_id: str, raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
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
    """The current share-group configs, their persistence and their listeners."""

    def __init__(
        self,
        *,
        persistence: GroupConfigPersistence,
        broker_config: Callable[[], BrokerConfig],
    ) -> None:
        """Loads the persisted configs (raises OSError if unreadable). `broker_config`
        gives the broker's current (dynamic) config, read at each use."""
        self._persistence = persistence
        self._broker_config = broker_config
        self._configs = persistence.load()
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
        await self._persistence.save(updated)
        self._configs = updated
        self._notify(group_id)
        return typed

    def _notify(self, group_id: str) -> None:
        for listener in list(self.listeners):
            try:
                listener(group_id)
            except Exception:  # the change is durable; one bad listener must not undo it
                log.exception("group config listener %r failed for group %r", listener, group_id)
