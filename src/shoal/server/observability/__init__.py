"""Metrics (the registry, labelled families, scrape-time collectors, request metrics),
diagnostics (latency trace, stall watch, record path), the HTTP listener and the
web console. They read the services; only the console's opt-in actions write.
"""
