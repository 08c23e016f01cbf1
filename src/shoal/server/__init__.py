"""The I/O shell: the only package with asyncio and sockets.

By role: `net/` (listeners, connections, SASL, throttling), `handlers/` (one module
per Kafka API; `handlers/common/` what several share), `services/` (adapters running
the cores' effects, timers, purgatory, disk work), `metadata/` (ACLs, quotas,
credentials, configs), `observability/` (metrics, diagnostics, HTTP, console). At
the top: `broker` (the composition root) and the contract between the roles:
`context`, `registry`, `refused`, `handler_services`, `connection_info`.
"""
