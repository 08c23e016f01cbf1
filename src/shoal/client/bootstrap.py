"""Broker addresses: `bootstrap.servers` parsing and the `Node` every driver connects to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Node:
    """A broker address, with its node id when known (-1 for a bootstrap address)."""

    host: str
    port: int
    node_id: int = -1

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def key(self) -> tuple[str, int]:
        """Connections are kept per address, whatever the node id."""
        return (self.host, self.port)


def parse_bootstrap(text: str) -> list[Node]:
    """`HOST:PORT[,HOST:PORT...]` (IPv6 hosts in brackets) as nodes; ValueError names the
    item that is wrong."""
    nodes = []
    for raw in text.split(","):
        item = raw.strip()
        host, sep, port = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"invalid bootstrap server {item!r}: expected HOST:PORT")
        nodes.append(Node(host, int(port)))
    return nodes
