"""The warm-up loads what the first requests would load on the loop, then freezes
the heap. Run in a fresh interpreter: the test process has imported much already."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_PROBE = textwrap.dedent(
    """
    import gc, sys
    from shoal.server.registry import load_all_handlers
    from shoal.server.warmup import warm
    from shoal.protocol import codec, fast_writer
    from shoal.protocol.schema import response_schema

    handlers = load_all_handlers()
    fresh = [m for m in sys.modules if m.startswith("kio.schema.share_fetch.")]
    assert not fresh, fresh
    loaded = warm(handlers)
    assert loaded >= 150, loaded
    assert gc.get_freeze_count() > 0
    before = set(sys.modules)
    for key, version in ((0, 10), (78, 1), (79, 2), (3, 12), (18, 4)):
        cls = codec.request_class(key, version)
        assert codec.is_flexible(key, version) == bool(cls.__flexible__)
        fast_writer.entity_writer(response_schema(key, version).root)
    # a field some other version has (Schema.make checks every version's names)
    produce_v3 = response_schema(0, 3)
    produce_v3.make("PartitionProduceResponse", index=0, error_code=0, base_offset=0,
                    log_append_time=None, log_start_offset=0, record_errors=(),
                    error_message=None)
    new = sorted(set(sys.modules) - before)
    assert not new, new
    print("ok", loaded)
    """
)


def test_warm_loads_every_served_version_and_freezes() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], check=False, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ")
