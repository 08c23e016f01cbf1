"""Authentication and authorization cores, sans-I/O: principals, ACLs and the authorizer,
SASL mechanisms (server and client sides) and credential formats.

Used by the broker's shell (`server/`) and by the one client (`client/`); imports only
`protocol/` and the leaf modules. No sockets, no event loop, no wall clock: time comes in
as arguments, secrets never reach a log line.
"""
