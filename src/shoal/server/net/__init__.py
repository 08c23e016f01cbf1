"""The wire: listeners (TLS), connections (frames in, dispatch through the registry,
responses out), the SASL gate, client-quota throttling, connection deadlines and the
request path's warm-up. The only part of the shell that touches sockets.
"""
