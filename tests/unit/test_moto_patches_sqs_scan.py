"""Patches 24 and 25: a receive stops at its last message, a delete finds its messages by receipt handle."""

from __future__ import annotations

import json
import random
import string
import uuid
from typing import Any

import pytest

from infra.local import moto_patches


class _CountingList(list[Any]):
    """A queue's message list that counts the messages a Python loop over it visits."""

    visited = 0

    def __iter__(self) -> Any:
        for item in super().__iter__():
            self.visited += 1
            yield item


@pytest.fixture
def backend() -> Any:
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    moto_patches.apply()
    return sqs_backends[DEFAULT_ACCOUNT_ID]["ap-south-2"]


def _queue(backend: Any, messages: int, **attributes: str) -> str:
    name = f"q-{uuid.uuid4().hex[:8]}"
    backend.create_queue(name, **attributes)
    for i in range(messages):
        backend.send_message(name, f"m{i}")
    return name


def test_receipt_handles_have_upstreams_shape_and_follow_motos_seed() -> None:
    from moto.moto_api._internal import mock_random

    handles = [moto_patches._receipt_handle() for _ in range(2000)]
    assert all(len(h) == 185 and set(h) <= set(string.ascii_lowercase) for h in handles)
    assert len(set(handles)) == len(handles)
    assert set("".join(handles)) == set(string.ascii_lowercase)
    mock_random.seed(7)
    first = [moto_patches._receipt_handle() for _ in range(3)]
    mock_random.seed(7)
    assert [moto_patches._receipt_handle() for _ in range(3)] == first


def test_a_receive_visits_the_messages_up_to_its_last(backend: Any) -> None:
    """Upstream listed all 1,000 visible messages for each receive; in flight ones ahead are stepped over."""
    name = _queue(backend, 1000)
    queue = backend.get_queue(name)
    queue._messages = _CountingList(queue._messages)
    got = backend.receive_message(name, 10, 0, 60)
    assert [m.body for m in got] == [f"m{i}" for i in range(10)]
    assert queue._messages.visited == 10
    got = backend.receive_message(name, 10, 0, 60)
    assert [m.body for m in got] == [f"m{i}" for i in range(10, 20)]
    assert queue._messages.visited == 10 + 20


def test_a_delete_finds_its_messages_without_a_pass_over_the_queue(backend: Any) -> None:
    name = _queue(backend, 1000)
    queue = backend.get_queue(name)
    got = backend.receive_message(name, 10, 0, 60)
    queue._messages = _CountingList(queue._messages)
    counting = queue._messages
    done, failed = backend.delete_message_batch(
        name, [{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)]
    )
    assert sorted(done, key=int) == [str(i) for i in range(10)] and failed == []
    assert counting.visited == 0
    assert [m.body for m in queue._messages] == [f"m{i}" for i in range(10, 1000)]
    assert queue.pending_messages == set()
    assert moto_patches._receipts_of(queue) == {}  # nothing kept for deleted messages


def test_a_handle_of_a_message_gone_to_the_dead_letter_queue_is_refused(backend: Any) -> None:
    dead = backend.create_queue(f"dlq-{uuid.uuid4().hex[:8]}")
    redrive = json.dumps({"deadLetterTargetArn": dead.queue_arn, "maxReceiveCount": 1})
    name = _queue(backend, 1, RedrivePolicy=redrive)
    (first,) = backend.receive_message(name, 10, 0, 0)
    assert backend.receive_message(name, 10, 0, 0) == []  # spent: moved
    assert [m.body for m in dead._messages] == ["m0"]
    done, failed = backend.delete_message_batch(name, [{"Id": "a", "ReceiptHandle": first.receipt_handle}])
    assert done == [] and [f["Code"] for f in failed] == ["ReceiptHandleIsInvalid"]
    assert moto_patches._receipts_of(backend.get_queue(name)) == {}
    assert [m.body for m in dead._messages] == ["m0"]


def test_a_handle_of_a_purged_message_is_refused_and_not_kept(backend: Any) -> None:
    name = _queue(backend, 3)
    got = backend.receive_message(name, 10, 0, 60)
    backend.purge_queue(name)
    queue = backend.get_queue(name)
    assert moto_patches._receipts_of(queue) == {}
    backend.send_message(name, "after")
    done, failed = backend.delete_message_batch(name, [{"Id": "a", "ReceiptHandle": got[0].receipt_handle}])
    assert done == [] and [f["Code"] for f in failed] == ["ReceiptHandleIsInvalid"]
    assert [m.body for m in queue._messages] == ["after"]


def test_a_noted_message_no_longer_in_its_queue_is_not_deleted(backend: Any) -> None:
    """A message another path took out of the list (none in moto 5.2.5 now): refused, the others stay."""
    name = _queue(backend, 3)
    got = backend.receive_message(name, 10, 0, 60)
    queue = backend.get_queue(name)
    queue._messages = [m for m in queue._messages if m.body != "m0"]
    done, failed = backend.delete_message_batch(
        name, [{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)]
    )
    assert sorted(done) == ["1", "2"] and [f["Id"] for f in failed] == ["0"]
    assert queue._messages == []
    assert moto_patches._receipts_of(queue) == {}


def _state(backend: Any, names: list[str]) -> list[Any]:
    out: list[Any] = []
    for name in names:
        queue = backend.get_queue(name)
        out.append([(m.body, m.approximate_receive_count) for m in queue._messages])
        out.append(sorted(m.body for m in queue.pending_messages))
    return out


def _scenario(seed: int, region: str, receive: Any) -> list[Any]:
    """Sends, receives (visibility 0: visible again at once, towards the redrive limit; or 30) and deletes
    (by the newest or an older handle, or an unknown one) in an order `seed` draws; what each step answered
    and left."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    backend = sqs_backends[DEFAULT_ACCOUNT_ID][region]
    tag = uuid.uuid4().hex[:6]
    dead = backend.create_queue(f"dlq-{tag}")
    redrive = json.dumps({"deadLetterTargetArn": dead.queue_arn, "maxReceiveCount": 3})
    plain = f"plain-{tag}"
    fifo = f"groups-{tag}.fifo"
    backend.create_queue(plain, RedrivePolicy=redrive)
    backend.create_queue(fifo, FifoQueue="true", ContentBasedDeduplication="true")
    rng = random.Random(seed)
    handles: dict[str, list[str]] = {}
    log: list[Any] = []
    for step in range(60):
        name = rng.choice([plain, fifo])
        action = rng.random()
        if action < 0.35:
            group = rng.choice("abc") if name == fifo else None
            delay = rng.choice([0, 0, 0, 30]) if name == plain else None
            backend.send_message(name, f"{step}", delay_seconds=delay, group_id=group)
            log.append(("sent", name == fifo, step))
        elif action < 0.75:
            got = receive(backend, name, rng.randint(1, 10), rng.choice([0, 30]))
            for message in got:
                handles.setdefault(message.body, []).append(message.receipt_handle)
            log.append(("received", name == fifo, [m.body for m in got]))
        else:
            bodies = sorted(handles)
            chosen = rng.sample(bodies, min(len(bodies), rng.randint(1, 4)))
            entries = [
                {"Id": f"e{i}", "ReceiptHandle": rng.choice(handles[body])} for i, body in enumerate(chosen)
            ]
            entries.append({"Id": "unknown", "ReceiptHandle": "x" * 185})
            done, failed = backend.delete_message_batch(name, entries)
            log.append(("deleted", name == fifo, sorted(done), sorted(f["Id"] for f in failed)))
        log.append(_state(backend, [plain, fifo, dead.name]))
    return log


def _upstream_receive(backend: Any, name: str, count: int, visibility: int) -> list[Any]:
    queue = backend.get_queue(name)
    with queue._messages_lock:
        result: list[Any] = moto_patches.UPSTREAM["receive_message"](backend, name, count, 0, visibility)
    return result


def _patched_receive(backend: Any, name: str, count: int, visibility: int) -> list[Any]:
    result: list[Any] = backend.receive_message(name, count, 0, visibility)
    return result


@pytest.mark.parametrize("seed", range(12))
def test_receives_and_deletes_answer_and_leave_what_upstreams_do(seed: int) -> None:
    """The same draws of sends, receives and deletes, once with upstream's receive (whose handles patch 25 has
    not noted: the deletes go through patch 5's pass) and once patched: the same answers and queues."""
    moto_patches.apply()
    assert _scenario(seed, "eu-south-2", _patched_receive) == _scenario(seed, "eu-south-2", _upstream_receive)
