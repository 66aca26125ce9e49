"""Webhook delivery against a real HTTP receiver on 127.0.0.1 that checks every signature:
success, retries with backoff (time driven by passing ``now``), duplicate tasks, in-flight
claims, redelivery, rotation, timeouts, giving up, and the Celery wrappers."""

from __future__ import annotations

import itertools
import json
import queue
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from service.clock import utcnow
from service.db.match_models import OutboxEvent
from service.db.webhook_models import WebhookAttempt, WebhookDelivery
from service.ids import new_id
from service.outbound import transport as webhook_http
from service.outbound.signing import verify_signature
from service.usecases import webhooks
from service.usecases.auth import Principal
from tests.conftest import ApiClient, in_unit, new_operator

WAIT = 10  # seconds: the longest any test waits for an event that should come at once
LOCAL = webhook_http.http_sender(allow_private=True)  # the receiver is on 127.0.0.1


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]
    verified: dict[str, bool]  # secret label -> signature verified with it


@dataclass
class Receiver:
    """A threaded HTTP server on 127.0.0.1 that records each POST, checks its signature
    against every secret it knows (at the clock the test says it is) and answers with the
    next scripted status (then 200)."""

    server: ThreadingHTTPServer
    scheme: str = "http"
    secrets: dict[str, str] = field(default_factory=dict)
    answers: list[int] = field(default_factory=list)
    clock: float = 0.0
    received: queue.Queue[Received] = field(default_factory=queue.Queue)
    arrived: threading.Event = field(default_factory=threading.Event)
    hold: threading.Event | None = None  # when set: wait for it before answering

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{self.scheme}://{host!s}:{port}/hooks?src=test"

    def take(self) -> Received:
        return self.received.get(timeout=WAIT)

    def assert_quiet(self) -> None:
        assert self.received.empty(), "an unexpected delivery arrived"


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (the timeout test) breaks the pipe: expected


@contextmanager
def serving(tls: ssl.SSLContext | None = None) -> Iterator[Receiver]:
    """A receiver on a random port of 127.0.0.1, over TLS when ``tls`` is given."""
    state: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            me = state["r"]
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            header = self.headers.get("Gin-Signature", "")
            verified = {
                label: verify_signature(secret, header, body, now=me.clock)
                for label, secret in me.secrets.items()
            }
            me.received.put(Received(body, dict(self.headers.items()), verified))
            me.arrived.set()
            if me.hold is not None:
                me.hold.wait(WAIT)
            status = me.answers.pop(0) if me.answers else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = QuietServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    state["r"] = Receiver(server, scheme="https" if tls else "http")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state["r"]
    finally:
        if state["r"].hold is not None:
            state["r"].hold.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with serving() as running:
        yield running


@dataclass
class World:
    app: Any
    operator_id: str
    key: str

    def session(self) -> Any:
        return self.app.extensions["gin"]["sessionmaker"]()

    def endpoint(self, receiver: Receiver, now: datetime, **kwargs: Any) -> str:
        session = self.session()
        try:
            issued = in_unit(
                session,
                webhooks.create_endpoint,
                Principal(self.operator_id),
                receiver.url,
                kwargs.pop("types", None),
                "test",
                now - timedelta(seconds=1),
                **kwargs,
                allow_private=True,
            )
        finally:
            session.close()
        receiver.secrets["current"] = issued.secret
        return issued.endpoint.id

    def event(self, now: datetime, kind: str = "match.finished") -> str:
        session = self.session()
        try:
            with session.begin():
                event = OutboxEvent(
                    id=new_id("evt"),
                    operator_id=self.operator_id,
                    type=kind,
                    subject_id="mch_test",
                    data={"match_id": "mch_test", "winner": 1},
                    created_at=now,
                    published_at=now,
                    attempts=1,
                )
                session.add(event)
            return event.id
        finally:
            session.close()

    def fan_out(self, event_id: str, now: datetime) -> list[str]:
        session = self.session()
        try:
            return in_unit(session, webhooks.fan_out, event_id, now)
        finally:
            session.close()

    def deliver(self, delivery_id: str, now: datetime) -> webhooks.DeliveryOutcome:
        session = self.session()
        try:
            return webhooks.deliver(session, delivery_id, now, LOCAL)
        finally:
            session.close()

    def attempts(self, delivery_id: str) -> list[WebhookAttempt]:
        session = self.session()
        try:
            with session.begin():
                return list(
                    session.scalars(
                        select(WebhookAttempt)
                        .where(WebhookAttempt.delivery_id == delivery_id)
                        .order_by(WebhookAttempt.number)
                    )
                )
        finally:
            session.close()

    def delivery(self, delivery_id: str) -> WebhookDelivery:
        session = self.session()
        try:
            with session.begin():
                found = session.get(WebhookDelivery, delivery_id)
                assert found is not None
                return found
        finally:
            session.close()


@pytest.fixture
def world(app: Any) -> World:
    operator_id, key = new_operator(app, "Webhook Casino")
    return World(app, operator_id, key)


def at(receiver: Receiver, now: datetime) -> datetime:
    """Set the receiver's clock to ``now`` (the time the delivery is signed at)."""
    receiver.clock = now.timestamp()
    return now


def test_a_finished_match_is_delivered_signed_to_a_real_receiver(
    app: Any, world: World, receiver: Receiver
) -> None:
    """The whole path: a match ends over the API, the relay sends fan_out, deliveries go out
    signed, the receiver verifies them and the log says delivered."""
    from tests.api.play_clients import seated_match
    from worker.relay import relay_events

    now = at(receiver, utcnow())
    endpoint_id = world.endpoint(receiver, now)
    api = ApiClient(app.test_client(), world.key)
    clients, table = seated_match(api)
    clients[0].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
    sent: list[tuple[str, list[Any]]] = []
    # Other tests of this process may have left unpublished events in the shared database,
    # older than these: relay batches until none is left, as the relay's own task does.
    published = None
    while published != 0:
        session = world.session()
        try:
            published = in_unit(
                session, relay_events, lambda name, args: sent.append((name, args)), now
            )
        finally:
            session.close()
    session = world.session()
    try:
        with session.begin():
            ours = set(
                session.scalars(
                    select(OutboxEvent.id).where(OutboxEvent.subject_id == table["match_id"])
                )
            )
    finally:
        session.close()
    assert len(ours) == 3  # match.started, hand.ended (cut short by resigning), match.finished
    fan_outs = [args[0] for name, args in sent if name == "webhooks.fan_out"]
    assert ours <= set(fan_outs)  # (the relay publishes other tests' events too)
    fan_outs = sorted(ours)
    ids = [d for event_id in fan_outs for d in world.fan_out(event_id, now)]
    assert len(ids) == 3
    for delivery_id in ids:
        outcome = world.deliver(delivery_id, now)
        assert outcome.sent and outcome.status == "delivered" and outcome.status_code == 200
    got = [receiver.take() for _ in ids]
    receiver.assert_quiet()
    types = set()
    for item in got:
        assert item.verified == {"current": True}
        envelope = json.loads(item.body)
        assert set(envelope) == {"id", "type", "created_at", "operator_id", "data"}
        assert envelope["operator_id"] == world.operator_id and envelope["id"] in fan_outs
        assert envelope["data"]["match_id"] == table["match_id"]
        assert envelope["created_at"].endswith("Z")
        assert item.headers["Content-Type"] == "application/json"
        assert item.headers["Gin-Event-Id"] == envelope["id"]
        types.add(envelope["type"])
    assert types == {"match.started", "hand.ended", "match.finished"}
    log = api.get(f"/v1/webhook-endpoints/{endpoint_id}/deliveries").get_json()["data"]
    assert {d["status"] for d in log} == {"delivered"}
    for entry in log:
        (attempt,) = entry["attempts"]
        assert attempt["number"] == 1 and attempt["status_code"] == 200
        assert attempt["error"] is None and attempt["next_attempt_at"] is None
        assert attempt["duration_ms"] >= 0 and attempt["manual"] is False
    # Fanning out again creates nothing and queues nothing (all attempted).
    assert [world.fan_out(event_id, now) for event_id in fan_outs] == [[], [], []]


def test_a_500_is_retried_with_backoff_then_delivered(world: World, receiver: Receiver) -> None:
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    receiver.answers = [500]
    failed = world.deliver(delivery_id, now)
    assert failed.sent and failed.status == "pending" and failed.status_code == 500
    assert failed.next_attempt_at == now + timedelta(seconds=30)
    assert receiver.take().verified == {"current": True}
    # Not due yet: neither an early task nor the sweep sends it.
    session = world.session()
    try:
        assert delivery_id not in in_unit(
            session, webhooks.due_deliveries, now + timedelta(seconds=29)
        )
        early = world.deliver(delivery_id, now + timedelta(seconds=29))
        assert not early.sent and early.reason == "not due yet"
        receiver.assert_quiet()
        later = at(receiver, now + timedelta(seconds=30))
        assert delivery_id in in_unit(session, webhooks.due_deliveries, later)
        assert delivery_id not in in_unit(
            session, webhooks.due_deliveries, later
        )  # queued just now
    finally:
        session.close()
    done = world.deliver(delivery_id, later)
    assert done.sent and done.status == "delivered" and done.attempt == 2
    assert receiver.take().verified == {"current": True}
    first, second = world.attempts(delivery_id)
    assert (first.number, first.status_code, first.error) == (1, 500, "HTTP 500")
    assert first.next_attempt_at == now + timedelta(seconds=30)
    assert (second.number, second.status_code, second.error) == (2, 200, None)
    assert second.next_attempt_at is None
    row = world.delivery(delivery_id)
    assert row.status == "delivered" and row.delivered_at == later and row.attempts == 2


def test_retries_back_off_exponentially_for_more_than_a_day_then_give_up(
    world: World, receiver: Receiver
) -> None:
    start = now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    receiver.answers = [503] * webhooks.MAX_ATTEMPTS
    delays = []
    while True:
        outcome = world.deliver(delivery_id, at(receiver, now))
        assert outcome.sent and receiver.take().verified == {"current": True}
        if outcome.next_attempt_at is None:
            break
        delays.append((outcome.next_attempt_at - now).total_seconds())
        now = outcome.next_attempt_at
    assert outcome.status == "failed" and outcome.attempt == webhooks.MAX_ATTEMPTS
    assert delays[:4] == [30, 60, 120, 240]
    assert all(b >= a for a, b in itertools.pairwise(delays))
    assert max(delays) <= 3 * 3600
    assert now - start > timedelta(hours=24)
    assert not world.deliver(delivery_id, now + timedelta(days=2)).sent  # failed stays failed
    assert len(world.attempts(delivery_id)) == webhooks.MAX_ATTEMPTS


def test_duplicate_and_concurrent_tasks_deliver_once(world: World, receiver: Receiver) -> None:
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    # A second task while the first one's request is in flight sends nothing.
    receiver.hold = threading.Event()
    first: list[webhooks.DeliveryOutcome] = []
    worker = threading.Thread(target=lambda: first.append(world.deliver(delivery_id, now)))
    worker.start()
    assert receiver.arrived.wait(WAIT)
    twin = world.deliver(delivery_id, now)
    assert not twin.sent and twin.reason == "an attempt is in flight"
    receiver.hold.set()
    worker.join(WAIT)
    assert first[0].status == "delivered"
    # And once delivered, any number of duplicates send nothing.
    for _ in range(3):
        again = world.deliver(delivery_id, now + timedelta(hours=1))
        assert not again.sent and again.status == "delivered"
    receiver.take()
    receiver.assert_quiet()
    assert len(world.attempts(delivery_id)) == 1


def test_a_claim_left_by_a_crashed_worker_expires(world: World, receiver: Receiver) -> None:
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    session = world.session()
    try:
        taken = in_unit(session, webhooks.claim, delivery_id, now)  # ... and the worker dies
        assert isinstance(taken, webhooks.DeliveryClaim)
        assert delivery_id not in in_unit(
            session, webhooks.due_deliveries, now + timedelta(seconds=59)
        )
        later = at(receiver, now + webhooks.LEASE)
        assert delivery_id in in_unit(session, webhooks.due_deliveries, later)
    finally:
        session.close()
    outcome = world.deliver(delivery_id, later)
    assert outcome.status == "delivered" and outcome.attempt == 2
    assert receiver.take().headers["Gin-Delivery-Attempt"] == "2"


def test_redelivery_resends_a_delivered_event(app: Any, world: World, receiver: Receiver) -> None:
    now = at(receiver, utcnow())
    endpoint_id = world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    assert world.deliver(delivery_id, now).status == "delivered"
    original = receiver.take()
    api = ApiClient(app.test_client(), world.key)
    response = api.post(f"/v1/webhook-deliveries/{delivery_id}/redeliver")
    assert response.status_code == 202, response.get_json()
    later = at(receiver, utcnow())
    outcome = world.deliver(delivery_id, later)
    assert outcome.sent and outcome.status == "delivered" and outcome.attempt == 2
    resent = receiver.take()
    assert resent.body == original.body and resent.verified == {"current": True}
    assert not world.deliver(delivery_id, later).sent  # the redelivery's duplicate
    log = api.get(f"/v1/webhook-endpoints/{endpoint_id}/deliveries").get_json()["data"]
    assert [(a["number"], a["manual"]) for a in log[0]["attempts"]] == [(1, False), (2, True)]


def test_rotation_signs_with_both_secrets_during_the_grace_period(
    world: World, receiver: Receiver
) -> None:
    now = at(receiver, utcnow())
    endpoint_id = world.endpoint(receiver, now)
    old = receiver.secrets.pop("current")
    session = world.session()
    try:
        issued = in_unit(
            session,
            webhooks.rotate_secret,
            Principal(world.operator_id),
            endpoint_id,
            timedelta(hours=1),
            now,
        )
    finally:
        session.close()
    receiver.secrets.update(old=old, new=issued.secret)
    first, second = (world.fan_out(world.event(now), now)[0] for _ in range(2))
    world.deliver(first, now)
    during = receiver.take()
    assert during.verified == {"old": True, "new": True}
    assert during.headers["Gin-Signature"].count("v1=") == 2
    after = at(receiver, now + timedelta(hours=1, seconds=1))
    session = world.session()
    try:  # the second delivery happens after the grace period
        with session.begin():
            session.get(WebhookDelivery, second).next_attempt_at = after
    finally:
        session.close()
    world.deliver(second, after)
    late = receiver.take()
    assert late.verified == {"old": False, "new": True}
    assert late.headers["Gin-Signature"].count("v1=") == 1


def test_a_receiver_that_does_not_answer_in_time_is_a_timeout(
    world: World, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhooks, "TIMEOUT_SECONDS", 0.3)
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    receiver.hold = threading.Event()  # never set during the attempt
    outcome = world.deliver(delivery_id, now)
    receiver.hold.set()
    assert outcome.status == "pending" and outcome.status_code is None
    (attempt,) = world.attempts(delivery_id)
    assert attempt.error is not None and "timed out" in attempt.error
    assert attempt.duration_ms >= 300 and attempt.next_attempt_at is not None


def test_connection_refused_is_recorded_and_retried(world: World, receiver: Receiver) -> None:
    now = utcnow()
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    receiver.server.shutdown()
    receiver.server.server_close()  # nothing listens on that port any more
    outcome = world.deliver(delivery_id, now)
    assert outcome.status == "pending" and outcome.next_attempt_at is not None
    (attempt,) = world.attempts(delivery_id)
    assert attempt.status_code is None and attempt.error


def test_fan_out_respects_types_and_disabled_and_deleted_endpoints(
    world: World, receiver: Receiver
) -> None:
    now = at(receiver, utcnow())
    wants_all = world.endpoint(receiver, now)
    settlements_only = world.endpoint(receiver, now, types=["settlement.completed"])
    disabled = world.endpoint(receiver, now, enabled=False)
    event_id = world.event(now)
    ids = world.fan_out(event_id, now)
    assert ids == world.fan_out(event_id, now)  # idempotent: same deliveries, none twice
    endpoints = {world.delivery(d).endpoint_id for d in ids}
    assert endpoints == {wants_all} and settlements_only not in endpoints
    assert disabled not in endpoints
    # Deleting the endpoint cancels its pending delivery: nothing is sent.
    session = world.session()
    try:
        in_unit(session, webhooks.delete_endpoint, Principal(world.operator_id), wants_all, now)
    finally:
        session.close()
    assert world.delivery(ids[0]).status == "cancelled"
    assert not world.deliver(ids[0], now).sent
    receiver.assert_quiet()


def test_a_delivery_to_an_endpoint_disabled_later_is_cancelled(
    world: World, receiver: Receiver
) -> None:
    now = at(receiver, utcnow())
    endpoint_id = world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    session = world.session()
    try:
        in_unit(
            session,
            webhooks.update_endpoint,
            Principal(world.operator_id),
            endpoint_id,
            now,
            enabled=False,
        )
    finally:
        session.close()
    outcome = world.deliver(delivery_id, now)
    assert not outcome.sent and outcome.status == "cancelled"
    receiver.assert_quiet()


def test_sweep_finds_events_whose_fan_out_was_lost(world: World, receiver: Receiver) -> None:
    now = utcnow()
    world.endpoint(receiver, now)
    event_id = world.event(now)  # published, but its fan_out task never ran
    session = world.session()
    try:
        assert event_id not in in_unit(
            session, webhooks.unfanned_events, now
        )  # may still be queued
        assert event_id in in_unit(session, webhooks.unfanned_events, now + timedelta(minutes=3))
        world.fan_out(event_id, now)
        assert event_id not in in_unit(
            session, webhooks.unfanned_events, now + timedelta(minutes=3)
        )
        assert event_id not in in_unit(session, webhooks.unfanned_events, now + timedelta(hours=2))
    finally:
        session.close()


def test_sweep_recovers_only_events_an_endpoint_wants(world: World, receiver: Receiver) -> None:
    """Many unwanted events ahead of a wanted one do not hide it from the sweep."""
    now = utcnow()
    world.endpoint(receiver, now, types=["settlement.completed"])
    unwanted = [world.event(now, "hand.ended") for _ in range(5)]
    wanted = world.event(now + timedelta(seconds=1), "settlement.completed")
    session = world.session()
    try:
        found = in_unit(session, webhooks.unfanned_events, now + timedelta(minutes=3), limit=50)
    finally:
        session.close()
    assert wanted in found and not set(unwanted) & set(found)


def test_celery_tasks_wrap_the_use_cases(
    app: Any,
    world: World,
    receiver: Receiver,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from worker import webhook_tasks
    from worker.celery_app import app as celery_app
    from worker.relay import tasks_for

    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "1")
    names = {"webhooks.fan_out", "webhooks.deliver", "webhooks.sweep", "webhooks.purge"}
    assert names <= set(celery_app.tasks)
    schedule = {entry["task"] for entry in celery_app.conf.beat_schedule.values()}
    assert {"webhooks.sweep", "webhooks.purge"} <= schedule
    queued: list[tuple[str, list[Any]]] = []
    monkeypatch.setattr(webhook_tasks, "send_task", lambda name, args: queued.append((name, args)))
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    event_id = world.event(now)
    session = world.session()
    try:
        with session.begin():
            event = session.get(OutboxEvent, event_id)
            assert ("webhooks.fan_out", [event_id]) in tasks_for(event)
    finally:
        session.close()
    assert webhook_tasks.fan_out.apply(args=[event_id]).get() == 1
    ((name, (delivery_id,)),) = queued
    assert name == "webhooks.deliver"
    receiver.clock = utcnow().timestamp()
    assert webhook_tasks.deliver.apply(args=[delivery_id]).get() == "delivered"
    assert webhook_tasks.deliver.apply(args=[delivery_id]).get() == "delivered"  # no resend
    assert receiver.take().verified == {"current": True}
    receiver.assert_quiet()
    assert webhook_tasks.sweep.apply().get() >= 0
    assert ("webhooks.deliver", [delivery_id]) not in queued[1:]


def test_private_addresses_are_refused_unless_allowed(world: World, receiver: Receiver) -> None:
    """Server-side request forgery: by default a delivery never reaches the service's own
    network (loopback, private, link-local); nothing is sent, and the attempt says why."""
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    (delivery_id,) = world.fan_out(world.event(now), now)
    session = world.session()
    try:
        refused = webhooks.deliver(session, delivery_id, now, webhook_http.http_post)
    finally:
        session.close()
    assert refused.status == "pending" and refused.status_code is None
    (attempt,) = world.attempts(delivery_id)
    assert attempt.error is not None and "not a public address" in attempt.error
    receiver.assert_quiet()
    for host in ("127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "192.168.0.1"):
        with pytest.raises(webhook_http.PrivateAddress):
            webhook_http.resolve(host, 443, allow_private=False)
    assert webhook_http.resolve("127.0.0.1", 443, allow_private=True) == "127.0.0.1"
    response = webhook_http.http_post("http://localhost:1/x", b"{}", {}, 1.0)
    assert response.error is not None and not response.ok


def test_finished_deliveries_are_purged_after_their_retention(
    world: World, receiver: Receiver
) -> None:
    now = at(receiver, utcnow())
    world.endpoint(receiver, now)
    delivered, pending = (world.fan_out(world.event(now), now)[0] for _ in range(2))
    world.deliver(delivered, now)
    session = world.session()
    try:
        assert in_unit(session, webhooks.purge_finished, now + timedelta(days=29)) == 0
        later = now + webhooks.RETENTION + timedelta(seconds=1)
        while in_unit(session, webhooks.purge_finished, later, batch=50):
            pass  # (other tests' old deliveries may go too)
        with session.begin():
            assert session.get(WebhookDelivery, delivered) is None
            assert session.get(WebhookDelivery, pending) is not None  # never a pending one
    finally:
        session.close()
    assert world.attempts(delivered) == []


def test_https_receivers_are_verified_against_their_host(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over TLS the pinned connection still checks the certificate for the URL's host: an
    unknown authority fails the attempt; a trusted one delivers."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    with serving(server_tls) as receiver:
        now = at(receiver, utcnow())
        world.endpoint(receiver, now)
        first, second = (world.fan_out(world.event(now), now)[0] for _ in range(2))
        refused = world.deliver(first, now)
        assert refused.status == "pending" and refused.status_code is None
        (attempt,) = world.attempts(first)
        assert attempt.error is not None and "CERTIFICATE_VERIFY_FAILED" in attempt.error
        receiver.assert_quiet()
        trusted = ssl.create_default_context(cafile=str(cert))
        monkeypatch.setattr(webhook_http, "tls_context", lambda: trusted)
        assert world.deliver(second, now).status == "delivered"
        assert receiver.take().verified == {"current": True}


def test_a_test_event_is_delivered_signed_to_that_endpoint_only_and_logged(
    app: Any, world: World, receiver: Receiver
) -> None:
    """``POST /v1/webhook-endpoints/{id}/test``: a ``webhook.test`` event for that endpoint
    (though it subscribes to other types), delivered signed with its secret, logged with its
    attempt and redeliverable; the operator's other endpoint never gets it (neither the relay
    nor the sweep fans it out)."""
    from worker.relay import relay_events

    now = at(receiver, utcnow())
    endpoint_id = world.endpoint(receiver, now, types=["settlement.completed"])
    api = ApiClient(app.test_client(), world.key)
    with serving() as bystander:
        world.endpoint(bystander, now)  # every type
        response = api.post(f"/v1/webhook-endpoints/{endpoint_id}/test")
        assert response.status_code == 202, response.get_json()
        queued = response.get_json()
        assert queued["id"].startswith("whd_") and queued["endpoint_id"] == endpoint_id
        assert queued["event_type"] == "webhook.test" and queued["event_id"].startswith("evt_")
        assert (queued["status"], queued["attempt_count"], queued["attempts"]) == (
            "pending",
            0,
            [],
        )
        outcome = world.deliver(queued["id"], at(receiver, utcnow()))
        assert outcome.sent and outcome.status == "delivered" and outcome.status_code == 200
        got = receiver.take()
        assert got.verified == {"current": True}
        envelope = json.loads(got.body)
        assert envelope["id"] == queued["event_id"] and envelope["type"] == "webhook.test"
        assert envelope["operator_id"] == world.operator_id
        assert envelope["data"] == {"endpoint_id": endpoint_id, "test": True}
        assert got.headers["Gin-Event-Type"] == "webhook.test"
        # Neither the relay, nor a fan-out, nor the sweep sends it anywhere else.
        sent: list[tuple[str, list[Any]]] = []
        session = world.session()
        try:
            in_unit(session, relay_events, lambda name, args: sent.append((name, args)), now)
            later = now + timedelta(minutes=3)
            assert queued["event_id"] not in in_unit(session, webhooks.unfanned_events, later)
        finally:
            session.close()
        assert queued["event_id"] not in [args[0] for _, args in sent]
        assert world.fan_out(queued["event_id"], now) == []
        bystander.assert_quiet()
    log = api.get(f"/v1/webhook-endpoints/{endpoint_id}/deliveries").get_json()["data"]
    [entry] = [d for d in log if d["id"] == queued["id"]]
    assert entry["status"] == "delivered" and entry["event_type"] == "webhook.test"
    assert [(a["number"], a["status_code"]) for a in entry["attempts"]] == [(1, 200)]
    again = api.post(f"/v1/webhook-deliveries/{queued['id']}/redeliver")
    assert again.status_code == 202, again.get_json()
    assert world.deliver(queued["id"], at(receiver, utcnow())).status == "delivered"
    assert receiver.take().body == got.body


def test_a_test_event_for_a_failing_receiver_is_retried_like_any_other(
    app: Any, world: World, receiver: Receiver
) -> None:
    now = at(receiver, utcnow())
    endpoint_id = world.endpoint(receiver, now)
    api = ApiClient(app.test_client(), world.key)
    response = api.post(f"/v1/webhook-endpoints/{endpoint_id}/test")
    assert response.status_code == 202, response.get_json()
    delivery_id = response.get_json()["id"]
    receiver.answers = [503]
    now = at(receiver, utcnow())
    failed = world.deliver(delivery_id, now)
    assert failed.status == "pending" and failed.next_attempt_at == now + timedelta(seconds=30)
    assert receiver.take().verified == {"current": True}
    session = world.session()
    try:
        due = in_unit(session, webhooks.due_deliveries, now + timedelta(minutes=3))
    finally:
        session.close()
    assert delivery_id in due
    assert world.deliver(delivery_id, at(receiver, now + timedelta(seconds=30))).attempt == 2
