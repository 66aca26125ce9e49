"""A thin, typed HTTP client of the Gin Rummy match service (httpx).

Every method is one API operation and declares it with :func:`operation` (method, path
template, the body fields and query parameters it may send, the TypedDict it answers with);
``tests/client/test_contract_sync.py`` checks each declaration against ``openapi.yaml``. Any
problem+json answer raises :class:`ApiProblem`. The client imports nothing of Flask,
SQLAlchemy or Celery: an integrator's code could use it as it is.

``transport`` lets tests run it in process (``httpx.WSGITransport(app=app)``).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, cast

import httpx

from service.client import types as t
from service.games.common.action_text import action_fields as action_body

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Endpoint:
    """What one client method calls: ``method`` and ``path`` as in openapi.yaml."""

    method: str
    path: str
    body: frozenset[str] = frozenset()
    query: frozenset[str] = frozenset()
    returns: type | None = None


def operation(
    method: str,
    path: str,
    *,
    body: tuple[str, ...] = (),
    query: tuple[str, ...] = (),
    returns: type | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare the API operation a client method calls (read by the contract test)."""

    def mark(method_: Callable[P, R]) -> Callable[P, R]:
        method_.__operation__ = Endpoint(  # type: ignore[attr-defined]
            method, path, frozenset(body), frozenset(query), returns
        )
        return method_

    return mark


def operations() -> dict[str, Endpoint]:
    """Every client method's declared operation, by method name."""
    return {
        name: member.__operation__
        for name, member in vars(GinClient).items()
        if hasattr(member, "__operation__")
    }


@dataclass
class FieldProblem:
    field: str
    message: str


@dataclass
class ApiProblem(Exception):
    """Raised when the service answers with an RFC 9457 problem (or any 4xx/5xx)."""

    status: int
    type: str
    title: str
    detail: str
    code: str | None = None
    fields: list[FieldProblem] = field(default_factory=list)
    body: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        named = "; ".join(f"{f.field}: {f.message}" for f in self.fields)
        return f"{self.status} {self.code or self.title}: {self.detail}" + (
            f" ({named})" if named else ""
        )


#: How long :meth:`GinClient.follow` waits before it resumes a dropped stream.
RECONNECT_SECONDS = 2.0


@dataclass(frozen=True)
class MatchEvent:
    """One server-sent event of a match's stream: ``update`` (``view``: the caller's view at
    version ``version``), ``end`` (the match has finished; ``view["settlement"]``:
    ``pending``, ``completed`` or None when none comes), ``settlement`` (the settlement is
    ready; ``view``: ``match_id``, ``version``, ``status``, ``settled_at`` and
    ``settlement``, the statement as :meth:`GinClient.settlement` answers the caller, None
    for a spectator) or ``error`` (``view``: the problem document that ended the stream). A
    tournament's stream sends ``update``, ``end`` and ``error``, ``view`` the tournament at
    its ``version``."""

    event: str
    version: int | None
    view: dict[str, Any]


def new_key() -> str:
    """A fresh Idempotency-Key."""
    return secrets.token_hex(16)


class GinClient:
    """One caller: an operator (API key) or a player (player token)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 40.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._http = http or httpx.Client(
            base_url=self.base_url,
            transport=transport,
            timeout=timeout,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )

    def as_(self, token: str) -> GinClient:
        """The same connection pool, with another credential (a player token)."""
        return GinClient(self.base_url, token, http=self._http)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GinClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- plumbing --------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Any:
        headers = {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if key is not None:
            headers["Idempotency-Key"] = key
        query = {k: v for k, v in (params or {}).items() if v is not None}
        response = self._http.request(method, path, json=json, params=query, headers=headers)
        if response.status_code >= 400:
            raise _problem(response)
        return response.json()

    # --- operators, players, money ---------------------------------------------------

    @operation("GET", "/healthz")
    def health(self) -> dict[str, Any]:
        return cast(dict[str, Any], self._call("GET", "/healthz"))

    @operation("GET", "/v1/operator")
    def operator(self) -> dict[str, Any]:
        return cast(dict[str, Any], self._call("GET", "/v1/operator"))

    @operation(
        "POST",
        "/v1/players",
        body=("external_id", "display_name", "display_currency"),
        returns=t.Player,
    )
    def create_player(
        self, external_id: str, display_name: str, display_currency: str | None = None
    ) -> t.Player:
        body = {
            "external_id": external_id,
            "display_name": display_name,
            "display_currency": display_currency,
        }
        return cast(t.Player, self._call("POST", "/v1/players", json=body))

    @operation("GET", "/v1/players/{player_id}", returns=t.Player)
    def player(self, player_id: str) -> t.Player:
        return cast(t.Player, self._call("GET", f"/v1/players/{player_id}"))

    @operation(
        "POST", "/v1/players/{player_id}/tokens", body=("ttl_seconds",), returns=t.PlayerToken
    )
    def player_token(self, player_id: str, ttl_seconds: int | None = None) -> t.PlayerToken:
        body = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        return cast(t.PlayerToken, self._call("POST", f"/v1/players/{player_id}/tokens", json=body))

    @operation(
        "POST",
        "/v1/players/{player_id}/deposits",
        body=("amount", "external_reference"),
        returns=t.Transaction,
    )
    def deposit(
        self,
        player_id: str,
        amount: int,
        currency: str,
        idempotency_key: str | None = None,
        external_reference: str | None = None,
    ) -> t.Transaction:
        return self._movement(
            "deposits", player_id, amount, currency, idempotency_key, external_reference
        )

    @operation(
        "POST",
        "/v1/players/{player_id}/withdrawals",
        body=("amount", "external_reference"),
        returns=t.Transaction,
    )
    def withdraw(
        self,
        player_id: str,
        amount: int,
        currency: str,
        idempotency_key: str | None = None,
        external_reference: str | None = None,
    ) -> t.Transaction:
        return self._movement(
            "withdrawals", player_id, amount, currency, idempotency_key, external_reference
        )

    def _movement(
        self,
        kind: str,
        player_id: str,
        amount: int,
        currency: str,
        key: str | None,
        reference: str | None,
    ) -> t.Transaction:
        body: dict[str, Any] = {"amount": {"amount": amount, "currency": currency}}
        if reference is not None:
            body["external_reference"] = reference
        return cast(
            t.Transaction,
            self._call("POST", f"/v1/players/{player_id}/{kind}", json=body, key=key or new_key()),
        )

    @operation("GET", "/v1/players/{player_id}/wallets/{currency}", returns=t.Wallet)
    def wallet(self, player_id: str, currency: str) -> t.Wallet:
        return cast(t.Wallet, self._call("GET", f"/v1/players/{player_id}/wallets/{currency}"))

    @operation("GET", "/v1/players/{player_id}/wallets", returns=t.Page)
    def wallets(self, player_id: str) -> list[t.Wallet]:
        page = self._call("GET", f"/v1/players/{player_id}/wallets")
        return cast(list[t.Wallet], page["data"])

    @operation(
        "GET",
        "/v1/players/{player_id}/entries",
        query=("limit", "starting_after", "ending_before", "currency"),
        returns=t.Page,
    )
    def entries(
        self,
        player_id: str,
        *,
        currency: str | None = None,
        limit: int | None = None,
        starting_after: str | None = None,
    ) -> t.Page:
        params = {"currency": currency, "limit": limit, "starting_after": starting_after}
        return cast(t.Page, self._call("GET", f"/v1/players/{player_id}/entries", params=params))

    # --- tables, seats, bots ---------------------------------------------------------

    @operation(
        "POST",
        "/v1/tables",
        body=(
            "name",
            "game",
            "seat_count",
            "format",
            "currency",
            "stake",
            "stake_per_point",
            "min_buyin",
            "max_buyin",
            "target",
            "min_balance",
            "fee",
            "ftk_winner_rule",
            "ftk_max_dead_hands",
            "line_bonus",
            "cap_mode",
            "ruleset",
            "rummy",
            "clock",
            "practice",
            "private",
            "spectator_delay",
        ),
        returns=t.Table,
    )
    def create_table(self, format: str, currency: str, **settings: Any) -> t.Table:
        """Open a table: ``settings`` are the other body fields (stake, fee, clock, ...)."""
        body = {"format": format, "currency": currency, **settings}
        return cast(t.Table, self._call("POST", "/v1/tables", json=body))

    @operation(
        "GET",
        "/v1/tables",
        query=(
            "format",
            "currency",
            "min_stake",
            "max_stake",
            "free_seats",
            "display_currency",
            "include_closed",
            "limit",
            "starting_after",
            "ending_before",
        ),
        returns=t.Page,
    )
    def lobby(self, **filters: Any) -> t.Page:
        params = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in filters.items()}
        return cast(t.Page, self._call("GET", "/v1/tables", params=params))

    @operation("GET", "/v1/tables/{table_id}", returns=t.Table)
    def table(self, table_id: str) -> t.Table:
        return cast(t.Table, self._call("GET", f"/v1/tables/{table_id}"))

    @operation(
        "POST",
        "/v1/tables/{table_id}/seats",
        body=("buyin", "invite_code", "client_seed"),
        returns=t.Table,
    )
    def join(
        self,
        table_id: str,
        *,
        buyin: int | None = None,
        invite_code: str | None = None,
        client_seed: str | None = None,
        idempotency_key: str | None = None,
    ) -> t.Table:
        body = {
            k: v
            for k, v in (
                ("buyin", buyin),
                ("invite_code", invite_code),
                ("client_seed", client_seed),
            )
            if v is not None
        }
        return cast(
            t.Table,
            self._call(
                "POST", f"/v1/tables/{table_id}/seats", json=body, key=idempotency_key or new_key()
            ),
        )

    @operation("DELETE", "/v1/tables/{table_id}/seats/me", returns=t.Table)
    def leave(self, table_id: str, idempotency_key: str | None = None) -> t.Table:
        return cast(
            t.Table,
            self._call(
                "DELETE", f"/v1/tables/{table_id}/seats/me", key=idempotency_key or new_key()
            ),
        )

    @operation("POST", "/v1/tables/{table_id}/seats/me/top-ups", body=("amount",), returns=t.Table)
    def top_up(self, table_id: str, amount: int, idempotency_key: str | None = None) -> t.Table:
        """A ``rummy_per_hand`` table: add ``amount`` to your table balance between hands."""
        return cast(
            t.Table,
            self._call(
                "POST",
                f"/v1/tables/{table_id}/seats/me/top-ups",
                json={"amount": amount},
                key=idempotency_key or new_key(),
            ),
        )

    @operation("PUT", "/v1/tables/{table_id}/seats/me/ready", body=("ready",), returns=t.Table)
    def set_ready(self, table_id: str, ready: bool) -> t.Table:
        """A ``rummy_per_hand`` table: sit in (``True``) or out of the next hands."""
        return cast(
            t.Table,
            self._call("PUT", f"/v1/tables/{table_id}/seats/me/ready", json={"ready": ready}),
        )

    @operation("POST", "/v1/tables/{table_id}/bots", body=("buyin", "display_name"), returns=t.Bot)
    def seat_bot(
        self,
        table_id: str,
        *,
        buyin: int | None = None,
        display_name: str | None = None,
        idempotency_key: str | None = None,
    ) -> t.Bot:
        body = {
            k: v for k, v in (("buyin", buyin), ("display_name", display_name)) if v is not None
        }
        return cast(
            t.Bot,
            self._call(
                "POST", f"/v1/tables/{table_id}/bots", json=body, key=idempotency_key or new_key()
            ),
        )

    @operation(
        "POST",
        "/v1/tournaments/{tournament_id}/bots",
        body=("display_name",),
        returns=t.TournamentBot,
    )
    def enter_bot(
        self,
        tournament_id: str,
        *,
        display_name: str | None = None,
        idempotency_key: str | None = None,
    ) -> t.TournamentBot:
        """Enter a practice bot in a practice tournament (its ``tournament`` after it)."""
        body = {} if display_name is None else {"display_name": display_name}
        return cast(
            t.TournamentBot,
            self._call(
                "POST",
                f"/v1/tournaments/{tournament_id}/bots",
                json=body,
                key=idempotency_key or new_key(),
            ),
        )

    @operation("GET", "/v1/tables/{table_id}/bots", returns=t.Page)
    def bots(self, table_id: str) -> list[t.Bot]:
        return cast(list[t.Bot], self._call("GET", f"/v1/tables/{table_id}/bots")["data"])

    # --- matches ---------------------------------------------------------------------

    @operation(
        "GET", "/v1/matches/{match_id}", query=("wait_for_version", "timeout"), returns=t.MatchView
    )
    def match(
        self, match_id: str, *, wait_for_version: int | None = None, timeout: int | None = None
    ) -> t.MatchView:
        """The caller's view; with ``wait_for_version`` it long-polls until the version
        exceeds it (or ``timeout`` seconds pass)."""
        params = {"wait_for_version": wait_for_version, "timeout": timeout}
        return cast(t.MatchView, self._call("GET", f"/v1/matches/{match_id}", params=params))

    @operation("GET", "/v1/matches/{match_id}/events", query=("after_version",))
    def follow(
        self,
        match_id: str,
        *,
        after_version: int | None = None,
        reconnect: bool = True,
        settlement: bool = True,
    ) -> Iterator[MatchEvent]:
        """The match's server-sent events (httpx streaming): an ``update`` with the caller's
        view at each change, ``end``, then, when one comes, ``settlement`` once the worker has
        settled the match (its last event). With ``settlement`` false it stops at ``end``.
        A dropped connection is resumed (with ``Last-Event-ID``: nothing is missed, the
        first event is the latest view, and ``end`` and ``settlement`` come again) unless
        ``reconnect`` is false; an ``error`` event (a revoked key, ...) ends it."""
        path = f"/v1/matches/{match_id}/events"
        return self._follow(path, after_version, reconnect, settlement)

    def _follow(
        self, path: str, last: int | None, reconnect: bool, settlement: bool = False
    ) -> Iterator[MatchEvent]:
        """A stream's events (a match's or a tournament's), resumed after ``last``; with
        ``settlement``, past ``end`` to a match's ``settlement`` when one is to come."""
        while True:
            headers = {"Accept": "text/event-stream"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                with self._http.stream("GET", path, headers=headers, timeout=None) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise _problem(response)
                    for event in _events(response.iter_lines()):
                        if event.version is not None:
                            last = event.version
                        yield event
                        if event.event in ("settlement", "error"):
                            return
                        if event.event == "end" and not (
                            settlement and event.view.get("settlement") is not None
                        ):
                            return
            except (httpx.TransportError, httpx.StreamError):
                if not reconnect:
                    raise
            if not reconnect:
                return
            time.sleep(RECONNECT_SECONDS)  # as the stream's ``retry`` asks

    @operation(
        "POST",
        "/v1/matches/{match_id}/actions",
        body=("action", "card", "melds", "expected_version"),
        returns=t.MatchView,
    )
    def act(
        self,
        match_id: str,
        action: str | Mapping[str, Any],
        expected_version: int,
        idempotency_key: str | None = None,
    ) -> t.MatchView:
        """Play ``action`` decided on ``expected_version``: one of the view's
        ``legal_actions`` as listed (``{"action": "DISCARD", "card": "TD"}``), or its text
        form (``"DISCARD TD"``)."""
        fields = action_body(action) if isinstance(action, str) else dict(action)
        body = {**fields, "expected_version": expected_version}
        return cast(
            t.MatchView,
            self._call("POST", f"/v1/matches/{match_id}/actions", json=body, key=idempotency_key),
        )

    @operation("GET", "/v1/matches/{match_id}/hands/{number}", returns=t.HandHistory)
    def hand_history(self, match_id: str, number: int) -> t.HandHistory:
        return cast(t.HandHistory, self._call("GET", f"/v1/matches/{match_id}/hands/{number}"))

    @operation("GET", "/v1/matches/{match_id}/settlement", returns=t.SettlementView)
    def settlement(self, match_id: str) -> t.SettlementView:
        return cast(t.SettlementView, self._call("GET", f"/v1/matches/{match_id}/settlement"))

    @operation(
        "GET", "/v1/settlements", query=("limit", "starting_after", "ending_before"), returns=t.Page
    )
    def settlements(self, *, limit: int | None = None, starting_after: str | None = None) -> t.Page:
        params = {"limit": limit, "starting_after": starting_after}
        return cast(t.Page, self._call("GET", "/v1/settlements", params=params))

    # --- seamless wallets -----------------------------------------------------------

    @operation("GET", "/v1/wallet-settings", returns=t.Page)
    def wallet_settings(self) -> list[t.WalletSettings]:
        page = self._call("GET", "/v1/wallet-settings")
        return cast(list[t.WalletSettings], page["data"])

    @operation(
        "PUT",
        "/v1/wallet-settings/{currency}",
        body=("mode", "url", "timeout_ms"),
        returns=t.WalletSettings,
    )
    def set_wallet_settings(
        self, currency: str, mode: str, url: str | None = None, timeout_ms: int | None = None
    ) -> t.WalletSettings:
        body: dict[str, Any] = {"mode": mode, "url": url}
        if timeout_ms is not None:
            body["timeout_ms"] = timeout_ms
        return cast(
            t.WalletSettings, self._call("PUT", f"/v1/wallet-settings/{currency}", json=body)
        )

    @operation(
        "POST",
        "/v1/wallet-settings/{currency}/rotate-secret",
        body=("grace_period_seconds",),
        returns=t.WalletSettings,
    )
    def rotate_wallet_secret(
        self, currency: str, grace_period_seconds: int | None = None
    ) -> t.WalletSettings:
        path = f"/v1/wallet-settings/{currency}/rotate-secret"
        body = (
            {} if grace_period_seconds is None else {"grace_period_seconds": grace_period_seconds}
        )
        return cast(t.WalletSettings, self._call("POST", path, json=body))

    @operation(
        "GET",
        "/v1/wallet-calls",
        query=("date", "state", "escalated", "player_id", "limit", "starting_after"),
        returns=t.Page,
    )
    def wallet_calls(self, **filters: Any) -> t.Page:
        """The wallet call report: ``date="YYYY-MM-DD"`` (a day's reconciliation),
        ``escalated=True`` (raised to operations), ``state``, ``player_id``, paging."""
        params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in filters.items()}
        return cast(t.Page, self._call("GET", "/v1/wallet-calls", params=params))

    # --- webhooks --------------------------------------------------------------------

    @operation(
        "POST",
        "/v1/webhook-endpoints",
        body=("url", "event_types", "description", "enabled"),
        returns=t.WebhookEndpoint,
    )
    def create_webhook_endpoint(
        self, url: str, event_types: list[str] | None = None, description: str = ""
    ) -> t.WebhookEndpoint:
        """A new endpoint; its ``secret`` is in this answer only."""
        body = {"url": url, "event_types": event_types, "description": description}
        return cast(t.WebhookEndpoint, self._call("POST", "/v1/webhook-endpoints", json=body))

    @operation("POST", "/v1/webhook-endpoints/{endpoint_id}/test", returns=t.WebhookDelivery)
    def send_test_webhook(self, endpoint_id: str) -> t.WebhookDelivery:
        """Send the endpoint a signed ``webhook.test`` event now: its delivery (202)."""
        path = f"/v1/webhook-endpoints/{endpoint_id}/test"
        return cast(t.WebhookDelivery, self._call("POST", path))

    @operation(
        "GET",
        "/v1/webhook-endpoints/{endpoint_id}/deliveries",
        query=("status", "limit", "starting_after"),
        returns=t.Page,
    )
    def webhook_deliveries(self, endpoint_id: str, **filters: Any) -> t.Page:
        """The endpoint's delivery log, newest first, each delivery with its attempts."""
        path = f"/v1/webhook-endpoints/{endpoint_id}/deliveries"
        return cast(t.Page, self._call("GET", path, params=filters))

    @operation("POST", "/v1/webhook-deliveries/{delivery_id}/redeliver", returns=t.WebhookDelivery)
    def redeliver_webhook(self, delivery_id: str) -> t.WebhookDelivery:
        path = f"/v1/webhook-deliveries/{delivery_id}/redeliver"
        return cast(t.WebhookDelivery, self._call("POST", path))

    # --- tournaments -----------------------------------------------------------------

    @operation(
        "POST",
        "/v1/tournaments",
        body=(
            "name",
            "kind",
            "game",
            "seat_count",
            "format",
            "target",
            "rummy",
            "clock",
            "currency",
            "practice",
            "buy_in",
            "fee",
            "entrants",
            "min_entrants",
            "starts_at",
            "payout_table",
            "registration_seconds",
        ),
        returns=t.Tournament,
    )
    def create_tournament(
        self, format: str, currency: str, buy_in: int, entrants: int | None = None, **fields: Any
    ) -> t.Tournament:
        """Open a tournament: a knockout (``entrants`` 4, 8, 16 or 32) or, with
        ``kind="single_table"``, a table of ``game`` (its ``entrants`` the seat count, may be
        left out); with ``starts_at`` (RFC 3339) a scheduled one. ``fields`` are the other
        body fields (fee, payout_table, target, seat_count, min_entrants, ...)."""
        body = {
            "format": format,
            "currency": currency,
            "buy_in": buy_in,
            **({} if entrants is None else {"entrants": entrants}),
            **fields,
        }
        return cast(t.Tournament, self._call("POST", "/v1/tournaments", json=body))

    @operation(
        "GET",
        "/v1/tournaments",
        query=("status", "kind", "game", "currency", "limit", "starting_after", "ending_before"),
        returns=t.Page,
    )
    def tournaments(self, **filters: Any) -> t.Page:
        return cast(t.Page, self._call("GET", "/v1/tournaments", params=filters))

    @operation("GET", "/v1/tournaments/{tournament_id}", returns=t.Tournament)
    def tournament(self, tournament_id: str) -> t.Tournament:
        return cast(t.Tournament, self._call("GET", f"/v1/tournaments/{tournament_id}"))

    @operation("GET", "/v1/tournaments/{tournament_id}/events", query=("after_version",))
    def follow_tournament(
        self, tournament_id: str, *, after_version: int | None = None, reconnect: bool = True
    ) -> Iterator[MatchEvent]:
        """The tournament's server-sent events, until it has finished or been cancelled: an
        ``update`` (``view``: the tournament as :meth:`tournament` answers it, ``version``
        its version) at each change, then ``end``. Resumed after a dropped connection as
        :meth:`follow` is."""
        return self._follow(f"/v1/tournaments/{tournament_id}/events", after_version, reconnect)

    @operation("POST", "/v1/tournaments/{tournament_id}/entries", returns=t.Tournament)
    def register(self, tournament_id: str, idempotency_key: str | None = None) -> t.Tournament:
        """Register (a player's client): the entry is held from its available funds."""
        return cast(
            t.Tournament,
            self._call(
                "POST",
                f"/v1/tournaments/{tournament_id}/entries",
                key=idempotency_key or new_key(),
            ),
        )

    @operation("DELETE", "/v1/tournaments/{tournament_id}/entries/me", returns=t.Tournament)
    def unregister(self, tournament_id: str, idempotency_key: str | None = None) -> t.Tournament:
        return cast(
            t.Tournament,
            self._call(
                "DELETE",
                f"/v1/tournaments/{tournament_id}/entries/me",
                key=idempotency_key or new_key(),
            ),
        )

    @operation("POST", "/v1/tournaments/{tournament_id}/cancel", returns=t.Tournament)
    def cancel_tournament(
        self, tournament_id: str, idempotency_key: str | None = None
    ) -> t.Tournament:
        return cast(
            t.Tournament,
            self._call(
                "POST",
                f"/v1/tournaments/{tournament_id}/cancel",
                key=idempotency_key or new_key(),
            ),
        )

    @operation("GET", "/v1/tournaments/{tournament_id}/statement", returns=t.TournamentStatement)
    def tournament_statement(self, tournament_id: str) -> t.TournamentStatement:
        return cast(
            t.TournamentStatement,
            self._call("GET", f"/v1/tournaments/{tournament_id}/statement"),
        )

    # --- audit -----------------------------------------------------------------------

    @operation("GET", "/v1/audit/ledger", returns=t.LedgerAudit)
    def audit_ledger(self) -> t.LedgerAudit:
        return cast(t.LedgerAudit, self._call("GET", "/v1/audit/ledger"))

    @operation("GET", "/v1/audit/settlements/{match_id}", returns=t.SettlementAudit)
    def audit_settlement(self, match_id: str) -> t.SettlementAudit:
        return cast(t.SettlementAudit, self._call("GET", f"/v1/audit/settlements/{match_id}"))

    @operation("GET", "/v1/audit/tournaments/{tournament_id}", returns=t.TournamentAudit)
    def audit_tournament(self, tournament_id: str) -> t.TournamentAudit:
        return cast(t.TournamentAudit, self._call("GET", f"/v1/audit/tournaments/{tournament_id}"))


def _events(lines: Iterator[str]) -> Iterator[MatchEvent]:
    """The events in a ``text/event-stream`` body's lines (comments and ``retry`` skipped)."""
    fields: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            if name:
                fields[name] = value.removeprefix(" ")
            continue
        if "event" in fields or "data" in fields:
            text = fields.get("id", "")
            yield MatchEvent(
                fields.get("event", "message"),
                int(text) if text.isdigit() else None,
                json.loads(fields.get("data") or "{}"),
            )
        fields = {}


def _problem(response: httpx.Response) -> ApiProblem:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    errors = body.get("errors") or []
    return ApiProblem(
        status=response.status_code,
        type=str(body.get("type", "about:blank")),
        title=str(body.get("title", response.reason_phrase)),
        detail=str(body.get("detail", response.text[:200])),
        code=body.get("code"),
        fields=[
            FieldProblem(str(e.get("field")), str(e.get("message")))
            for e in errors
            if isinstance(e, dict)
        ],
        body=body,
    )
