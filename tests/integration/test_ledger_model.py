"""Property test: any sequence of wallet operations, with keys sometimes repeated, leaves the
ledger equal to a simple model, balanced, non-negative and verifiable."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from service.clock import utcnow
from service.db.models import LedgerAccount
from service.errors import IdempotencyKeyReused, InsufficientFunds
from service.ledger import store
from service.usecases import players, wallets
from service.usecases.auth import Principal
from tests.conftest import in_unit, new_operator

PLAYERS = 2
MATCHES = ("mch_A", "mch_B")

operation = st.tuples(
    st.sampled_from(["deposit", "withdraw", "hold", "release", "capture"]),
    st.integers(0, PLAYERS - 1),
    st.sampled_from(MATCHES),
    st.integers(1, 400),
    st.integers(0, 12),  # idempotency key number: small, so keys repeat
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(operation, min_size=1, max_size=14))
def test_wallet_operations_match_a_model(
    app: Any, ops: list[tuple[str, int, str, int, int]]
) -> None:
    operator_id, _ = new_operator(app)
    principal = Principal(operator_id)
    session = app.extensions["gin"]["sessionmaker"]()
    now = utcnow()
    ids = [
        in_unit(session, players.create_player, principal, f"p{i}", "P", None, now).id
        for i in range(PLAYERS)
    ]
    available: dict[str, int] = defaultdict(int)
    escrow: dict[tuple[str, str], int] = defaultdict(int)
    fee = 0
    used: dict[str, tuple[object, ...]] = {}

    for kind, who, match, amount, key_no in ops:
        player, other = ids[who], ids[1 - who]
        key = f"k{key_no}"
        if kind == "capture":
            taken = escrow[(player, match)]
            request: tuple[object, ...] = (kind, player, match, taken)
        elif kind in ("deposit", "withdraw"):
            request = (kind, player, amount)  # cashier movements name no match
        else:
            request = (kind, player, match, amount)
        try:
            if kind == "deposit":
                in_unit(session, wallets.deposit, principal, player, "EUR", amount, key, now)
            elif kind == "withdraw":
                in_unit(session, wallets.withdraw, principal, player, "EUR", amount, key, now)
            elif kind == "hold":
                in_unit(session, wallets.hold, operator_id, player, match, "EUR", amount, key, now)
            elif kind == "release":
                in_unit(
                    session, wallets.release, operator_id, player, match, "EUR", amount, key, now
                )
            elif taken:
                in_unit(
                    session,
                    wallets.capture,
                    operator_id,
                    match,
                    "EUR",
                    {player: taken},
                    {other: taken - taken // 10},
                    taken // 10,
                    key,
                    now,
                )
            else:
                continue
        except IdempotencyKeyReused:
            assert key in used and used[key] != request
            continue
        except InsufficientFunds:
            assert key not in used
            source = available[player] if kind in ("withdraw", "hold") else escrow[(player, match)]
            assert source < (amount if kind != "capture" else taken)
            continue
        if key in used:
            assert used[key] == request  # a replay: nothing moves
            continue
        used[key] = request
        if kind == "deposit":
            available[player] += amount
        elif kind == "withdraw":
            available[player] -= amount
        elif kind == "hold":
            available[player] -= amount
            escrow[(player, match)] += amount
        elif kind == "release":
            available[player] += amount
            escrow[(player, match)] -= amount
        else:
            escrow[(player, match)] = 0
            available[other] += taken - taken // 10
            fee += taken // 10

    for player in ids:
        wallet = in_unit(session, wallets.get_wallet, principal, player, "EUR")
        assert wallet.available == available[player] >= 0
        assert wallet.held == sum(v for (p, _m), v in escrow.items() if p == player)
    with session.begin():
        assert set(store.journal_totals(session, operator_id).values()) <= {0}
        assert store.verify(session, operator_id) == []
        house = session.scalar(
            select(func.coalesce(func.sum(LedgerAccount.balance), 0)).where(
                LedgerAccount.operator_id == operator_id, LedgerAccount.kind == "house_fee"
            )
        )
    assert house == fee
    session.close()
