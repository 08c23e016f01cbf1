"""Redis, the side-by-side benchmark's third broker: installed by this module, run on loopback.

Redis Streams is the queue a Python team would most often pick instead of a Kafka share
group; bench/peers/redis_streams.py runs the benchmark's workloads on it and this module
owns the server.

- `install()` puts Debian's Redis (`REDIS_VERSION`) under the cache
  (`$SHOAL_KAFKA_CACHE` or ~/.cache/shoal, see tests/support/kafka_reference.cache_root)
  in `redis-<version>/root`, once, without root and without touching the system:
  `apt-get download` fetches the .deb files of redis-server, redis-tools and the two
  libraries it links (libjemalloc2, liblzf1) into a scratch directory and
  `dpkg-deb -x` unpacks them. A file lock keeps two installers apart, as
  kafka_reference.install_pom does. The binary runs with LD_LIBRARY_PATH on the
  unpacked libraries. Debian's archive keeps only its newest revision of a release;
  if that is no longer `REDIS_VERSION` the install stops and says so (update the
  constant deliberately: a benchmark names the version it measured).
- `RedisRunner(data_dir)` is the benchmark's Runner for Redis (the protocol of
  bench/peers/runners.py): `start()` spawns `redis-server` with a config file written
  beside the data directory and returns the seconds from spawn to its first answered
  request, polled as runners.py's `FirstAnswer` polls (a PING answered PONG; Redis
  answers -LOADING while it replays its log, which does not count), `stop()` is
  SIGTERM (Redis fsyncs its log and exits), `kill()` SIGKILL (a crash), `rss_bytes()`
  and `cpu_seconds()` read /proc. It restarts on the same data directory and port.

Durability, chosen to be comparable to a broker's: the append-only file is on
(`appendonly yes`) and fsynced once a second (`appendfsync everysec`), as Kafka's and
Shoal's acks=all writes are not fsynced per request on one node either. It is weaker
than theirs against a crash of the process: Kafka and Shoal answer once the record is
in the page cache, which a kill -9 does not lose, while Redis answers once the entry is
in its own AOF buffer, and with `everysec` it postpones writing that buffer to the file
(for up to 2 s) while a background fsync still runs, so a kill -9 loses the
acknowledged entries still in it (ops.recovery reports them: thousands of a 1 GiB
fill were lost in two of four runs on a loaded machine). A power loss costs up to a
second or two of writes in all three. RDB
snapshots and automatic AOF rewrites are off (`save ""`,
`auto-aof-rewrite-percentage 0`): both fork the server in the background, which would
land at random inside timed runs, and without rewrites the AOF is a plain log replayed
whole on start, as a broker's log is recovered. The server listens on 127.0.0.1 only
(`bind 127.0.0.1`, `protected-mode yes`), on a free port; its `dir` is `data_dir`.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support import processes
from tests.support.kafka_reference import cache_root, free_port

from bench.peers.runners import START_TIMEOUT_S, FirstAnswer, Measured

REDIS_VERSION = "7.0.15"
"""The Redis release the benchmark runs: Debian 12's (bookworm's) redis-server."""
PACKAGES = ("redis-server", "redis-tools", "libjemalloc2", "liblzf1")
"""The Debian packages unpacked: the server (a link to redis-check-rdb, which redis-tools
ships) and the libraries it links that a minimal system may lack."""
INSTALL_TIMEOUT_S = 300.0
ANSWER_TIMEOUT_S = 2.0
"""How long one polling connection waits for its PING's answer before a new one."""
_PING = b"*1\r\n$4\r\nPING\r\n"


class RedisUnavailable(RuntimeError):
    """apt-get or dpkg-deb is missing, or the archive no longer has `REDIS_VERSION`."""


def cache_dir() -> Path:
    return cache_root() / f"redis-{REDIS_VERSION}"


def install() -> Path:
    """The root of the unpacked packages (its usr/bin/redis-server), unpacking them first
    if the cache lacks them."""
    home = cache_dir()
    root = home / "root"
    stamp = home / "installed"
    if _read(stamp) == REDIS_VERSION and (root / "usr" / "bin" / "redis-server").exists():
        return root
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise RedisUnavailable("apt-get and dpkg-deb are needed to install Redis")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(stamp) == REDIS_VERSION and (root / "usr" / "bin" / "redis-server").exists():
            return root
        staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=home))
        try:
            _unpack(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        shutil.rmtree(root, ignore_errors=True)
        (staging / "root").rename(root)
        shutil.rmtree(staging, ignore_errors=True)
        stamp.write_text(REDIS_VERSION)
    return root


def _unpack(staging: Path) -> None:
    debs = staging / "debs"
    debs.mkdir()
    fetched = _run(["apt-get", "download", *PACKAGES], cwd=debs)
    if fetched.returncode != 0:
        raise RedisUnavailable(
            f"apt-get download {' '.join(PACKAGES)} failed (the package lists may need "
            f"`apt-get update`):\n{fetched.stdout}{fetched.stderr}"
        )
    for deb in sorted(debs.glob("*.deb")):
        if deb.name.startswith("redis-server_"):
            version = _run(["dpkg-deb", "-f", str(deb), "Version"]).stdout.strip()
            if upstream_version(version) != REDIS_VERSION:
                raise RedisUnavailable(
                    f"the archive has redis-server {version}, not {REDIS_VERSION}: "
                    "update REDIS_VERSION in bench/peers/redis.py"
                )
        unpacked = _run(["dpkg-deb", "-x", str(deb), str(staging / "root")])
        if unpacked.returncode != 0:
            raise RedisUnavailable(f"dpkg-deb -x {deb.name} failed:\n{unpacked.stderr}")


def upstream_version(debian_version: str) -> str:
    """The upstream part of a Debian version: `5:7.0.15-1~deb12u10` -> `7.0.15`."""
    without_epoch = debian_version.partition(":")[2] or debian_version
    return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def server_command(root: Path) -> tuple[list[str], dict[str, str]]:
    """The redis-server binary under `root` and the environment that finds its libraries."""
    libs = sorted({str(lib.parent) for lib in root.glob("usr/lib/*/libjemalloc.so.2")})
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*libs, *filter(None, [env.get("LD_LIBRARY_PATH")])])
    return [str(root / "usr" / "bin" / "redis-server")], env


def config_text(data_dir: Path, port: int, log_path: Path) -> str:
    """redis.conf for a benchmark server (the module's docstring says why each line)."""
    lines = {
        "bind": "127.0.0.1",
        "protected-mode": "yes",
        "port": str(port),
        "dir": str(data_dir),
        "daemonize": "no",
        "logfile": str(log_path),
        "appendonly": "yes",
        "appendfsync": "everysec",
        "save": '""',
        "auto-aof-rewrite-percentage": "0",
    }
    return "".join(f"{key} {value}\n" for key, value in lines.items())


class RedisRunner(Measured):
    """A Redis server on loopback, its data in `data_dir` (see the module's docstring)."""

    name = "redis"

    def __init__(self, data_dir: Path, *, port: int = 0) -> None:
        self.data_dir = data_dir
        self.port = port
        self.config_path = data_dir.parent / f"{data_dir.name}-redis.conf"
        self.log_path = data_dir.parent / f"{data_dir.name}-redis.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, "never started"
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> float:
        """Spawn the server and wait for its PONG; returns the seconds from spawn to it."""
        assert not self.alive, "already running"
        command, env = server_command(install())
        if self.port == 0:
            self.port = free_port()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(config_text(self.data_dir, self.port, self.log_path))
        poller = FirstAnswer(self.address, answered=pong)
        spawned = time.monotonic()
        self.process = subprocess.Popen(
            [*command, str(self.config_path)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = spawned + START_TIMEOUT_S
        while poller.at is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                poller.cancel()
                self.kill()
                raise RuntimeError(f"Redis did not start; log:\n{self.log_text()[-8000:]}")
            time.sleep(0.01)  # the poller keeps the time of the answer
        return poller.at - spawned

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout_s: float = 60.0) -> None:
        """SIGTERM: Redis fsyncs its AOF and exits."""
        processes.stop(self.process, timeout_s)

    def kill(self) -> None:
        """SIGKILL: a crash; nothing is flushed."""
        processes.kill(self.process)

    def version(self) -> str:
        command, env = server_command(install())
        out = subprocess.run(
            [*command, "--version"], env=env, capture_output=True, text=True, check=False
        )
        return out.stdout.strip()


def pong(address: str) -> bool:
    """Whether the server at `address` answers PING with PONG now (not -LOADING, not
    refused)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=ANSWER_TIMEOUT_S) as conn:
            conn.sendall(_PING)
            return conn.recv(64).startswith(b"+PONG")
    except OSError:
        return False
