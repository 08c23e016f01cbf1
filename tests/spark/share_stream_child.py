"""The shoal-share stream of tests/spark/stream_child.py (kept for test_share_stream.py).
Usage: python -m tests.spark.share_stream_child OPTIONS_JSON OUT CHECKPOINT SLEEP_S
"""

from __future__ import annotations

import sys

from tests.spark.stream_child import main

if __name__ == "__main__":
    main("shoal-share", *sys.argv[1:])
