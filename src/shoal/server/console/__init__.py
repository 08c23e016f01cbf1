"""The web console: read-only pages of topics, share groups (with the live in-flight
window) and consumer groups, served on the broker's HTTP listener (issue 13)."""
