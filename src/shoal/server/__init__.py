"""The I/O shell: the only package with asyncio and sockets."""
