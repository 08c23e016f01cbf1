"""`shoal serve`: run the broker with a properties file and overrides.

Precedence, lowest first: built-in defaults, `--config FILE`, `--override KEY=VALUE`
(repeatable), then the explicit flags `--host`, `--port`, `--data-dir`, `--node-id`.
`--host`/`--port` move the first of `listeners` (the only one by default).
An unknown key or an out-of-range value stops start-up with a message naming the key
and exit status 2. A data directory another process holds (its `.lock`,
server/services/data_dir_lock.py) stops start-up with a message naming the directory and the
holder's PID, and exit status 1; so does a data directory of another node or cluster
(its `meta.properties`), without a traceback.

With the environment variable SHOAL_PROFILE=PATH the broker runs under cProfile and
writes its statistics to PATH when it stops (for benchmarks; cProfile slows it down).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import logging
import os
import sys
from pathlib import Path
from typing import Any

from shoal.cli.versions import add_version_option
from shoal.config import BrokerConfig, ConfigError, broker_keys

log = logging.getLogger("shoal")
PROFILE_ENV = "SHOAL_PROFILE"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("serve", help="run the broker", description=__doc__)
    # Kafka's kafka-server-start.sh takes --version too (kafka.Kafka's getPropsFromArgs).
    add_version_option(parser)
    parser.add_argument("--host", default=None, help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="listen port (default 9092)")
    parser.add_argument("--data-dir", default=None, help="data directory (default ./shoal-data)")
    parser.add_argument("--node-id", type=int, default=None, help="node id (default 1)")
    parser.add_argument("--config", type=Path, default=None, help="server.properties file")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config key (repeatable)",
    )
    parser.set_defaults(run=run)


def _overrides(args: argparse.Namespace) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(item, "--override takes KEY=VALUE")
        overrides[key.strip()] = value.strip()
    if args.data_dir is not None:
        overrides[broker_keys.LOG_DIRS.name] = args.data_dir
    if args.node_id is not None:
        overrides[broker_keys.NODE_ID.name] = str(args.node_id)
    return overrides


def _first_listener_moved(config: BrokerConfig, host: str | None, port: int | None) -> str:
    """`listeners` with the first listener's address replaced by `--host`/`--port` (its
    name and the other listeners kept): the flags keep meaning "the" listener."""
    listeners = list(config.get(broker_keys.LISTENERS))
    name = listeners[0].split("://", 1)[0]
    old_host, old_port = config.listener
    new_host = host if host is not None else old_host
    bracketed = f"[{new_host}]" if ":" in new_host else new_host
    listeners[0] = f"{name}://{bracketed}:{port if port is not None else old_port}"
    return ",".join(listeners)


def _collect_again() -> None:
    """Resume cyclic collection after start-up. What start-up made (about 80,000
    objects, all but ~1,500 of them alive: the cycles the imports left) is first moved
    to the permanent generation, as the warm-up's `gc.freeze` would move it later:
    otherwise the first collection would walk all of it at once, a pause of tens of
    milliseconds just when the first requests arrive (docs/performance/startup.md)."""
    gc.freeze()
    gc.enable()


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )


def run(args: argparse.Namespace) -> int:
    try:
        overrides = _overrides(args)
        config = BrokerConfig.load(file=args.config, overrides=overrides)
        if args.host is not None or args.port is not None:
            overrides[broker_keys.LISTENERS.name] = _first_listener_moved(
                config, args.host, args.port
            )
            config = BrokerConfig.load(file=args.config, overrides=overrides)
    except ConfigError as exc:
        print(f"shoal serve: invalid configuration: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"shoal serve: cannot read config file: {exc}", file=sys.stderr)
        return 2
    configure_logging(config.get(broker_keys.LOG_LEVEL))
    # No cyclic collection while the broker's modules load and its logs open: they only
    # add live objects, and the passes over them were a tenth of the start-up's CPU.
    # Collection resumes once the listeners are bound (`_collect_again`).
    gc.disable()
    from shoal.server.broker import CannotStart, run_broker

    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        log.info("uvloop not available; using the default event loop")
        runner = asyncio.run
    profile_path = os.environ.get(PROFILE_ENV)
    profiler = cProfile.Profile() if profile_path else None
    try:
        if profiler is not None:
            profiler.enable()
        runner(run_broker(config, started=_collect_again))
    except ConfigError as exc:  # e.g. a TLS key store that does not load
        log.error("cannot start: invalid configuration: %s", exc)
        return 2
    except CannotStart as exc:
        log.error("cannot start: %s", exc)
        return 1
    except OSError as exc:
        log.error("cannot start: %s", exc)
        return 1
    finally:
        gc.enable()
        if profiler is not None and profile_path:
            profiler.disable()
            profiler.dump_stats(profile_path)
            log.info("cProfile statistics written to %s", profile_path)
    return 0
