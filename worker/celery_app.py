"""The Celery application, configured from the same settings as the web app."""

from __future__ import annotations

import functools
import gc
import logging
from pathlib import Path
from typing import Any

from celery import Celery, bootsteps, signals
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.connection import Connection

from service.config import Settings, worker_ready_file
from service.observability import tasks as task_signals

log = logging.getLogger(__name__)


#: Seconds between a worker's looks into the embedded broker's folder while it finds nothing
#: (kombu's filesystem transport cannot wait for a message, it polls). kombu's default of a
#: second let beat's ticks (about three a second) outrun the worker: each looked-for task
#: waited behind a queue of ticks, a match's settlement 5 to 10 s, and ticks expired unrun.
#: Twenty looks a second cost the idle worker a directory listing each (figures in
#: docs/performance.md, "The embedded default").
FILESYSTEM_POLLING_SECONDS = 0.05


def _transport_options(settings: Settings) -> dict[str, object]:
    """``filesystem://<folder>``: kombu's filesystem transport in that folder (embedded
    default), polled every :data:`FILESYSTEM_POLLING_SECONDS`; other brokers: a visibility
    timeout longer than any countdown or retry delay."""
    broker_url = settings.broker_url
    if broker_url.startswith("filesystem://"):
        folder = Path(broker_url.removeprefix("filesystem://") or "var/broker")
        for sub in ("queue", "staging", "processed", "control"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "staging_folder": str(folder / "staging"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "store_processed": False,
            "polling_interval": FILESYSTEM_POLLING_SECONDS,
        }
    # Redis redelivers an unacknowledged task (a worker killed mid-task) after this long.
    options: dict[str, object] = {"visibility_timeout": settings.celery_visibility_timeout}
    prefix = settings.celery_key_prefix
    if prefix and broker_url.startswith("redis"):
        options["global_keyprefix"] = prefix
    return options


#: Seconds a publish may wait for a broker that does not answer. A publish is a kick or a
#: relay's send: best effort, its work found again by the outbox relay and the sweeps. Left to
#: kombu, a publish to an unreachable broker retried its connection for
#: ``broker_connection_timeout`` (three attempts, 2 s and 4 s apart: about 6 s), and an API
#: request that ended a match waited that long through a broker outage (docs/performance.md).
PUBLISH_TIMEOUT_SECONDS = 0.5


def publish_options(broker_url: str) -> tuple[float | None, dict[str, object]]:
    """The connect timeout (``None``: Celery's) and the transport options added to connections
    that publish (:meth:`GinCelery.connection_for_write`), never to the worker's consumer (its
    blocking reads wait longer than any bound here, and it retries a lost broker for as long as
    it takes, :class:`Consumer`): one connection attempt, no retry (kombu's ``max_retries``),
    and each socket operation bounded by :data:`PUBLISH_TIMEOUT_SECONDS`: Redis's
    ``socket_connect_timeout`` and ``socket_timeout`` (a broker that accepts the connection but
    never answers, as a stopped or overloaded one), RabbitMQ's connect timeout (connection and
    handshake) and ``write_timeout``. The embedded filesystem broker: nothing to bound."""
    bound = PUBLISH_TIMEOUT_SECONDS
    scheme = broker_url.split("://", 1)[0]
    if scheme in ("redis", "rediss"):
        return None, {"max_retries": 0, "socket_connect_timeout": bound, "socket_timeout": bound}
    if scheme in ("amqp", "amqps", "pyamqp"):
        return bound, {"max_retries": 0, "write_timeout": bound}
    return None, {}


class GinCelery(Celery):
    """Celery, with every publishing connection bounded (:func:`publish_options`)."""

    def connection_for_write(self, url: str | None = None, **kwargs: Any) -> Connection:
        timeout, options = publish_options(url or self.conf.broker_write_url or "")
        if timeout is not None and kwargs.get("connect_timeout") is None:
            kwargs["connect_timeout"] = timeout
        kwargs["transport_options"] = {**options, **(kwargs.get("transport_options") or {})}
        connection: Connection = super().connection_for_write(url, **kwargs)
        return connection


#: The priority of a relay kick (the API's, after a match ends): the lowest of Redis's steps
#: (kombu serves 0, the default, first and 9 last; other brokers here ignore it). A kick is a
#: nudge: a relay finds every unpublished event, whichever kick runs it. A worker that comes
#: back to a queue holding one kick per match that ended while it was away runs its
#: catch-up's settlement sweeps first, instead of after every one of those kicks.
KICK_PRIORITY = 9


#: Seconds between a worker's attempts to reach a broker it lost. Celery waits 2, 4, 6, ...
#: up to 30 s between attempts, so a worker came back up to 10 s after a 20 s outage ended
#: (30 s after a long one). An attempt costs a worker one refused connection.
RECONNECT_SECONDS = 1.0


class Consumer(CeleryConsumer):
    """Celery's task consumer, retrying a lost broker every :data:`RECONNECT_SECONDS`."""

    def ensure_connected(self, conn: Connection) -> Connection:
        retrying = conn.ensure_connection
        conn.ensure_connection = functools.partial(  # type: ignore[method-assign]
            retrying,
            interval_start=RECONNECT_SECONDS,
            interval_step=0,
            interval_max=RECONNECT_SECONDS,
        )
        connected: Connection = super().ensure_connected(conn)
        return connected

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        """Celery's cleanup of a lost connection, surviving an AttributeError that kombu's
        Redis transport raises in it: closing the lost connection, a channel still holding
        unacknowledged messages builds a client to give them back from a transport the
        cleanup already cleared (seen when Redis went away while a worker held its first
        tasks, as right after connecting). Uncaught, the worker exits with "Unrecoverable
        error". Only the cleanup's prefetch bookkeeping is skipped; the messages stay in
        Redis's unacknowledged set, and the catch-up on reconnecting finds their work."""
        try:
            super().on_connection_error_after_connected(exc)
        except AttributeError as error:
            log.warning("closing the lost broker connection failed: %r", error)

    def call_soon_ack(self, p: Any, *args: Any, **kwargs: Any) -> Any:
        """Celery's acknowledgement (or rejection) of a task message, surviving the same
        AttributeError when the message came on a connection lost since: a task that was
        running while Redis was away finishes after the worker reconnected, and its late
        acknowledgement goes to the old channel, whose transport the cleanup cleared.
        Uncaught, the worker exits with "Unrecoverable error" just as the broker is back
        (seen with a settlement waiting on a row lock through an outage). The message stays
        in Redis's unacknowledged set; its task is done, and done once however often it runs."""
        return super().call_soon_ack(functools.partial(_ack_of_lost_connection, p), *args, **kwargs)


def _ack_of_lost_connection(ack: Any, *args: Any, **kwargs: Any) -> Any:
    """``ack(*args, **kwargs)``, logging the AttributeError of a message whose broker
    connection is gone (:meth:`Consumer.call_soon_ack`)."""
    try:
        return ack(*args, **kwargs)
    except AttributeError as error:
        log.warning("acknowledging a task of a lost broker connection failed: %r", error)
        return None


class CatchUp(bootsteps.StartStopStep):
    """Each time the worker's consumer connects to the broker, at start and again after every
    lost connection (Celery restarts the consumer's steps then; ``worker_ready`` is sent only
    once), queue what finds the work an outage or a killed worker lost: the outbox relay,
    the settlement sweep and the webhook sweep (:func:`worker.tasks.catch_up`). Without it
    that waited for beat's next sweep, which an outage may also have dropped."""

    requires = ("celery.worker.consumer.tasks:Tasks",)  # the queue is declared again first

    def start(self, parent: Any) -> None:
        from worker.tasks import catch_up

        catch_up(sweeps=getattr(getattr(parent, "pool", None), "num_processes", 1) or 1)


def make_celery(settings: Settings | None = None) -> Celery:
    settings = settings or Settings.from_env()
    broker_url = settings.broker_url
    if broker_url.startswith("filesystem://"):
        broker_url = "filesystem://localhost"  # the folder is in the options; a hostname
        # keeps kombu from warning that it reverts to "localhost" on every cloned connection
    sweep = settings.settlement_sweep_seconds
    app = GinCelery("gin", broker=broker_url)
    app.steps["consumer"].add(CatchUp)
    if broker_url.startswith("filesystem://"):  # kombu's, each message written whole
        app.conf.broker_transport = "worker.embedded_broker:Transport"
    app.conf.update(
        worker_consumer="worker.celery_app:Consumer",
        broker_transport_options=_transport_options(settings),
        task_publish_retry=False,
        task_default_queue=settings.celery_queue,
        broker_connection_timeout=3,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        # A worker that lost its broker waits for it, however long: Celery's default of 100
        # attempts would make it exit after 100 s of outage at one attempt a second.
        broker_connection_max_retries=None,
        imports=[
            "worker.tasks",
            "worker.audit_tasks",
            "worker.webhook_tasks",
            "worker.bot_tasks",
            "worker.wallet_tasks",
        ],
        beat_schedule={
            "purge-expired-idempotency-keys": {
                "task": "idempotency.purge_expired",
                "schedule": 3600.0,
            },
            # Turn clocks are enforced within about a second of a deadline.
            "enforce-turn-clocks": {
                "task": "matches.enforce_clocks",
                "schedule": 1.0,
                "options": {"expires": 5},
            },
            "relay-outbox": {
                "task": "outbox.relay",
                "schedule": 5.0,
                "options": {"expires": 10},
            },
            # Settlements whose task was lost (with the broker, or a killed worker) and that
            # have waited a whole interval; workers also sweep whenever they connect.
            "sweep-unsettled-matches": {
                "task": "settlement.sweep",
                "schedule": float(sweep),
                "kwargs": {"older_than": sweep},
                "options": {"expires": sweep},
            },
            # Ledger reconciliation: invariants checked, failures logged at ERROR and counted.
            "audit-reconcile": {
                "task": "audit.reconcile",
                "schedule": 600.0,
                "options": {"expires": 600},
            },
            # Webhook retries come due here, and lost deliveries or fan-outs are re-queued.
            "sweep-webhook-deliveries": {
                "task": "webhooks.sweep",
                "schedule": 10.0,
                "options": {"expires": 30},
            },
            "purge-webhook-deliveries": {
                "task": "webhooks.purge",
                "schedule": 3600.0,
                "options": {"expires": 600},
            },
            # Practice bots act within about a second of their turn.
            "play-bot-turns": {
                "task": "bots.play_turns",
                "schedule": 1.0,
                "options": {"expires": 5},
            },
            # Seamless wallets: rollbacks and credits retried, lost debits rolled back (a
            # credit is first sent by its settlement's task, a rollback by its request).
            "sweep-wallet-calls": {
                "task": "wallet.sweep",
                "schedule": 2.0,
                "options": {"expires": 10},
            },
            "cancel-unfilled-tables": {
                "task": "tables.cancel_unfilled",
                "schedule": 10.0,
                "options": {"expires": 30},
            },
            "start-or-cancel-due-tournaments": {
                "task": "tournaments.start_or_cancel_due",
                "schedule": 10.0,
                "options": {"expires": 30},
            },
        },
    )
    return app


def _say_ready(**_: Any) -> None:
    """Create the worker's ready file, if it is asked for (``gin-service run`` waits for it
    before printing its banner: see :func:`service.config.worker_ready_file`)."""
    ready = worker_ready_file()
    if ready:
        Path(ready).touch()


def _before_the_pool_forks(**_: Any) -> None:
    """In the worker's main process, once the task modules are imported and before the pool's
    processes are forked: what each process would otherwise do on its own after the fork, on a
    worker that has just (re)started with a backlog waiting. SQLAlchemy's mappers are
    configured (else on each process's first query), and what importing left is moved out of
    the garbage collector's reach (``gc.freeze``, as gunicorn's master does): a process's
    collections never walk it, nor copy its pages (figures in docs/performance.md)."""
    from sqlalchemy.orm import configure_mappers

    configure_mappers()
    gc.collect()
    gc.freeze()


# Request ids into tasks, one log line and metrics per task, LOG_FORMAT/LOG_LEVEL logging,
# worker metrics on WORKER_METRICS_PORT.
task_signals.prepare_worker_metrics()
task_signals.connect()
signals.worker_ready.connect(_say_ready, weak=False, dispatch_uid="gin-ready-file")
signals.worker_init.connect(_before_the_pool_forks, weak=False, dispatch_uid="gin-before-fork")
app = make_celery()


def prepare_publishing(celery: Celery = app) -> None:
    """Do now what a process's first published task would otherwise pay for, short of opening a
    connection: Celery's modules (events included), the app's finalisation and task
    router, the broker transport's module and the (disabled) result backend.

    The web processes publish a task when a match ends (``outbox.relay``) or a webhook is due.
    Imported lazily, Celery made a gunicorn worker's first finished match wait for it, far
    longer than any later publish (figures in docs/performance.md). Called in the gunicorn
    master before it forks (``service.wsgi``, preloaded), every worker inherits it.
    Nothing here connects: the connection and producer pools are made in each worker by its
    first publish, never shared across a fork.
    """
    celery.finalize(auto=True)
    _ = celery.amqp.router
    _ = celery.events.Dispatcher  # send_task imports the events modules
    connection = celery.connection_for_write()
    try:
        _ = connection.transport  # imports and builds the transport; connects nothing
    finally:
        connection.release()
    _ = celery.backend
