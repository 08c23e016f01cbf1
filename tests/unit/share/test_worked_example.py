"""docs/design/share-partition.md §12, the worked example (offsets 100-121, consumers C1-C3), step
by step: in-memory states, SPSO, SPEO (exclusive), every WriteShareGroupState, and the
share coordinator's merged durable state after it. Then recovery from the final
durable state.

A write carries the SPSO its own commit gives, as the KIP-932 design
documents' table does: StartOffset 110 at step 2, 111 at step 10, 120 at step 11
(Kafka 4.2 sends the SPSO from before the acknowledgement, one write behind). The
DeliveryCompleteCount sent with it counts terminal offsets at or above that SPSO."""

from __future__ import annotations

from shoal.share.partition import SharePartition
from tests.unit.share.support import (
    ACK,
    ACQ,
    AV,
    RELEASE,
    Rig,
    ack,
    batches,
    durable_batches,
    ranges,
    view,
)

C1, C2, C3 = "C1", "C2", "C3"


def speo(sp: SharePartition) -> int:
    """The design documents' exclusive end offset."""
    in_flight = any(v.last_offset >= sp.start_offset for v in sp.in_flight())
    return sp.end_offset + 1 if in_flight else sp.end_offset


def test_worked_example() -> None:
    rig = Rig()
    rig.produce((0, 99))  # log end 100 before the group starts; `latest`
    # 0: partition loaded: empty, SPSO 100, SPEO 100; nothing written, durable -1.
    sp = rig.start()
    assert (view(sp), sp.start_offset, speo(sp)) == ([], 100, 100)
    assert rig.durable().start_offset == -1 and durable_batches(rig.durable()) == []

    # 1: C1 fetches 100-109 (acquisitions are never written).
    rig.produce((100, 109))
    assert ranges(rig.fetch(C1)) == [(100, 109, 1)]
    assert view(sp) == [(100, 109, ACQ, 1, C1)]
    assert (sp.start_offset, speo(sp)) == (100, 110)

    # 2: C1 accepts 100-109 -> write 110, 0, [100-109 ACK dc1]; empty, SPSO 110.
    result = sp.acknowledge(member_id=C1, batches=[ack(100, 109)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (110, 0)
    assert batches(write) == [(100, 109, ACK, 1)]
    assert sp.start_offset == 100, "memory moves when the write commits"
    rig.complete(result.pending)
    assert (view(sp), sp.start_offset, speo(sp)) == ([], 110, 110)
    assert rig.durable().start_offset == 110
    assert durable_batches(rig.durable()) == []

    # 3: C1 gets 110-112, C2 113-118, C3 119 (a second apart, so their locks differ).
    rig.produce((110, 112), (113, 118), (119, 119))
    assert ranges(rig.fetch(C1, max_records=1)) == [(110, 112, 1)]
    rig.clock.advance(1_000)
    assert ranges(rig.fetch(C2, max_records=1)) == [(113, 118, 1)]
    rig.clock.advance(1_000)
    assert ranges(rig.fetch(C3, max_records=1)) == [(119, 119, 1)]
    assert view(sp) == [(110, 112, ACQ, 1, C1), (113, 118, ACQ, 1, C2), (119, 119, ACQ, 1, C3)]
    assert (sp.start_offset, speo(sp)) == (110, 120)

    # 4: C1 releases 110 -> write 110, 0, [110 AV dc1].
    rig.clock.advance(1_000)
    result = sp.acknowledge(member_id=C1, batches=[ack(110, 110, RELEASE)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (110, 0)
    assert batches(write) == [(110, 110, AV, 1)]
    rig.complete(result.pending)
    assert view(sp)[0] == (110, 110, AV, 1, "")
    assert (sp.start_offset, speo(sp)) == (110, 120)
    assert rig.durable().start_offset == 110
    assert durable_batches(rig.durable()) == [(110, 110, AV, 1)]

    # 5: C3 accepts 119 -> write 110, 1, [119 ACK dc1].
    result = sp.acknowledge(member_id=C3, batches=[ack(119, 119)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (110, 1)
    assert batches(write) == [(119, 119, ACK, 1)]
    rig.complete(result.pending)
    assert view(sp)[-1] == (119, 119, ACK, 1, "")
    assert (sp.start_offset, speo(sp)) == (110, 120)
    assert durable_batches(rig.durable()) == [(110, 110, AV, 1), (119, 119, ACK, 1)]

    # 6: C1 fetches 110 and 120.
    rig.clock.advance(7_000)  # t = 10 s
    rig.produce((120, 120))
    assert sp.next_fetch_offset() == 110
    assert ranges(rig.fetch(C1)) == [(110, 110, 2), (120, 120, 1)]
    assert state_tuple(sp, 110) == (ACQ, 2, C1)
    assert state_tuple(sp, 120) == (ACQ, 1, C1)
    assert (sp.start_offset, speo(sp)) == (110, 121)

    # 7: C1's locks on 111-112 expire: one write per timer.
    writes = rig.expire(20_000)  # t = 30 s: C1's step-3 locks only
    assert [(w.start_offset, w.delivery_complete_count, batches(w)) for w in writes] == [
        (110, 1, [(111, 111, AV, 1)]),
        (110, 1, [(112, 112, AV, 1)]),
    ]
    assert [state_tuple(sp, o) for o in (111, 112)] == [(AV, 1, ""), (AV, 1, "")]
    assert (sp.start_offset, speo(sp)) == (110, 121)
    assert durable_batches(rig.durable()) == [(110, 112, AV, 1), (119, 119, ACK, 1)]

    # 8: C2 accepts 113-118 -> write 110, 7, [113-118 ACK dc1].
    result = sp.acknowledge(member_id=C2, batches=[ack(113, 118)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (110, 7)
    assert batches(write) == [(113, 118, ACK, 1)]
    rig.complete(result.pending)
    assert (sp.start_offset, speo(sp)) == (110, 121)
    assert durable_batches(rig.durable()) == [(110, 112, AV, 1), (113, 119, ACK, 1)]

    # 9: C3 fetches 111-112.
    assert sp.next_fetch_offset() == 111
    assert ranges(rig.fetch(C3)) == [(111, 112, 2)]
    assert [state_tuple(sp, o) for o in (111, 112)] == [(ACQ, 2, C3), (ACQ, 2, C3)]
    assert (sp.start_offset, speo(sp)) == (110, 121)

    # 10: C1 accepts 110 -> write 111, 7, [110 ACK dc2]; SPSO 111.
    result = sp.acknowledge(member_id=C1, batches=[ack(110, 110)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (111, 7)
    assert batches(write) == [(110, 110, ACK, 2)]
    rig.complete(result.pending)
    assert (sp.start_offset, speo(sp)) == (111, 121)
    assert rig.durable().start_offset == 111
    assert durable_batches(rig.durable()) == [(111, 112, AV, 1), (113, 119, ACK, 1)]

    # 11: C3 accepts 111-112 -> write 120, 0, [111 ACK dc2], [112 ACK dc2]; SPSO 120.
    result = sp.acknowledge(member_id=C3, batches=[ack(111, 112)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (120, 0)
    assert batches(write) == [(111, 111, ACK, 2), (112, 112, ACK, 2)]
    rig.complete(result.pending)
    assert view(sp) == [(120, 120, ACQ, 1, C1)]
    assert (sp.start_offset, speo(sp)) == (120, 121)
    assert rig.durable().start_offset == 120
    assert durable_batches(rig.durable()) == []

    # Recovery from the last durable state: SPSO 120; 120 is delivered again as a
    # first delivery.
    recovered = rig.load()
    assert (recovered.start_offset, recovered.next_fetch_offset(), view(recovered)) == (
        120,
        120,
        [],
    )
    assert ranges(rig.fetch(C2)) == [(120, 120, 1)]


def state_tuple(sp: SharePartition, offset: int) -> tuple[object, int, str]:
    for v in sp.in_flight():
        if v.first_offset <= offset <= v.last_offset:
            return v.state, v.delivery_count, v.member_id
    raise KeyError(offset)
