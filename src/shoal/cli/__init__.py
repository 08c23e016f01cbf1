"""Command-line tools: `shoal serve` and the admin and console tools."""
