"""How the `shoal-share` source splits a micro-batch that keeps failing, so that one
poison record is archived alone and the records around it are processed (pure).

A batch fails as a whole (one bad record fails its task, the task fails the query); the
restarted query replays it and the group hands its records back with their delivery
count one higher. The delivery count is therefore the number of times a record's batch
was tried, and it drives the split: records at delivery count `d` go into batches of at
most `batch_records_for(d)` records,

    ceil(records_max ** ((limit - d) / (limit - 1)))

where `records_max` is the batch size asked for (`maxRecordsPerBatch`) and `limit` the
group's `share.delivery.count.limit`. That is `records_max` at the first delivery and 1
at the last one: each failure divides the suspect batch by about the same factor,
`records_max ** (1 / (limit - 1))`, so the poison record is alone in its batch by its
last delivery, and archived alone when that fails too. Batches of suspects that do not
hold it are processed and acknowledged as usual. With the defaults (`limit` 5,
`records_max` 10,000) the sizes are 10,000, 1,000, 100, 10 and 1.

The split costs good records nothing but time: a record's delivery count rises only
when a batch it is in (or, through the query's stop, a record it holds unplanned) fails,
so the driver acquires no more records than the next batch takes while suspects are
about (share_driver.py): a record held unplanned at its last delivery would be archived
with the failing batch.
"""

from __future__ import annotations

import math
from typing import Final

DELIVERY_COUNT_LIMIT_DEFAULT: Final = 5
"""Kafka's `group.share.delivery.count.limit` default, assumed when the group's value
cannot be read."""


def batch_records_for(delivery_count: int, *, records_max: int, limit: int) -> int:
    """Records a batch holding a record at `delivery_count` may hold (see the module
    docstring); at least 1, at most `records_max`."""
    assert records_max >= 1 and limit >= 2, (records_max, limit)
    if delivery_count <= 1:
        return records_max
    if delivery_count >= limit:
        return 1
    exponent = (limit - delivery_count) / (limit - 1)
    # round the power down a hair first so that exact powers (10,000 ** 0.75) stay exact
    power: float = records_max**exponent
    return max(1, min(records_max, math.ceil(power - 1e-9)))
