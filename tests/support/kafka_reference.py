"""Apache Kafka 4.2 as the reference broker: installed from Maven Central, run on loopback.

Kafka is the judge of Shoal's behaviour (docs/design/differential.md): the differential tests
run the same clients against both. This module is test support, never part of Shoal.

- `install()` resolves the broker, its tools and Java clients (`tests/reference/pom.xml`)
  into a cache outside the repository (`$SHOAL_KAFKA_CACHE`, else
  `~/.cache/shoal/kafka-<version>`), once; later calls reuse it. A file lock keeps two
  test workers from installing at the same time. `install_pom()` does the same for
  another pom of the tests (Spark's Kafka connector: tests/spark/kafka_connector.py;
  MirrorMaker 2: tests/ecosystem/mm2/pom.xml), `classpath(libs)` joins its jars and
  `java_command(..., class_path=)` runs a main class on them.
- `KafkaBroker` formats and starts a single-node KRaft broker (combined broker and
  controller) on free loopback ports, with the overrides a test gives, and stops it by
  its PID (SIGTERM, or SIGKILL for a crash). Its defaults are the tests' (a small C1
  JVM, no retention pass while a test runs); `jvm_options=START_SCRIPT_JVM_OPTIONS,
  test_properties=False` is Kafka as its own start scripts run it (bench/peers/).
- `KafkaBroker(..., sasl=SaslListener(...))` adds a SASL_PLAINTEXT listener (its
  address: `sasl_bootstrap`) with PLAIN users from its JAAS config, SCRAM users added
  when the storage is formatted (`kafka-storage format --add-scram`), and optionally
  the StandardAuthorizer with super users, as Shoal's SASL and ACL tests configure it.
- `run_tool()` runs one of Kafka's command-line tools by its script name.
- `compile_java()` compiles test programs against the reference's jars (or, `libs=`,
  another `install_pom`'s: tests/ecosystem/jvm.py) into a cache directory keyed by a
  hash of their source; `JavaSession` keeps one JVM running Kafka's
  tools and those programs one after another (tests/support/java/ToolRunner.java), so a
  test module pays for one JVM start rather than one per tool run.
- `python -m tests.support.kafka_reference serve` starts one for a person
  (`scripts/kafka-reference`).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import processes

_POM = Path(__file__).resolve().parent.parent / "reference" / "pom.xml"
_VERSION = re.compile(r"<kafka\.version>([^<]+)</kafka\.version>")
KAFKA_VERSION = _VERSION.search(_POM.read_text(encoding="utf-8")).group(1)  # type: ignore[union-attr]
"""The Kafka release the reference broker runs (its latest 4.2 patch), read from the pom."""

START_TIMEOUT_S = 90.0
"""How long a reference broker may take to answer after its JVM starts (about 5 s here)."""
INSTALL_TIMEOUT_S = 900.0
"""Maven's first resolution of the ~90 jars (about 60 MB)."""
HEAP = "-Xmx768m"
"""The reference broker's JVM heap: enough for a test's topics, small beside Shoal's."""
TEST_JVM_OPTIONS = (HEAP, "-XX:TieredStopAtLevel=1")
"""The tests' broker JVM: a small heap and the C1 compiler only (a faster start)."""
START_SCRIPT_JVM_OPTIONS = (
    # kafka-server-start.sh's KAFKA_HEAP_OPTS
    "-Xmx1G",
    "-Xms1G",
    # kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
"""The JVM a user's `kafka-server-start.sh` runs the broker in (the benchmark's peer)."""

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-share-consumer-perf-test": "org.apache.kafka.tools.ShareConsumerPerformance",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
}
"""Kafka's scripts by name, and the main class each runs."""

_LOG4J2 = """\
Configuration:
  Appenders:
    Console:
      name: STDOUT
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: {level}
      AppenderRef:
        - ref: STDOUT
"""


class ReferenceUnavailable(RuntimeError):
    """Java or Maven is missing, or Maven could not resolve Kafka (offline)."""


def cache_root() -> Path:
    """Where the tests' Maven resolutions live: `$SHOAL_KAFKA_CACHE`, else ~/.cache/shoal."""
    root = os.environ.get("SHOAL_KAFKA_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "shoal"


def cache_dir() -> Path:
    return cache_root() / f"kafka-{KAFKA_VERSION}"


def java_tools_present() -> bool:
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def install() -> Path:
    """The directory of the reference's jars, resolving them first if the cache lacks them."""
    return install_pom(_POM, cache_dir(), what=f"Kafka {KAFKA_VERSION}")


def install_pom(pom: Path, home: Path, *, what: str) -> Path:
    """`home`/libs: the dependencies `pom` names (transitively), copied there by Maven once;
    later calls reuse them until the pom changes (its hash is the stamp). A file lock in
    `home` keeps two test workers from resolving at the same time."""
    if not java_tools_present():
        raise ReferenceUnavailable(f"java and mvn are needed for {what}")
    libs = home / "libs"
    stamp = home / "installed"
    want = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    if _read(stamp) == want and libs.is_dir():
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(stamp) == want and libs.is_dir():
            return libs
        staging = Path(tempfile.mkdtemp(prefix="libs-", dir=home))
        done = subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={staging}",
            ],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise ReferenceUnavailable(
                f"maven could not resolve {what}:\n{done.stdout}{done.stderr}"
            )
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        stamp.write_text(want)
    return libs


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def classpath(libs: Path | None = None) -> str:
    """The jars of `libs` (an `install_pom` result; by default the reference's) as a
    Java classpath."""
    return os.pathsep.join(str(jar) for jar in sorted((libs or install()).glob("*.jar")))


def _log_config(level: str) -> Path:
    path = cache_dir() / f"log4j2-{level.lower()}.yaml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_LOG4J2.format(level=level))
    return path


def java_command(
    main_class: str,
    *args: str,
    heap: str = "-Xmx256m",
    log_level: str = "WARN",
    class_path: str | None = None,
) -> list[str]:
    """The command line that runs `main_class` on `class_path` (by default the
    reference's)."""
    return [
        "java",
        heap,
        "-XX:TieredStopAtLevel=1",
        f"-Dlog4j2.configurationFile={_log_config(log_level)}",
        "-cp",
        class_path if class_path is not None else classpath(),
        main_class,
        *args,
    ]


def run_tool(
    name: str, *args: str, timeout_s: float = 120.0, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run Kafka's tool `name` (a script name of `TOOLS`) and return what it printed."""
    return subprocess.run(
        java_command(TOOLS[name], *args),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        input=input_text,
        check=False,
    )


_TOOL_RUNNER = Path(__file__).resolve().parent / "java" / "ToolRunner.java"
_RESULT = re.compile(rb"@@RESULT (-?\d+) (\d+) (\d+)\n")


def compile_java(*sources: Path, libs: Path | None = None) -> Path:
    """A directory of `sources` compiled against the jars of `libs` (an `install_pom`
    result; by default the reference's): under the cache, named by a hash of the sources
    (and the pom, or the jars), compiled once; a file lock keeps two test workers from
    compiling the same sources at once."""
    class_path = classpath(libs)
    digest = hashlib.sha256(_POM.read_bytes() if libs is None else class_path.encode())
    for source in sorted(sources):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    root = cache_dir() / "classes"
    done = root / digest.hexdigest()[:16]
    if done.is_dir():
        return done
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "compile.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_dir():
            return done
        staging = Path(tempfile.mkdtemp(prefix="javac-", dir=root))
        compiled = subprocess.run(
            ["javac", "-cp", class_path, "-d", str(staging), *map(str, sources)],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
        if compiled.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"javac failed:\n{compiled.stdout}{compiled.stderr}")
        staging.rename(done)
    return done


class JavaSession:
    """One JVM on the reference's classpath (plus the Java source files `programs`,
    compiled together by `compile_java`) that runs main classes one at a time:
    `run(main_class, *args)`, or `tool(name, *args)` for a script of `TOOLS`. Each
    answer is what that run printed and its exit status, as `run_tool` would return
    it. Its log4j output (WARN and above) goes to `log_path`. Arguments may not hold
    tabs or newlines; a run's stdin is not the tool's (use `run_tool` for tools that
    read it). A tool that calls System.exit itself ends the session (argparse4j does on
    arguments it cannot parse, as kafka-cluster's); the next run then raises."""

    def __init__(self, log_path: Path, *programs: Path, heap: str = "-Xmx384m") -> None:
        paths = [str(compile_java(_TOOL_RUNNER, *programs)), classpath()]
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 -- closed by close()
        self.process = subprocess.Popen(
            [
                "java",
                heap,
                "-XX:TieredStopAtLevel=1",
                f"-Dlog4j2.configurationFile={_log_config('WARN')}",
                "-cp",
                os.pathsep.join(paths),
                "ToolRunner",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._lock = threading.Lock()

    def tool(
        self, name: str, *args: str, timeout_s: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        return self.run(TOOLS[name], *args, timeout_s=timeout_s)

    def run(
        self, main_class: str, *args: str, timeout_s: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        line = "\t".join((main_class, *args))
        assert "\n" not in line and line.count("\t") == len(args), args
        with self._lock:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(line.encode() + b"\n")
            self.process.stdin.flush()
            timer = threading.Timer(timeout_s, self.process.kill)
            timer.start()
            try:
                header = self.process.stdout.readline()
                match = _RESULT.fullmatch(header)
                if match is None:
                    raise RuntimeError(
                        f"{main_class} {args}: no answer ({header!r}); JVM log:\n"
                        + self.log_path.read_text(errors="replace")[-8000:]
                    )
                status, out_len, err_len = (int(g) for g in match.groups())
                out = self.process.stdout.read(out_len)
                err = self.process.stdout.read(err_len)
            finally:
                timer.cancel()
        return subprocess.CompletedProcess(
            [main_class, *args],
            status,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
        )

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class SaslListener:
    """A SASL_PLAINTEXT listener beside the PLAINTEXT one (which stays the inter-broker
    listener, its principal User:ANONYMOUS).

    `plain_users` go into the listener's PlainLoginModule JAAS config (`user_<name>`);
    `scram_users` get a credential for each SCRAM mechanism enabled, added when the
    storage is formatted. With `authorizer` the StandardAuthorizer is on and
    `super_users` (plus User:ANONYMOUS, for the controller and PLAINTEXT listeners)
    are super users; `allow_everyone` is `allow.everyone.if.no.acl.found`.
    """

    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    plain_users: Mapping[str, str] = field(default_factory=dict)
    scram_users: Mapping[str, str] = field(default_factory=dict)
    authorizer: bool = False
    super_users: tuple[str, ...] = ()
    allow_everyone: bool = False
    failed_authentication_delay_ms: int = 50

    def properties(self, port: int) -> dict[str, str]:
        props = {
            "sasl.enabled.mechanisms": ",".join(self.mechanisms),
            "connection.failed.authentication.delay.ms": str(self.failed_authentication_delay_ms),
        }
        users = " ".join(f'user_{u}="{pw}"' for u, pw in self.plain_users.items())
        props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
            f"{PLAIN_LOGIN} required {users};"
        )
        for mechanism in self.mechanisms:
            if mechanism.startswith("SCRAM-"):
                props[f"listener.name.sasl_plaintext.{mechanism.lower()}.sasl.jaas.config"] = (
                    f"{SCRAM_LOGIN} required;"
                )
        if self.authorizer:
            props["authorizer.class.name"] = STANDARD_AUTHORIZER
            props["super.users"] = ";".join(("User:ANONYMOUS", *self.super_users))
            props["allow.everyone.if.no.acl.found"] = str(self.allow_everyone).lower()
        return props

    def format_args(self) -> list[str]:
        """`kafka-storage format` arguments adding the SCRAM users."""
        args: list[str] = []
        for mechanism in self.mechanisms:
            if mechanism.startswith("SCRAM-"):
                for user, password in self.scram_users.items():
                    args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        return args


class KafkaBroker:
    """A single-node KRaft Kafka on loopback, its data in `data_dir`."""

    def __init__(
        self,
        data_dir: Path,
        *,
        overrides: Sequence[str] = (),
        port: int = 0,
        log_path: Path | None = None,
        sasl: SaslListener | None = None,
        jvm_options: Sequence[str] = TEST_JVM_OPTIONS,
        test_properties: bool = True,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.data_dir = data_dir
        self.overrides = list(overrides)
        self.jvm_options = list(jvm_options)
        self.test_properties = test_properties
        self.start_timeout_s = start_timeout_s
        self.spawned_at = 0.0
        """time.monotonic() just before the last start's JVM was spawned."""
        self.port = port
        self.controller_port = 0
        self.sasl = sasl
        self.sasl_port = 0
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}-kafka.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._lines: list[str] = []
        self._ready = threading.Event()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        """The SASL_PLAINTEXT listener's address (a broker started with `sasl`)."""
        assert self.sasl is not None, "no SASL listener"
        return f"127.0.0.1:{self.sasl_port}"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data_dir),
            # What a single node needs (Kafka's own config/server.properties sets these).
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        if self.test_properties:
            # No retention pass while a test runs (the first would come 30 s after
            # start): tests write batches stamped in 2023, which a pass would delete.
            props["log.initial.task.delay.ms"] = "3600000"
            props["log.retention.check.interval.ms"] = "3600000"
        if self.sasl is not None:
            props["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            props["advertised.listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
            props.update(self.sasl.properties(self.sasl_port))
        for item in self.overrides:
            key, _, value = item.partition("=")
            props[key] = value
        return props

    def start(self) -> KafkaBroker:
        assert self.process is None or self.process.poll() is not None, "already running"
        first = self.port == 0
        if first:
            self.port = free_port()
            self.controller_port = free_port()
            if self.sasl is not None:
                self.sasl_port = free_port()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir.parent / f"{self.data_dir.name}-server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        if not (self.data_dir / "meta.properties").exists():
            formatted = subprocess.run(
                java_command(
                    TOOLS["kafka-storage"],
                    "format",
                    # one argument: an id starting with "-" would read as an option
                    f"--cluster-id={_cluster_id()}",
                    "-c",
                    str(config),
                    "--standalone",
                    *(self.sasl.format_args() if self.sasl is not None else ()),
                ),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if formatted.returncode != 0:
                raise RuntimeError(f"kafka-storage format failed:\n{formatted.stderr}")
        self._ready.clear()
        self.spawned_at = time.monotonic()
        self.process = subprocess.Popen(
            [
                "java",
                *self.jvm_options,
                f"-Dlog4j2.configurationFile={_log_config('INFO')}",
                "-cp",
                classpath(),
                "kafka.Kafka",
                str(config),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout_s
        while not self._ready.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"Kafka did not start; log:\n{self.log_text()[-8000:]}")
        return self

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        with open(self.log_path, "a", encoding="utf-8") as sink:
            for raw in process.stderr:
                line = raw.decode("utf-8", "replace")
                sink.write(line)
                self._lines.append(line)
                if "Kafka Server started" in line:
                    self._ready.set()
        process.stderr.close()

    def log_text(self) -> str:
        return "".join(self._lines)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: a crash."""
        processes.kill(self.process)

    def stop(self, timeout_s: float = 60.0) -> None:
        """SIGTERM and wait for Kafka's controlled shutdown."""
        processes.stop(self.process, timeout_s)

    def restart(self) -> KafkaBroker:
        self.kill()
        return self.start()


def _cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@contextlib.contextmanager
def running(
    data_dir: Path, *overrides: str, sasl: SaslListener | None = None
) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(data_dir, overrides=overrides, sasl=sasl).start()
    try:
        yield broker
    finally:
        broker.kill()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka-reference",
        description=f"Apache Kafka {KAFKA_VERSION}, the reference broker (test support).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="resolve Kafka's jars into the cache and print where")
    serve = sub.add_parser("serve", help="run a single-node KRaft broker until Ctrl-C")
    serve.add_argument("--port", type=int, default=19092)
    serve.add_argument("--data-dir", type=Path, default=Path("kafka-reference-data"))
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    tool = sub.add_parser("tool", help="run one of Kafka's tools, e.g. kafka-topics")
    tool.add_argument("name", choices=sorted(TOOLS))
    tool.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "install":
        print(install())
        return 0
    if args.command == "tool":
        return subprocess.call(java_command(TOOLS[args.name], *args.args))
    broker = KafkaBroker(args.data_dir.resolve(), overrides=args.override, port=args.port)
    broker.controller_port = free_port()
    broker.start()
    print(f"Kafka {KAFKA_VERSION} listening on {broker.bootstrap} (pid {broker.process.pid})")  # type: ignore[union-attr]
    try:
        assert broker.process is not None
        broker.process.wait()
    except KeyboardInterrupt:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
