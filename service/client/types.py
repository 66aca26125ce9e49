"""The shapes the API answers with, as TypedDicts (the fields the client's users read; the
server may send more, see openapi.yaml)."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class Money(TypedDict):
    amount: int
    currency: str


class Player(TypedDict):
    id: str
    external_id: str
    display_name: str
    display_currency: str | None


class PlayerToken(TypedDict):
    token: str
    player_id: str
    expires_at: str


class Transaction(TypedDict):
    id: str
    kind: str
    amount: Money


class Wallet(TypedDict):
    player_id: str
    currency: str
    available: Money
    held: Money
    balance: Money
    operator_balance: NotRequired[Money | None]  # a seamless operator's own figure


class WalletSettings(TypedDict):
    currency: str
    mode: str  # transfer or seamless
    url: str | None
    timeout_ms: int
    secret: NotRequired[str]  # only when first made seamless, and after a rotation
    previous_secret_expires_at: str | None


class WalletCall(TypedDict):
    id: str
    kind: str  # debit or credit
    reason: str
    player_id: str
    amount: Money
    round_id: str
    table_id: str
    match_id: str | None
    state: str
    rollback_id: str | None
    references: list[str]
    declined: str | None
    attempts: int
    escalated_at: str | None
    created_at: str
    completed_at: str | None


class Entry(TypedDict):
    id: str
    transaction_id: str
    amount: Money


class Seat(TypedDict):
    seat: int
    player_id: str
    escrow: Money  # a rummy_per_hand seat's table balance
    ready: bool  # rummy_per_hand: dealt into the next hand


class Table(TypedDict):
    id: str
    match_id: str
    game: str  # gin, gin_three, gin_partnership, rummy
    seat_count: int
    format: str
    currency: str
    practice: bool
    private: bool
    spectator_delay: dict[str, int] | None  # {"moves": N} or {"seconds": S}; None: live
    status: str
    seats: list[Seat]
    free_seats: int
    settings: dict[str, Any]
    invite_code: NotRequired[str | None]


class Bot(TypedDict):
    player_id: str
    table_id: str
    match_id: str
    strategy: str
    created_at: str
    table: NotRequired[Table]


class LegalAction(TypedDict):
    """A legal action as the view lists it: the body of ``act`` but for the version."""

    action: str
    card: NotRequired[str]


class HandView(TypedDict):
    """One hand as a player sees it: ``legal_actions`` only for the player to act (none
    once the hand or the match is over), ``deadwood`` of the player's own cards."""

    phase: str
    dealer: int
    to_act: int | None
    knock_limit: int
    stock_count: int
    discard_pile: list[str]
    log: list[dict[str, Any]]
    seat: NotRequired[int]
    hand: NotRequired[list[str]]
    deadwood: NotRequired[int]
    legal_actions: NotRequired[list[LegalAction]]


class MatchView(TypedDict):
    id: str
    table_id: str
    status: str
    version: int
    format: str
    currency: str
    you: int | None
    seats: list[dict[str, Any]]
    finished_at: str | None
    hand_number: int | None
    hand: HandView | None
    scores: dict[str, Any] | None
    result: dict[str, Any] | None
    settlement: dict[str, Any] | None  # {"status": "completed", "settled_at": ...} once settled
    game: NotRequired[str]  # every game but two-player Gin
    play: NotRequired[dict[str, Any]]  # the game's own view (every game but two-player Gin)


class HandHistory(TypedDict):
    id: str
    match_id: str
    number: int
    fairness: dict[str, Any]
    verify_url: str
    history: dict[str, Any]


class SettlementView(TypedDict):
    id: str
    match_id: str
    currency: str
    ledger_transaction_id: str
    created_at: str
    seats: list[int]
    winner: int | None
    void: bool
    players: list[str]
    escrow: list[Money]
    payouts: list[Money]
    net: list[Money]
    fee: Money
    statement: dict[str, Any]


class Discrepancy(TypedDict):
    field: str
    expected: Any
    actual: Any


class LedgerAudit(TypedDict):
    ok: bool
    accounts_checked: int
    transactions_checked: int
    entries_checked: int
    settled_matches_checked: int
    discrepancies: list[Discrepancy]


class SettlementAudit(TypedDict):
    ok: bool
    match_id: str
    hands_replayed: int
    discrepancies: list[Discrepancy]


class TournamentEntry(TypedDict):
    seat: int
    player_id: str
    state: str  # registered, playing, knocked_out, champion, placed, refunded
    prize: Money | None
    first_place: int | None
    last_place: int | None


class TournamentPairing(TypedDict):
    match_no: int
    match_id: str | None
    first_seat: int
    second_seat: int | None  # None: a bye (round 1)
    winner_seat: int | None


class TournamentRound(TypedDict):
    round: int
    matches: list[TournamentPairing]


class TournamentTable(TypedDict):
    match_id: str
    seats: list[int]  # the entrants' seats in table seat order


class TournamentStanding(TypedDict):
    seats: list[int]
    first_place: int
    last_place: int


class Tournament(TypedDict):
    id: str
    kind: str  # knockout, single_table
    game: str
    status: str  # open, running, finished, cancelled
    version: int  # grows with each change: its event stream's event ids
    format: str
    currency: str
    buy_in: Money
    fee: Money
    prize_pool: Money
    entrants: int
    min_entrants: int
    entries_taken: int
    payout_table: str
    commitment: str
    server_seed: str | None
    draw: list[int] | None
    entries: list[TournamentEntry]
    rounds: list[TournamentRound]
    table: TournamentTable | None
    standings: list[TournamentStanding]
    starts_at: str | None
    you: int | None  # the caller's seat (a player token with an entry)


class TournamentBot(TypedDict):
    player_id: str
    tournament_id: str
    strategy: str
    created_at: str
    tournament: Tournament


class TournamentStatementLine(TypedDict):
    transaction_id: str
    kind: str  # entry, refund, fee, prize, fee_returned, fee_refund
    player_id: str | None
    amount: Money


class TournamentStatement(TypedDict):
    tournament_id: str
    status: str
    lines: list[TournamentStatementLine]
    held: Money


class TournamentAudit(TypedDict):
    ok: bool
    tournament_id: str
    matches_checked: int
    discrepancies: list[Discrepancy]


class WebhookEndpoint(TypedDict):
    id: str
    url: str
    description: str
    event_types: list[str] | None  # None: every type
    enabled: bool
    secret: NotRequired[str]  # only when created, and after a rotation
    previous_secret_expires_at: str | None


class WebhookAttempt(TypedDict):
    number: int
    manual: bool  # asked for by a redelivery
    attempted_at: str
    status_code: int | None
    error: str | None
    duration_ms: int
    next_attempt_at: str | None


class WebhookDelivery(TypedDict):
    id: str
    endpoint_id: str
    event_id: str
    event_type: str
    status: str  # pending, delivered, failed or cancelled
    attempt_count: int
    next_attempt_at: str | None
    delivered_at: str | None
    attempts: list[WebhookAttempt]


class Page(TypedDict):
    data: list[dict[str, Any]]
    has_more: bool
    next_cursor: str | None
