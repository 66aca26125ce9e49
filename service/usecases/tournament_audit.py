"""Auditing tournaments: the draw, the bracket or table and the money recomputed
(docs/tournaments.md, "Audit").

For each tournament, from what anyone holding its revealed seed and its records can see:

1. **The draw.** The seed's commitment is SHA-256 of the seed; the drawn order is
   :func:`service.tournaments.bracket.draw` of the seed and the entrants' player ids in seat
   order.
2. **The bracket.** Replayed from the draw: each recorded winner is the winner of its match
   (the match's own state says who won), and each round's pairings follow from the one
   before (:meth:`Knockout.record`); the byes are the draw's first seats, advanced without
   a match (:meth:`Knockout.start`). A single table's seating is the seed's shuffle
   (:func:`~service.tournaments.bracket.shuffle`) and its recorded places are those its
   ended match's final standing gives (:mod:`service.tournaments.single_table`).
3. **The money.** From the tournament's ledger movements (its statement): the fees the house
   kept, each entrant's prize (recomputed with :func:`award` from the payout table and the
   replayed standings) or full refund after a cancellation before any match finished, and
   what the tournament still holds (nothing once it is over).

:func:`compare_tournament` is pure: plain data in, :class:`Discrepancy` findings out; the
functions below it load that data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service import games
from service.db.match_models import MatchRow
from service.db.tournament_models import Tournament
from service.db.wallet_models import WalletCall
from service.errors import NotFound
from service.games.common import fair
from service.tournaments.bracket import Knockout, draw, shuffle
from service.tournaments.errors import TournamentError
from service.tournaments.payouts import PayoutTable, award
from service.tournaments.single_table import SingleTable, match_result
from service.usecases import tournaments, wallets
from service.usecases.audit import Discrepancy
from service.usecases.auth import Principal, require_operator


@dataclass
class TournamentAudit:
    """The audit of one tournament."""

    tournament_id: str
    operator_id: str
    status: str
    matches_checked: int = 0
    discrepancies: list[Discrepancy] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.discrepancies

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": "tournament_audit",
            "tournament_id": self.tournament_id,
            "operator_id": self.operator_id,
            "status": self.status,
            "matches_checked": self.matches_checked,
            "ok": self.ok,
            "discrepancies": [d.to_dict() for d in self.discrepancies],
        }


@dataclass(frozen=True)
class TournamentFacts:
    """What the audit of one tournament reads, as plain data."""

    status: str
    kind: str
    server_seed: str
    commitment: str
    buy_in: int
    fee: int
    entrants: int
    payout_table: str
    #: The entrants' player ids by seat (1..N).
    players: Mapping[int, str]
    draw: Sequence[int] | None
    #: The stored bracket: rounds of pairings (``first``, ``second``, ``winner``,
    #: ``match_id``).
    bracket: Sequence[Sequence[Mapping[str, Any]]] | None
    #: The seat that won each ended match, by match id (None: not ended).
    match_winners: Mapping[str, int | None]
    #: A single table's places (groups of seats, best first) recomputed from its ended and
    #: recorded match (None: not ended, or a knockout).
    table_places: Sequence[Sequence[int]] | None
    #: The stored prize of each seat.
    prizes: Mapping[int, int | None]
    #: The statement's lines: (kind, player id, amount into the pool).
    lines: Sequence[tuple[str, str | None, int]]
    #: At a seamless operator, each player's wallet calls for the tournament: (the debits
    #: booked, the credits written, the rounds a booked debit opened that no credit closed);
    #: ``None`` in transfer mode.
    wallet: Mapping[str, tuple[int, int, int]] | None = None


def compare_tournament(facts: TournamentFacts) -> list[Discrepancy]:
    """Every way ``facts`` differ from what the seed, the matches and the payout table say."""
    found: list[Discrepancy] = []
    entry = facts.buy_in + facts.fee
    if fair.commitment(facts.server_seed) != facts.commitment:
        found.append(
            Discrepancy(
                "commitment", fair.commitment(facts.server_seed), facts.commitment, "SHA-256"
            )
        )
    played = _replayed(facts, found) if facts.kind == "knockout" else _seated(facts, found)
    per_player: dict[tuple[str, str | None], int] = defaultdict(int)
    for kind, player_id, amount in facts.lines:
        per_player[kind, player_id] += amount
    kept_fees = -sum(a for (k, _), a in per_player.items() if k in ("fee", "fee_returned"))
    held = sum(amount for _, _, amount in facts.lines)
    full_refund = facts.status == "cancelled" and not (played is not None and played.decided)
    field = len(facts.players)
    over = facts.status in ("finished", "cancelled")
    expected_held = {
        "open": len(facts.players) * entry,
        "running": len(facts.players) * facts.buy_in,
    }.get(facts.status, 0)
    if held != expected_held:
        found.append(Discrepancy("ledger.held", expected_held, held, "what it still holds"))
    expected_fees = 0 if facts.status == "open" or full_refund else facts.fee * field
    if kept_fees != expected_fees:
        found.append(Discrepancy("ledger.fees", expected_fees, kept_fees, "the house's fees"))
    if facts.wallet is not None:
        found += _wallet_findings(facts, per_player, over)
    if full_refund:
        for seat, player_id in sorted(facts.players.items()):
            kept = sum(per_player[kind, player_id] for kind in ("entry", "refund", "fee_refund"))
            if kept != 0:
                found.append(
                    Discrepancy(f"ledger.refund[{seat}]", 0, kept, "every entry refunded whole")
                )
    elif over and played is not None:
        try:
            shares = PayoutTable.parse(facts.payout_table).band_for(field).shares
            due = {
                p.seat: p.amount for p in award(facts.buy_in * field, shares, played.standings())
            }
        except TournamentError as exc:
            return [*found, Discrepancy("payout_table", "a table that pays", str(exc))]
        for seat, player_id in sorted(facts.players.items()):
            paid = -per_player["prize", player_id]
            if facts.prizes.get(seat) != due.get(seat):
                found.append(
                    Discrepancy(f"entries[{seat}].prize", due.get(seat), facts.prizes.get(seat))
                )
            if paid != due.get(seat, 0):
                found.append(Discrepancy(f"ledger.prize[{seat}]", due.get(seat, 0), paid))
    return found


def _wallet_findings(
    facts: TournamentFacts, per_player: Mapping[tuple[str, str | None], int], over: bool
) -> list[Discrepancy]:
    """A seamless operator's calls against the ledger, player by player: the debits booked
    are the entries held, the credits written are what left the tournament for the player
    (refunds, fees given back, prizes), and every round is closed but a current entrant's
    while the tournament is not over (docs/tournaments.md, "Seamless wallets")."""
    assert facts.wallet is not None
    found = []
    entrants = set(facts.players.values())
    for player_id in sorted(entrants | set(facts.wallet)):
        debited, credited, open_rounds = facts.wallet.get(player_id, (0, 0, 0))
        held = per_player.get(("entry", player_id), 0)
        back = -sum(per_player.get((k, player_id), 0) for k in ("refund", "fee_refund", "prize"))
        where = f"wallet[{player_id}]"
        if debited != held:
            found.append(Discrepancy(f"{where}.debits", held, debited, "the entries held"))
        if credited != back:
            found.append(Discrepancy(f"{where}.credits", back, credited, "what it was paid back"))
        expected_open = 1 if player_id in entrants and not over else 0
        if open_rounds != expected_open:
            found.append(Discrepancy(f"{where}.open_rounds", expected_open, open_rounds))
    return found


def _replayed(facts: TournamentFacts, found: list[Discrepancy]) -> Knockout | None:
    """The bracket replayed from the draw and the matches' winners (findings into
    ``found``); ``None`` before the draw."""
    if facts.draw is None or facts.bracket is None:
        if facts.status not in ("open", "cancelled"):
            found.append(Discrepancy("draw", "drawn", None, "a started tournament"))
        return None
    players = [facts.players[seat] for seat in sorted(facts.players)]
    try:
        expected = list(draw(facts.server_seed, players))
    except TournamentError as exc:
        found.append(Discrepancy("draw", "a field of 2 to 32", list(facts.draw), str(exc)))
        return None
    if expected != list(facts.draw):
        found.append(Discrepancy("draw", expected, list(facts.draw), "the seed's shuffle"))
    knockout = Knockout.start(expected)
    for r, pairings in enumerate(facts.bracket, 1):
        if r > len(knockout.rounds):
            found.append(Discrepancy(f"rounds[{r}]", None, "dealt", "before its round"))
            break
        for m, pairing in enumerate(pairings, 1):
            where = f"rounds[{r}].matches[{m}]"
            drawn = knockout.rounds[r - 1][m - 1]
            seats = (pairing["first"], pairing["second"])
            if seats != (drawn.first, drawn.second):
                found.append(
                    Discrepancy(f"{where}.seats", [drawn.first, drawn.second], list(seats))
                )
            if drawn.bye:  # advanced without a match: nothing played, nothing to record
                if pairing["winner"] != drawn.winner or pairing["match_id"] is not None:
                    found.append(
                        Discrepancy(
                            f"{where}.winner", drawn.winner, pairing["winner"], "a bye advances"
                        )
                    )
                continue
            won = facts.match_winners.get(pairing["match_id"] or "")
            if pairing["winner"] != won:
                found.append(
                    Discrepancy(f"{where}.winner", won, pairing["winner"], "its match's winner")
                )
            if won is not None:
                try:
                    knockout = knockout.record(r, m, won)
                except TournamentError as exc:
                    found.append(Discrepancy(f"{where}.winner", None, won, str(exc)))
    return knockout


def _seated(facts: TournamentFacts, found: list[Discrepancy]) -> SingleTable | None:
    """A single table's seating recomputed from the seed and its places from its match
    (findings into ``found``); ``None`` before the start."""
    if facts.draw is None or facts.bracket is None:
        if facts.status not in ("open", "cancelled"):
            found.append(Discrepancy("draw", "drawn", None, "a started tournament"))
        return None
    expected = shuffle(facts.server_seed, [facts.players[s] for s in sorted(facts.players)])
    if list(expected) != list(facts.draw):
        found.append(Discrepancy("draw", list(expected), list(facts.draw), "the seed's shuffle"))
    stored = SingleTable.from_dict(facts.bracket)
    if list(stored.seating) != list(expected):
        found.append(Discrepancy("table.seats", list(expected), list(stored.seating)))
    recomputed = None if facts.table_places is None else [list(g) for g in facts.table_places]
    kept = None if stored.places is None else [list(g) for g in stored.places]
    if kept != recomputed:
        found.append(Discrepancy("table.places", recomputed, kept, "its match's final standing"))
    places = None if recomputed is None else tuple(tuple(g) for g in recomputed)
    return SingleTable(tuple(expected), places)


def _facts(session: Session, tournament: Tournament) -> TournamentFacts:
    entries = tournaments.entries_of(session, tournament.id)
    players = {e.seat: e.player_id for e in entries}
    seats = {player: seat for seat, player in players.items()}
    match_ids = [
        p["match_id"] for pairings in tournament.bracket or [] for p in pairings if p["match_id"]
    ]
    winners: dict[str, int | None] = {}
    table_places: list[list[int]] | None = None
    for row in session.scalars(select(MatchRow).where(MatchRow.id.in_(match_ids))):
        winners[row.id] = None
        recorded = row.settled_at is not None  # a result not recorded yet counts later
        if recorded and row.state is not None and row.seats:
            match = games.from_state(row.state)
            if games.spec_of(match).knockout:  # a knockout's match: its winner goes on
                winner: int | None = games.result(match)["winner"]
                if winner is not None:
                    winners[row.id] = seats.get(row.seats[winner]["player_id"])
            elif match.over:
                # A player not entered (tampered records) sits as seat 0: never a real seat.
                at_table = [seats.get(s["player_id"], 0) for s in row.seats]
                order = tournaments.forfeit_order(session, row.id)
                table = SingleTable(tuple(at_table)).finish(match_result(match), order)
                table_places = [list(g) for g in table.places or ()]
                winners[row.id] = table.champions[0]
    _, lines = tournaments.statement(session, Principal(tournament.operator_id), tournament.id)
    return TournamentFacts(
        status=tournament.status,
        kind=tournament.kind,
        server_seed=tournament.server_seed,
        commitment=tournament.commitment,
        buy_in=tournament.buy_in,
        fee=tournament.fee,
        entrants=tournament.entrants,
        payout_table=tournament.payout_table,
        players=players,
        draw=tournament.draw,
        bracket=tournament.bracket,
        match_winners=winners,
        table_places=table_places,
        prizes={e.seat: e.prize for e in entries},
        lines=[(line.kind, line.player_id, line.amount) for line in lines],
        wallet=_wallet_calls(session, tournament),
    )


def _wallet_calls(
    session: Session, tournament: Tournament
) -> dict[str, tuple[int, int, int]] | None:
    """Each player's wallet calls for the tournament, summed for :class:`TournamentFacts`;
    ``None`` when its currency is not in seamless mode."""
    if wallets.seamless_wallet(session, tournament.operator_id, tournament.currency) is None:
        return None
    debited: dict[str, int] = defaultdict(int)
    credited: dict[str, int] = defaultdict(int)
    opened: dict[str, set[str]] = defaultdict(set)
    closed: dict[str, set[str]] = defaultdict(set)
    for call in session.scalars(
        select(WalletCall).where(
            WalletCall.operator_id == tournament.operator_id,
            WalletCall.escrow_ref == tournament.id,
        )
    ):
        if call.kind == "debit" and call.state == "booked":
            debited[call.player_id] += call.amount
            opened[call.player_id].add(call.round_id)
        elif call.kind == "credit":
            credited[call.player_id] += call.amount
            if call.round_closed:
                closed[call.player_id].add(call.round_id)
    return {
        player_id: (
            debited[player_id],
            credited[player_id],
            len(opened[player_id] - closed[player_id]),
        )
        for player_id in set(debited) | set(credited)
    }


def audit_tournament(session: Session, tournament: Tournament) -> TournamentAudit:
    """One tournament's audit (read-only)."""
    facts = _facts(session, tournament)
    return TournamentAudit(
        tournament.id,
        tournament.operator_id,
        tournament.status,
        matches_checked=sum(1 for w in facts.match_winners.values() if w is not None),
        discrepancies=compare_tournament(facts),
    )


def audit_one(session: Session, principal: Principal, tournament_id: str) -> TournamentAudit:
    """The audit of one of the operator's tournaments.

    :raises NotFound: when it is unknown or another operator's.
    """
    require_operator(principal)
    tournament = tournaments.get_tournament(session, principal, tournament_id).tournament
    return audit_tournament(session, tournament)


def audit_id(session: Session, tournament_id: str) -> TournamentAudit:
    """The audit of tournament ``tournament_id`` (the command line's, for every operator).

    :raises NotFound: when it is unknown.
    """
    tournament = session.get(Tournament, tournament_id)
    if tournament is None:
        raise NotFound(f"No tournament {tournament_id!r}.")
    return audit_tournament(session, tournament)


def tournament_ids(session: Session, operator_id: str | None = None) -> list[str]:
    """Every tournament (one operator's), oldest first."""
    stmt = select(Tournament.id).order_by(Tournament.created_at, Tournament.id)
    if operator_id is not None:
        stmt = stmt.where(Tournament.operator_id == operator_id)
    return list(session.scalars(stmt))
