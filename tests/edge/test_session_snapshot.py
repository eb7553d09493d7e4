"""Who owns a session, as the snapshot store says: the check each live session makes twice a second
reads only the snapshot's lease (``edge/realtime/session_snapshot.py``), and must say what reading the whole
snapshot says."""

from __future__ import annotations

import msgspec

from edge.realtime.session_snapshot import SNAPSHOT_VERSION, SessionSnapshot, SessionSnapshots, key_hash
from edge.realtime.session_update import initial_state
from edge.shared.settings import EdgeSettings
from edge.stores.memory import LocalStore


def _snapshot(lease: str, turns: int = 40) -> SessionSnapshot:
    state = initial_state(EdgeSettings(), key_id="key-1")
    items = [
        {
            "id": f"item_{i}",
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi " * 50}],
        }
        for i in range(turns)
    ]
    return SessionSnapshot(key_hash=key_hash("key-1"), lease=lease, state=state, items=items)


async def test_the_lease_of_a_long_conversation_is_read_as_the_whole_snapshot_says() -> None:
    snapshots = SessionSnapshots(LocalStore(), ttl_s=60)
    mine = _snapshot("lease-a")
    await snapshots.write(mine)
    sid = mine.state.id
    whole = await snapshots.load_snapshot(sid)
    assert whole is not None and whole.lease == "lease-a" and len(whole.items) == 40
    assert not (await snapshots.stored(sid)).taken_from("lease-a")
    assert (await snapshots.stored(sid)).taken_from("lease-b")  # taken over

    unclaimed = _snapshot("")
    await snapshots.write(unclaimed)
    assert not (await snapshots.stored(unclaimed.state.id)).taken_from("lease-b")  # nobody serves it yet

    assert not (await snapshots.stored("sess_unknown")).taken_from(
        "lease-b"
    )  # expired or never written: no takeover


async def test_a_snapshot_of_another_version_or_unreadable_is_no_takeover() -> None:
    store = LocalStore()
    snapshots = SessionSnapshots(store, ttl_s=60)
    other = _snapshot("lease-x")
    other.v = SNAPSHOT_VERSION + 1
    await store.set(f"session:{other.state.id}", msgspec.msgpack.encode(other))
    assert await snapshots.load_snapshot(other.state.id) is None
    assert not (await snapshots.stored(other.state.id)).taken_from("lease-a")

    await store.set("session:sess_garbage", b"\xc1not msgpack")
    assert not (await snapshots.stored("sess_garbage")).taken_from("lease-a")
