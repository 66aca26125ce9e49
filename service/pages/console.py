"""The operator console at ``/console``: an operator signs in with an API key and sees its
own tables, matches, tournaments, players, settlements, money and webhooks (docs/pages.md,
"Operator console").

Server-rendered forms, no script. What it reads and the few safe actions it takes (open a
table, send a webhook test event, redeliver, revoke an API key; nothing that moves money) go
through the use cases the API calls, with the same principal, so the console shows exactly
what the operator's key may see through the API.

**The session.** Signing in checks the key like the API does; the browser then holds one
cookie, ``gin_console``: ``{key digest, CSRF token}`` signed (itsdangerous, the app's
``SECRET_KEY``, timestamped, at most :data:`SESSION_HOURS` old), ``HttpOnly``,
``SameSite=Strict``, ``Secure`` when served over HTTPS, scoped to ``/console``. The key itself
is never stored: the cookie holds its SHA-256 digest, the value the service stores for it, so
a copied cookie opens this console but no API call. Every request checks the digest against
the active keys (:func:`~service.usecases.auth.authenticate_key_hash`, the lookup of every API
request), so revoking the key ends its sessions at their next request. Signing out deletes the
cookie. Every POST carries the session's CSRF token in a hidden field and is refused (403)
without it; the sign-in form has its own token in a short-lived cookie (double submit).
"""

from __future__ import annotations

import csv
import hmac
import io
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, TypeVar
from urllib.parse import urlencode

from flask import (
    Blueprint,
    Response,
    current_app,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.wrappers import Response as BaseResponse

from service.api import render
from service.api.context import db_session
from service.api.tournaments import tournament_json
from service.api.webhooks import queue_delivery
from service.clock import rfc3339, utcnow
from service.errors import (
    FieldError,
    Forbidden,
    NotFound,
    ServiceError,
    Unauthenticated,
    ValidationFailed,
)
from service.ledger.money import EXPONENTS, PRACTICE_CURRENCY
from service.outbound.wallet_protocol import export_lines, reconcile
from service.pages import page_headers
from service.practice import PLAY_MONEY, TOKEN_TTL_SECONDS
from service.usecases import (
    audit,
    console,
    limits,
    operators,
    play,
    players,
    seamless,
    settlement,
    tables,
    tournament_audit,
    tournaments,
    unit_of_work,
    wallets,
    webhooks,
)
from service.usecases.auth import Principal, authenticate_key_hash, hash_api_key

T = TypeVar("T")

COOKIE = "gin_console"
SIGN_IN_COOKIE = "gin_console_sign_in"
SESSION_HOURS = 12
COOKIE_PATH = "/console"
CSRF_FIELD = "csrf_token"

blp = Blueprint("console", __name__, url_prefix="/console")
blp.after_request(page_headers)


@blp.after_request
def _not_stored(response: Response) -> Response:
    """An operator's own data: kept in no cache, the browser's included."""
    response.headers["Cache-Control"] = "no-store"
    return response


#: What a page says after a redirect (``?notice=...``): the codes are ours, never free text.
NOTICES = {
    "signed_out": "You are signed out.",
    "revoked": "Your session ended: its API key is unknown or was revoked.",
    "expired": "Your session has expired: sign in again.",
    "table_opened": "The table is open.",
    "test_sent": "A test event is on its way.",
    "redelivered": "The delivery will be attempted again now.",
    "key_revoked": "The API key is revoked.",
}


@dataclass(frozen=True)
class ConsoleSession:
    principal: Principal
    csrf_token: str


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="gin-console-session")


def _unit(work: Callable[[], T]) -> T:
    return unit_of_work.run(db_session(), work)


def _signed_in() -> ConsoleSession:
    found: ConsoleSession = g.console
    return found


def _who() -> Principal:
    return _signed_in().principal


def _cookie_args() -> dict[str, Any]:
    return {
        "path": COOKIE_PATH,
        "httponly": True,
        "samesite": "Strict",
        "secure": request.is_secure,
    }


def _to_sign_in(notice: str) -> BaseResponse:
    response = redirect(url_for("console.sign_in", notice=notice))
    response.delete_cookie(COOKIE, **_cookie_args())
    return response


@blp.before_request
def _check_session() -> BaseResponse | None:
    """Every page but the sign-in form needs a live session; every POST its CSRF token."""
    if request.endpoint == "console.sign_in":
        return None
    raw = request.cookies.get(COOKIE)
    if raw is None:
        return redirect(url_for("console.sign_in"))
    try:
        stored = _serializer().loads(raw, max_age=SESSION_HOURS * 3600)
        key_hash, csrf_token = str(stored["k"]), str(stored["c"])
    except BadSignature:
        return _to_sign_in("expired")
    except (KeyError, TypeError):
        return _to_sign_in("expired")
    try:
        who = _unit(lambda: authenticate_key_hash(db_session(), key_hash))
    except Unauthenticated:
        return _to_sign_in("revoked")
    g.console = ConsoleSession(who, csrf_token)
    if request.method == "POST":
        _check_csrf(csrf_token)
    return None


def _check_csrf(expected: str) -> None:
    sent = request.form.get(CSRF_FIELD, "")
    if not (sent and hmac.compare_digest(sent, expected)):
        raise Forbidden("The form's security token is missing or stale: reload the page and retry.")


@blp.app_template_filter("money")
def money_text(amount: int | None, currency: str) -> str:
    """``1234, "EUR"`` as ``12.34 EUR`` (minor units shown at the currency's exponent)."""
    if amount is None:
        return "—"
    places = EXPONENTS.get(currency, 0)
    if places == 0:
        return f"{amount} {currency}"
    sign = "-" if amount < 0 else ""
    whole, part = divmod(abs(amount), 10**places)
    return f"{sign}{whole}.{part:0{places}d} {currency}"


@blp.app_template_filter("when")
def when_text(moment: Any) -> str:
    return "—" if moment is None else rfc3339(moment)


@blp.context_processor
def _console_context() -> dict[str, Any]:
    session = g.get("console")
    notice = NOTICES.get(request.args.get("notice", ""))
    return {
        "signed_in": session is not None,
        "operator_id": None if session is None else session.principal.operator_id,
        "csrf_token": None if session is None else session.csrf_token,
        "notice": notice,
    }


@blp.errorhandler(ServiceError)
def _service_error(error: ServiceError) -> tuple[str, int]:
    return render_template("pages/console/error.html", error=error), error.status


# --- signing in and out ------------------------------------------------------------------


@blp.route("/sign-in", methods=["GET", "POST"])
def sign_in() -> BaseResponse | str:
    """The sign-in form (GET) and its submission (POST): an API key in, a session cookie out."""
    if request.method == "GET":
        token = secrets.token_urlsafe(32)
        page = render_template("pages/console/sign_in.html", sign_in_token=token, error=None)
        response = Response(page, mimetype="text/html")
        response.set_cookie(SIGN_IN_COOKIE, token, max_age=3600, **_cookie_args())
        return response
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    sent = request.form.get(CSRF_FIELD, "")
    if not (expected and sent and hmac.compare_digest(sent, expected)):
        raise Forbidden("The sign-in form has expired: reload the page and sign in again.")
    key = request.form.get("api_key", "").strip()
    try:
        if not key:
            raise Unauthenticated("Enter an API key.")
        key_hash = hash_api_key(key)
        _unit(lambda: authenticate_key_hash(db_session(), key_hash))
    except Unauthenticated:
        message = "That API key is unknown or revoked. Check it and try again."
        if not key:
            message = "Enter an operator API key."
        # The form again, with the reason (200: a browser logs any 4xx page as an error).
        return render_template("pages/console/sign_in.html", sign_in_token=sent, error=message)
    value = _serializer().dumps({"k": key_hash, "c": secrets.token_urlsafe(32)})
    signed_in = redirect(url_for("console.dashboard"))
    signed_in.set_cookie(COOKIE, value, max_age=SESSION_HOURS * 3600, **_cookie_args())
    signed_in.delete_cookie(SIGN_IN_COOKIE, **_cookie_args())
    return signed_in


@blp.post("/sign-out")
def sign_out() -> BaseResponse:
    return _to_sign_in("signed_out")


# --- dashboard ---------------------------------------------------------------------------


@blp.get("/")
def dashboard() -> str:
    found = _unit(lambda: console.dashboard(db_session(), _who(), utcnow()))
    return render_template("pages/console/dashboard.html", board=found)


@blp.post("/audit")
def audit_books() -> BaseResponse:
    """Audit the operator's books now (the dashboard shows the last audit)."""
    operator_id = _who().operator_id
    _unit(lambda: audit.record_ledger_audit(db_session(), operator_id, utcnow()))
    return redirect(url_for("console.dashboard"))


# --- players -----------------------------------------------------------------------------


@blp.get("/players")
def players_page() -> str:
    query = request.args.get("q", "").strip()
    found = _unit(lambda: console.find_players(db_session(), _who(), query)) if query else []
    return render_template("pages/console/players.html", query=query, found=found)


@blp.get("/players/<player_id>")
def player_page(player_id: str) -> str:
    session, who, now = db_session(), _who(), utcnow()

    def read() -> dict[str, Any]:
        player = players.get_player(session, who, player_id)
        held = wallets.list_wallets(session, who, player_id)
        entries = wallets.list_entries(session, who, player_id, None, 50, None, None)
        return {
            "player": player,
            "wallets": held,
            "entries": entries.data,
            "limits": [
                (w.currency, limits.get_limits(session, who, player_id, w.currency, now))
                for w in held
            ],
            "matches": console.player_matches(session, who, player_id),
            "excluded": player.self_excluded_until is not None and player.self_excluded_until > now,
        }

    return render_template("pages/console/player.html", **_unit(read))


# --- tables and matches ------------------------------------------------------------------

TABLE_FORMATS = ("match_play", "first_to_knock", "money_play", "classic")


@blp.get("/tables")
def tables_page() -> str:
    def read() -> Any:
        return tables.list_tables(
            db_session(),
            _who(),
            format=None,
            currency=None,
            min_stake=None,
            max_stake=None,
            free_seats=None,
            include_closed=False,
            limit=100,
            starting_after=None,
            ending_before=None,
        ).data

    return render_template(
        "pages/console/tables.html", lobby=_unit(read), formats=TABLE_FORMATS, errors=[]
    )


@blp.post("/tables")
def open_table() -> BaseResponse | tuple[str, int]:
    """Open a table: a name, a format, a currency and a stake (the API's other settings keep
    their defaults)."""
    form = request.form
    name = form.get("name", "").strip() or "Table"
    fmt, currency = form.get("format", ""), form.get("currency", "").strip().upper()
    stake_text = form.get("stake", "").strip()
    if not stake_text.isdigit():
        message = "The stake is a whole number of minor units (cents)."
        raise ValidationFailed(message, errors=[FieldError("stake", message)])
    stake = int(stake_text)

    def work() -> Any:
        settings = tables.settings_from(
            {"format": fmt, "stake": stake}, practice=False, currency=currency
        )
        return tables.create_table(
            db_session(),
            _who(),
            name=name,
            currency=currency,
            settings=settings,
            practice=False,
            private=False,
            now=utcnow(),
        )

    _unit(work)
    return redirect(url_for("console.tables_page", notice="table_opened"))


MATCH_STATUSES = ("playing", "waiting", "finished", "void", "cancelled")


@blp.get("/matches")
def matches_page() -> str:
    status = request.args.get("status") or "finished"
    if status not in MATCH_STATUSES:
        status = "finished"
    found = _unit(lambda: console.list_matches(db_session(), _who(), status))
    return render_template(
        "pages/console/matches.html", matches=found, status=status, statuses=MATCH_STATUSES
    )


@blp.get("/matches/<match_id>")
def match_page(match_id: str) -> str:
    session, who = db_session(), _who()

    def read() -> dict[str, Any]:
        row = console.get_match(session, who, match_id)
        found: dict[str, Any] = {"match": row, "hands": console.match_hands(session, who, match_id)}
        found["settled"] = None
        # A tournament's match is recorded, not settled: its tournament pays at its end.
        found["tournament_id"] = tournaments.tournament_of_match(session, match_id)
        if row.settled_at is not None and found["tournament_id"] is None:
            [view] = settlement.settlement_views(
                session, [settlement.get_settlement(session, who, match_id)]
            )
            found["settled"] = render.settlement(view)
        # An operator is no player: its view of a live match is a spectator's (no hand).
        found["view"] = play.get_view(session, who, match_id) if row.status == "playing" else None
        return found

    return render_template("pages/console/match.html", **_unit(read))


# --- settlements -------------------------------------------------------------------------


def _day(name: str, default: date) -> date:
    text = request.args.get(name, "").strip()
    if not text:
        return default
    try:
        return date.fromisoformat(text)
    except ValueError:
        message = f"{text!r} is not a day (YYYY-MM-DD)."
        raise ValidationFailed(message, errors=[FieldError(name, message)]) from None


def _range() -> tuple[date, date]:
    today = utcnow().date()
    return _day("since", today - timedelta(days=6)), _day("until", today)


@blp.get("/settlements")
def settlements_page() -> str:
    since, until = _range()
    found = _unit(lambda: console.settlements_between(db_session(), _who(), since, until))
    return render_template(
        "pages/console/settlements.html",
        settlements=list(reversed(found)),
        since=since,
        until=until,
    )


@blp.get("/settlements/export.<kind>")
def export_settlements(kind: str) -> Response:
    """The settlements of a date range as CSV (one row per seat) or JSON (the API's form)."""
    if kind not in ("csv", "json"):
        raise NotFound(f"No export as {kind!r}: csv or json.")
    since, until = _range()
    session, who = db_session(), _who()

    def read() -> list[dict[str, Any]]:
        found = console.settlements_between(session, who, since, until)
        return [render.settlement(view) for view in settlement.settlement_views(session, found)]

    shown = _unit(read)
    name = f"settlements-{since}-{until}.{kind}"
    if kind == "json":
        body = json.dumps({"since": str(since), "until": str(until), "data": shown}, indent=2)
        mimetype = "application/json"
    else:
        body, mimetype = _settlements_csv(shown), "text/csv"
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


CSV_COLUMNS = (
    "settlement_id",
    "match_id",
    "created_at",
    "currency",
    "seat",
    "player_id",
    "escrow",
    "payout",
    "net",
    "fee",
    "winner",
    "void",
    "ledger_transaction_id",
)


def _settlements_csv(shown: list[dict[str, Any]]) -> str:
    """One row per seat of each settlement; amounts in minor units; the fee on each row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for s in shown:
        for seat, player in enumerate(s["players"]):
            writer.writerow(
                (
                    s["id"],
                    s["match_id"],
                    s["created_at"],
                    s["currency"],
                    seat,
                    player,
                    s["escrow"][seat]["amount"],
                    s["payouts"][seat]["amount"],
                    s["net"][seat]["amount"],
                    s["fee"]["amount"],
                    "" if s["winner"] is None else s["winner"],
                    "true" if s["void"] else "false",
                    s["ledger_transaction_id"],
                )
            )
    return out.getvalue()


@blp.get("/settlements/<match_id>")
def settlement_page(match_id: str) -> str:
    session, who = db_session(), _who()

    def read() -> dict[str, Any]:
        [view] = settlement.settlement_views(
            session, [settlement.get_settlement(session, who, match_id)]
        )
        return {
            "settlement": render.settlement(view),
            "verdict": audit.audit_match(session, who, match_id),
        }

    return render_template("pages/console/settlement.html", **_unit(read))


# --- tournaments -------------------------------------------------------------------------

TOURNAMENT_STATUSES = ("open", "running", "finished", "cancelled")


@blp.get("/practice")
def practice_page() -> str:
    """Where the operator issues a person a practice link for ``/play``."""
    return render_template("pages/console/practice.html", issued=None)


@blp.post("/practice")
def issue_practice_link() -> str:
    """A new practice player (a guest with :data:`~service.practice.PLAY_MONEY` of play money,
    which is no money: a play-money deposit, as the practice table's own command makes) and
    its token, shown once as a ``/play`` link whose fragment never reaches the server."""
    name = request.form.get("name", "").strip() or "Guest"
    if len(name) > 100:
        message = "A name has at most 100 characters."
        raise ValidationFailed(message, errors=[FieldError("name", message)])
    session, who, now = db_session(), _who(), utcnow()

    def work() -> Any:
        player = players.create_player(
            session, who, f"practice-{secrets.token_hex(6)}", name, None, now
        )
        wallets.deposit(
            session, who, player.id, PRACTICE_CURRENCY, PLAY_MONEY, f"practice-{player.id}", now
        )
        return players.mint_token(
            session, who, player.id, current_app.config["SECRET_KEY"], TOKEN_TTL_SECONDS, now
        )

    minted = _unit(work)
    link = f"{request.host_url.rstrip('/')}/play#token={minted.token}"
    return render_template(
        "pages/console/practice.html",
        issued={"link": link, "player_id": minted.player_id, "expires_at": minted.expires_at},
    )


@blp.get("/tournaments")
def tournaments_page() -> str:
    """The operator's tournaments, newest first (every status, or the one asked for)."""
    status = request.args.get("status") or None
    if status not in TOURNAMENT_STATUSES:
        status = None

    def read() -> list[dict[str, Any]]:
        found = tournaments.list_tournaments(
            db_session(),
            _who(),
            status=status,
            game=None,
            currency=None,
            limit=100,
            starting_after=None,
            ending_before=None,
        )
        return [tournament_json(view) for view in found.data]

    return render_template(
        "pages/console/tournaments.html",
        tournaments=_unit(read),
        status=status,
        statuses=TOURNAMENT_STATUSES,
    )


@blp.get("/tournaments/<tournament_id>")
def tournament_page(tournament_id: str) -> str:
    """One tournament: its bracket (or table) with each match linked, its standings, its
    entries, its statement line by line and its audit's verdict."""
    session, who = db_session(), _who()

    def read() -> dict[str, Any]:
        shown = tournament_json(tournaments.get_tournament(session, who, tournament_id))
        _, lines = tournaments.statement(session, who, tournament_id)
        players = {e["seat"]: e["player_id"] for e in shown["entries"]}
        return {
            "t": shown,
            "players": players,
            "lines": lines,
            "held": sum(line.amount for line in lines),
            "verdict": tournament_audit.audit_one(session, who, tournament_id),
        }

    return render_template("pages/console/tournament.html", **_unit(read))


# --- money -------------------------------------------------------------------------------


@blp.route("/money", methods=["GET", "POST"])
def money_page() -> tuple[str, int] | str:
    """The ledger audit of the operator's books, and the seamless wallet report of a day,
    with its differences from the operator's export when one is uploaded (POST)."""
    session, who = db_session(), _who()
    day = (request.form.get("date") or request.args.get("date") or "").strip()
    day = day or str(utcnow().date())
    books = _unit(lambda: audit.record_ledger_audit(session, who.operator_id, utcnow()))
    lines = _unit(lambda: seamless.report(session, who.operator_id, day))
    diff, export_error = None, None
    if request.method == "POST":
        upload = request.files.get("export")
        try:
            raw = upload.read().decode("utf-8") if upload is not None else ""
            diff = reconcile(lines, export_lines(raw))
        except (UnicodeDecodeError, ValueError) as exc:
            export_error = f"The export could not be read: {exc}"
    page = render_template(
        "pages/console/money.html",
        books=books,
        day=day,
        lines=lines,
        diff=diff,
        export_error=export_error,
    )
    return (page, 422) if export_error else page


# --- webhooks ----------------------------------------------------------------------------


@blp.get("/webhooks")
def webhooks_page() -> str:
    session, who = db_session(), _who()

    def read() -> dict[str, Any]:
        return {
            "endpoints": webhooks.list_endpoints(session, who, 100, None, None).data,
            "failing": {f.endpoint.id: f for f in console.failing_endpoints(session, who)},
        }

    return render_template("pages/console/webhooks.html", **_unit(read))


@blp.get("/webhooks/<endpoint_id>")
def webhook_page(endpoint_id: str) -> str:
    session, who = db_session(), _who()

    def read() -> dict[str, Any]:
        return {
            "endpoint": webhooks.get_endpoint(session, who, endpoint_id),
            "deliveries": webhooks.list_deliveries(session, who, endpoint_id, 50, None, None).data,
        }

    return render_template("pages/console/webhook.html", **_unit(read))


@blp.post("/webhooks/<endpoint_id>/test")
def send_test_event(endpoint_id: str) -> BaseResponse:
    view = _unit(lambda: webhooks.send_test_event(db_session(), _who(), endpoint_id, utcnow()))
    queue_delivery(view.delivery.id)
    return redirect(url_for("console.webhook_page", endpoint_id=endpoint_id, notice="test_sent"))


@blp.post("/webhook-deliveries/<delivery_id>/redeliver")
def redeliver(delivery_id: str) -> BaseResponse:
    view = _unit(lambda: webhooks.redeliver(db_session(), _who(), delivery_id, utcnow()))
    queue_delivery(view.delivery.id)
    target = url_for("console.webhook_page", endpoint_id=view.delivery.endpoint_id)
    return redirect(f"{target}?{urlencode({'notice': 'redelivered'})}")


# --- API keys ----------------------------------------------------------------------------


@blp.get("/api-keys")
def api_keys_page() -> str:
    found = _unit(lambda: operators.list_api_keys(db_session(), _who().operator_id))
    return render_template("pages/console/api_keys.html", keys=found)


@blp.post("/api-keys/<key_id>/revoke")
def revoke_api_key(key_id: str) -> BaseResponse:
    operator_id = _who().operator_id
    _unit(lambda: operators.revoke_api_key(db_session(), operator_id, key_id, utcnow()))
    return redirect(url_for("console.api_keys_page", notice="key_revoked"))
