"""Wallet use cases on the database: deposits, withdrawals, holds, releases, captures, their
idempotency keys, the balance guarantees and the hash chain."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from service.clock import utcnow
from service.db import make_engine
from service.db.models import LedgerAccount, LedgerEntry, LedgerTransaction
from service.errors import IdempotencyKeyReused, InsufficientFunds, NotFound, ValidationFailed
from service.ledger import store
from service.ledger.chain import GENESIS
from service.usecases import wallets
from service.usecases.auth import Principal
from tests.conftest import ApiClient, in_unit, nested_plans, new_operator, serving
from tests.integration.conftest import Funded

MATCH = "mch_TEST"


def wallet(f: Funded, player_id: str) -> wallets.WalletView:
    session = f.session()
    try:
        return in_unit(session, wallets.get_wallet, Principal(f.operator_id), player_id, "EUR")
    finally:
        session.close()


def verify(f: Funded) -> list[store.ChainProblem]:
    session = f.session()
    try:
        with session.begin():
            return store.verify(session, f.operator_id)
    finally:
        session.close()


def test_hold_release_capture_move_money_between_available_and_escrow(
    shared_funded: Funded,
) -> None:
    f, s, now = shared_funded, shared_funded.session(), utcnow()
    one, two = f.player_id, f.other_player_id
    in_unit(s, wallets.hold, f.operator_id, one, MATCH, "EUR", 3000, "hold-1", now)
    in_unit(s, wallets.hold, f.operator_id, two, MATCH, "EUR", 3000, "hold-2", now)
    w = wallet(f, one)
    assert (w.available, w.held, w.balance) == (7000, 3000, 10_000)

    released = in_unit(s, wallets.release, f.operator_id, one, MATCH, "EUR", 1000, "release-1", now)
    assert (released.wallet.available, released.wallet.held) == (8000, 2000)

    # One wins: escrows (2000 + 3000) pay 4750 to one and 250 to the house.
    txn = in_unit(
        s,
        wallets.capture,
        f.operator_id,
        MATCH,
        "EUR",
        {one: 2000, two: 3000},
        {one: 4750},
        250,
        "capture-1",
        now,
    )
    assert txn.kind == "capture" and txn.match_ref == MATCH
    assert (wallet(f, one).available, wallet(f, one).held) == (12_750, 0)
    assert (wallet(f, two).available, wallet(f, two).held) == (7000, 0)
    with s.begin():
        fee = s.scalars(
            select(LedgerAccount).where(
                LedgerAccount.operator_id == f.operator_id, LedgerAccount.kind == "house_fee"
            )
        ).one()
        assert fee.balance == 250
        assert store.journal_totals(s, f.operator_id) == {"EUR": 0}
    s.close()
    assert verify(f) == []


def test_escrow_cannot_release_or_capture_more_than_held(shared_funded: Funded) -> None:
    f, s, now = shared_funded, shared_funded.session(), utcnow()
    in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 500, "h", now)
    with pytest.raises(InsufficientFunds):
        in_unit(s, wallets.release, f.operator_id, f.player_id, MATCH, "EUR", 501, "r", now)
    with pytest.raises(InsufficientFunds):
        in_unit(
            s,
            wallets.capture,
            f.operator_id,
            MATCH,
            "EUR",
            {f.player_id: 600},
            {f.other_player_id: 600},
            0,
            "c",
            now,
        )
    with pytest.raises(ValidationFailed):
        in_unit(
            s,
            wallets.capture,
            f.operator_id,
            MATCH,
            "EUR",
            {f.player_id: 500},
            {f.other_player_id: 400},
            50,
            "c2",
            now,
        )
    s.close()
    assert wallet(f, f.player_id).held == 500


def test_withdrawal_beyond_available_is_refused_and_changes_nothing(shared_funded: Funded) -> None:
    f, s = shared_funded, shared_funded.session()
    with pytest.raises(InsufficientFunds, match="Available 10000 EUR, needed 10001 EUR"):
        in_unit(
            s, wallets.withdraw, Principal(f.operator_id), f.player_id, "EUR", 10_001, "w", utcnow()
        )
    with pytest.raises(InsufficientFunds):
        in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 10_001, "h", utcnow())
    s.close()
    assert wallet(f, f.player_id).available == 10_000
    # The key was not consumed by the refusal: it can move money once funds suffice.
    s = f.session()
    moved = in_unit(
        s, wallets.withdraw, Principal(f.operator_id), f.player_id, "EUR", 10_000, "w", utcnow()
    )
    assert moved.wallet.available == 0 and not moved.replayed
    s.close()


def test_a_key_moves_money_once_and_refuses_other_arguments(shared_funded: Funded) -> None:
    f, s, now = shared_funded, shared_funded.session(), utcnow()
    first = in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 100, "k", now)
    again = in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 100, "k", now)
    assert again.replayed and again.transaction.id == first.transaction.id
    assert again.wallet.held == 100
    with pytest.raises(IdempotencyKeyReused):
        in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 200, "k", now)
    with pytest.raises(IdempotencyKeyReused):
        in_unit(s, wallets.release, f.operator_id, f.player_id, MATCH, "EUR", 100, "k", now)
    with s.begin():
        count = s.scalar(
            select(LedgerTransaction.id)
            .where(
                LedgerTransaction.operator_id == f.operator_id,
                LedgerTransaction.idempotency_key == "k",
            )
            .with_only_columns(text("count(*)"))
        )
    assert count == 1
    s.close()


def test_foreign_players_are_not_found(shared_funded: Funded, app: Any) -> None:
    stranger, _ = new_operator(app)
    s = shared_funded.session()
    with pytest.raises(NotFound):
        in_unit(s, wallets.hold, stranger, shared_funded.player_id, MATCH, "EUR", 1, "x", utcnow())
    with pytest.raises(NotFound):
        in_unit(s, wallets.get_wallet, Principal(stranger), shared_funded.player_id, "EUR")
    s.close()


def test_each_entry_records_balance_after_and_links_the_chain(shared_funded: Funded) -> None:
    f, s, now = shared_funded, shared_funded.session(), utcnow()
    in_unit(s, wallets.withdraw, Principal(f.operator_id), f.player_id, "EUR", 2500, "w1", now)
    in_unit(s, wallets.deposit, Principal(f.operator_id), f.player_id, "EUR", 700, "d1", now)
    with s.begin():
        entries = s.scalars(
            select(LedgerEntry)
            .join(LedgerAccount)
            .where(
                LedgerAccount.player_id == f.player_id,
                LedgerAccount.kind == "player_available",  # not the player's clearing account
            )
            .order_by(LedgerEntry.seq)
        ).all()
    assert [(e.amount, e.balance_after) for e in entries] == [
        (10_000, 10_000),
        (-2500, 7500),
        (700, 8200),
    ]
    assert [e.account_version for e in entries] == [1, 2, 3]
    assert entries[1].prev_hash == entries[0].hash and entries[2].prev_hash == entries[1].hash
    s.close()


def test_database_refuses_a_negative_available_balance(funded: Funded) -> None:
    engine = make_engine(funded.url)
    with pytest.raises(Exception, match=r"(?i)check|balance"), engine.begin() as connection:
        connection.execute(
            text("UPDATE ledger_accounts SET balance = -1 WHERE kind = 'player_available'")
        )
    engine.dispose()


def _append_to_available(f: Funded, match: str, amount: int, balance_after_delta: int) -> None:
    """Insert by hand an entry of ``amount`` on the player's available account, in the
    player's first (committed) deposit, that claims the balance moved by
    ``balance_after_delta``; expect the database to refuse it with ``match``."""
    engine = make_engine(f.url)
    with engine.connect() as connection:
        account_id, version, balance, head = connection.execute(
            text(
                "SELECT id, entry_count, balance, last_hash FROM ledger_accounts "
                "WHERE player_id = :p AND kind = 'player_available'"
            ),
            {"p": f.player_id},
        ).one()
        txn = connection.execute(
            text("SELECT id FROM ledger_transactions WHERE player_id = :p"), {"p": f.player_id}
        ).scalar_one()
    with pytest.raises(Exception, match=match), engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO ledger_entries (id, transaction_id, account_id, account_version, "
                "currency, amount, balance_after, kind, created_at, prev_hash, hash) VALUES "
                "('ent_forged', :t, :a, :v, 'EUR', :x, :b, 'deposit', :now, :h, :h)"
            ),
            {
                "t": txn,
                "a": account_id,
                "v": version + 1,
                "x": amount,
                "b": balance + balance_after_delta,
                "now": utcnow().replace(tzinfo=None),
                "h": head,
            },
        )
    engine.dispose()


def test_database_refuses_an_entry_that_breaks_the_running_balance(funded: Funded) -> None:
    _append_to_available(funded, "continue", 5, 500)


POSTGRES_ONLY = pytest.mark.skipif(
    "not __import__('os').environ.get('TEST_DATABASE_URL')",
    reason="PostgreSQL only: its triggers and plans",
)


_NEW_FEE_ACCOUNT = text(
    "INSERT INTO ledger_accounts (key, operator_id, kind, currency, balance, entry_count,"
    " last_hash, created_at) VALUES (:key, :op, 'house_fee', 'EUR', 0, 0, :g, :now) RETURNING id"
)


def _fee_accounts(connection: Any, operator_id: str, *keys: str) -> list[int]:
    """Fresh, empty house-fee accounts (a kind with no player) named ``keys``."""
    return [
        connection.execute(
            _NEW_FEE_ACCOUNT, {"key": key, "op": operator_id, "g": GENESIS, "now": utcnow()}
        ).scalar_one()
        for key in keys
    ]


def _journal(connection: Any, operator_id: str, txn: str, declared: int) -> None:
    connection.execute(
        text(
            "INSERT INTO ledger_transactions (id, operator_id, kind, fingerprint, currency,"
            " amount, entry_count, created_at) VALUES (:t, :op, 'capture', 'f', 'EUR', 5, :n,"
            " :now)"
        ),
        {"t": txn, "op": operator_id, "n": declared, "now": utcnow()},
    )


def _first_entry(connection: Any, txn: str, entry: str, account_id: int, amount: int) -> None:
    connection.execute(
        text(
            "INSERT INTO ledger_entries (id, transaction_id, account_id, account_version,"
            " currency, amount, balance_after, kind, created_at, prev_hash, hash)"
            " VALUES (:e, :t, :a, 1, 'EUR', :x, :x, 'capture', :now, :g, :e)"
        ),
        {"e": entry, "t": txn, "a": account_id, "x": amount, "g": GENESIS, "now": utcnow()},
    )


def _most_rows_filtered(plans: list[str]) -> int:
    """The most rows any node of ``plans`` read and then threw away (0 if none did)."""
    counts = [int(n) for p in plans for n in re.findall(r"Rows Removed by Filter: (\d+)", p)]
    return max(counts, default=0)


@POSTGRES_ONLY
def test_postgres_refuses_to_commit_a_transaction_short_of_its_entries(funded: Funded) -> None:
    engine = make_engine(funded.url)
    with pytest.raises(Exception, match=r"has 1 entries, declared 2"), engine.begin() as c:
        (one,) = _fee_accounts(c, funded.operator_id, "fee-x")
        _journal(c, funded.operator_id, "txn_x", 2)
        _first_entry(c, "txn_x", "ent_x", one, 5)
    engine.dispose()


@POSTGRES_ONLY
def test_postgres_refuses_to_commit_a_transaction_without_entries(funded: Funded) -> None:
    engine = make_engine(funded.url)
    with pytest.raises(Exception, match=r"has 0 entries, declared 2"), engine.begin() as c:
        _journal(c, funded.operator_id, "txn_empty", 2)
    with engine.connect() as connection:
        assert (
            connection.execute(
                text("SELECT count(*) FROM ledger_transactions WHERE id = 'txn_empty'")
            ).scalar_one()
            == 0
        )
    engine.dispose()


@POSTGRES_ONLY
def test_postgres_refuses_to_commit_entries_that_do_not_sum_to_zero(funded: Funded) -> None:
    engine = make_engine(funded.url)
    with pytest.raises(Exception, match=r"unbalanced in EUR: 8"), engine.begin() as c:
        one, two = _fee_accounts(c, funded.operator_id, "fee-a", "fee-b")
        _journal(c, funded.operator_id, "txn_odd", 2)
        _first_entry(c, "txn_odd", "ent_a", one, 5)
        _first_entry(c, "txn_odd", "ent_b", two, 3)
    engine.dispose()


@POSTGRES_ONLY
def test_postgres_refuses_an_entry_added_to_a_committed_transaction(funded: Funded) -> None:
    """The forged entry continues its account's chain correctly; only its transaction, a
    committed deposit that already holds its two entries, gives it away."""
    _append_to_available(funded, r"has 2 entries, declared 2", 5, 5)
    assert verify(funded) == []


@POSTGRES_ONLY
def test_postgres_refuses_an_entry_of_no_journal_transaction(funded: Funded) -> None:
    engine = make_engine(funded.url)
    with pytest.raises(Exception, match=r"names no journal transaction"), engine.begin() as c:
        (one,) = _fee_accounts(c, funded.operator_id, "fee-c")
        _first_entry(c, "txn_missing", "ent_c", one, 5)
    engine.dispose()


@POSTGRES_ONLY
def test_the_ledger_checks_do_not_grow_with_an_accounts_history(
    fresh_database_url: str,
) -> None:
    """The entry and account-head checks find the account's newest entry with one index probe
    however long its history, even with the plans a connection cached while the table was
    small (0001's scanned every entry of the account, filtering on the version)."""
    with serving(fresh_database_url, DB_POOL_SIZE=1) as app, nested_plans(app) as plans:
        api = ApiClient(app.test_client(), new_operator(app)[1])
        player = api.new_player()["id"]
        for amount in range(100, 160):
            assert api.deposit(player, amount).status_code == 201
        plans.clear()
        assert api.deposit(player, 1).status_code == 201
    on_entries = [p for p in plans if re.search(r"\bon ledger_entries\b", p)]
    assert len(on_entries) >= 3, plans  # the entry checks (two) and the head checks ran
    assert _most_rows_filtered(on_entries) < 5, on_entries


# What a player holds: the open match escrows (one escrow account per match ever played).


def _escrows(f: Funded, player_id: str) -> dict[str, tuple[int, bool]]:
    """The player's match escrows: match -> (balance, closed)."""
    s = f.session()
    try:
        rows = s.execute(
            select(LedgerAccount.match_ref, LedgerAccount.balance, LedgerAccount.closed_at).where(
                LedgerAccount.player_id == player_id, LedgerAccount.kind == "player_escrow"
            )
        ).all()
    finally:
        s.close()
    return {match: (balance, closed is not None) for match, balance, closed in rows}


def test_match_escrows_close_when_empty_and_reopen_when_they_hold_money(
    shared_funded: Funded,
) -> None:
    f, s, now = shared_funded, shared_funded.session(), utcnow()
    one, two = f.player_id, f.other_player_id
    in_unit(s, wallets.hold, f.operator_id, one, "mch_A", "EUR", 3000, "esc-1", now)
    in_unit(s, wallets.hold, f.operator_id, two, "mch_A", "EUR", 2000, "esc-2", now)
    in_unit(s, wallets.hold, f.operator_id, one, "mch_B", "EUR", 500, "esc-3", now)
    assert _escrows(f, one) == {"mch_A": (3000, False), "mch_B": (500, False)}
    assert wallet(f, one).held == 3500

    in_unit(s, wallets.release, f.operator_id, one, "mch_A", "EUR", 3000, "esc-4", now)
    assert _escrows(f, one) == {"mch_A": (0, True), "mch_B": (500, False)}
    assert (wallet(f, one).available, wallet(f, one).held) == (9500, 500)

    in_unit(s, wallets.hold, f.operator_id, one, "mch_A", "EUR", 1000, "esc-5", now)  # seated again
    assert _escrows(f, one)["mch_A"] == (1000, False)
    assert wallet(f, one).held == 1500

    in_unit(
        s,
        wallets.capture,
        f.operator_id,
        "mch_A",
        "EUR",
        {one: 1000, two: 2000},
        {two: 2900},
        100,
        "esc-6",
        now,
    )
    assert _escrows(f, one) == {"mch_A": (0, True), "mch_B": (500, False)}
    assert _escrows(f, two) == {"mch_A": (0, True)}
    assert (wallet(f, one).available, wallet(f, one).held) == (8500, 500)
    assert (wallet(f, two).available, wallet(f, two).held) == (10_900, 0)
    assert verify(f) == []
    s.close()


def test_the_database_refuses_to_close_an_escrow_that_holds_money(funded: Funded) -> None:
    """The escrow holds money; the available account is empty, but is no match escrow."""
    s, now = funded.session(), utcnow()
    in_unit(s, wallets.hold, funded.operator_id, funded.player_id, "mch_A", "EUR", 3000, "h", now)
    in_unit(
        s, wallets.withdraw, Principal(funded.operator_id), funded.player_id, "EUR", 7000, "w", now
    )
    s.close()
    assert wallet(funded, funded.player_id).available == 0
    engine = make_engine(funded.url)
    for kind in ("player_escrow", "player_available"):
        with (
            pytest.raises(Exception, match=r"closed_is_empty|only an empty match escrow"),
            engine.begin() as connection,
        ):
            connection.execute(
                text("UPDATE ledger_accounts SET closed_at = :now WHERE kind = :kind"),
                {"now": utcnow(), "kind": kind},
            )
    engine.dispose()
    assert _escrows(funded, funded.player_id) == {"mch_A": (3000, False)}


# Tamper evidence: rows edited, deleted or inserted behind the service's back.


def _tamper(f: Funded, *statements: str) -> None:
    engine = make_engine(f.url)
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(text("SET LOCAL session_replication_role = replica"))
        else:
            for trigger in (
                "ledger_entries_no_update",
                "ledger_entries_no_delete",
                "ledger_entries_continue_account",
                "ledger_transactions_no_delete",
            ):
                connection.execute(text(f"DROP TRIGGER IF EXISTS {trigger}"))
        for statement in statements:
            connection.execute(text(statement), {"p": f.player_id})
    engine.dispose()


def _history(f: Funded) -> None:
    s, now = f.session(), utcnow()
    in_unit(s, wallets.withdraw, Principal(f.operator_id), f.player_id, "EUR", 1000, "t1", now)
    in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 2000, "t2", now)
    in_unit(
        s,
        wallets.deposit,
        Principal(f.operator_id),
        f.player_id,
        "EUR",
        300,
        "t3",
        now + timedelta(seconds=1),
    )
    s.close()


AVAILABLE = "SELECT id FROM ledger_accounts WHERE player_id = :p AND kind = 'player_available'"


def test_an_untouched_ledger_verifies(funded: Funded) -> None:
    _history(funded)
    assert verify(funded) == []


def test_verify_finds_an_edited_entry(funded: Funded) -> None:
    _history(funded)
    _tamper(
        funded,
        f"UPDATE ledger_entries SET amount = amount + 1, balance_after = "
        f"balance_after + 1 WHERE account_version = 2 AND account_id = ({AVAILABLE})",
    )
    problems = verify(funded)
    assert any("hash does not match" in p.problem for p in problems), problems


def test_verify_finds_an_edit_that_also_fixes_the_hash_fields(funded: Funded) -> None:
    _history(funded)
    _tamper(
        funded,
        f"UPDATE ledger_entries SET kind = 'release' "
        f"WHERE account_version = 2 AND account_id = ({AVAILABLE})",
    )
    assert any("hash" in p.problem for p in verify(funded))


def test_verify_finds_a_deleted_entry(funded: Funded) -> None:
    _history(funded)
    _tamper(
        funded,
        f"DELETE FROM ledger_entries WHERE account_version = 2 AND account_id = ({AVAILABLE})",
    )
    problems = verify(funded)
    assert any("expected 2" in p.problem or "link" in p.problem for p in problems), problems


def test_verify_finds_the_newest_entry_deleted(funded: Funded) -> None:
    _history(funded)
    _tamper(
        funded,
        f"DELETE FROM ledger_entries WHERE account_version = 4 AND account_id = ({AVAILABLE})",
    )
    assert any("head says" in p.problem for p in verify(funded))


def test_verify_finds_an_inserted_entry(funded: Funded) -> None:
    _history(funded)
    _tamper(
        funded,
        f"INSERT INTO ledger_entries (id, transaction_id, account_id, account_version, currency,"
        f" amount, balance_after, kind, created_at, prev_hash, hash) SELECT 'ent_inserted',"
        f" transaction_id, account_id, 99, currency, 1, balance_after + 1, kind, created_at,"
        f" hash, hash FROM ledger_entries WHERE account_version = 4 AND account_id = ({AVAILABLE})",
    )
    problems = verify(funded)
    assert problems, "an inserted entry must be found"


def test_a_checkpoint_exposes_a_truncation_that_rewrites_the_heads(funded: Funded) -> None:
    _history(funded)
    s = funded.session()
    with s.begin():
        kept = store.checkpoint(s, funded.operator_id)
    s.close()
    # Delete the newest entry of the available account and its transaction's other entry, and
    # rewrite both account heads so that every chain looks complete.
    _tamper(
        funded,
        "DELETE FROM ledger_entries WHERE transaction_id = (SELECT transaction_id FROM "
        f"ledger_entries WHERE account_version = 4 AND account_id = ({AVAILABLE}))",
        "UPDATE ledger_accounts SET entry_count = entry_count - 1, "
        "last_hash = (SELECT e.hash FROM ledger_entries e WHERE e.account_id = ledger_accounts.id"
        " AND e.account_version = ledger_accounts.entry_count - 1), "
        "balance = (SELECT e.balance_after FROM ledger_entries e WHERE e.account_id = "
        "ledger_accounts.id AND e.account_version = ledger_accounts.entry_count - 1) "
        "WHERE entry_count > 0 AND NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE "
        "e.account_id = ledger_accounts.id AND e.account_version = ledger_accounts.entry_count)",
        "DELETE FROM ledger_transactions WHERE NOT EXISTS (SELECT 1 FROM ledger_entries e "
        "WHERE e.transaction_id = ledger_transactions.id)",
    )
    s = funded.session()
    with s.begin():
        assert store.verify(s, funded.operator_id) == []  # the chains alone look intact
        problems = store.verify(s, funded.operator_id, since=kept)
    s.close()
    assert any("checkpoint" in p.problem for p in problems), problems


class _Deadlock(Exception):
    sqlstate = "40P01"


def test_a_deadlock_victim_is_run_again_in_its_own_transaction(
    funded: Funded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL may abort one of two movements that create the same new accounts at once
    (store.lock_accounts); a use case running its own transaction runs it again."""
    from sqlalchemy.exc import OperationalError

    f, s, now = funded, funded.session(), utcnow()
    real = store.post
    calls: list[str] = []

    def dies_once_after_posting(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["idempotency_key"])
        posted = real(*args, **kwargs)  # written, then the transaction is the victim
        if len(calls) == 1:
            raise OperationalError("INSERT INTO ledger_accounts", {}, _Deadlock())
        return posted

    monkeypatch.setattr(store, "post", dies_once_after_posting)
    moved = in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 700, "dl-hold", now)
    assert calls == ["dl-hold", "dl-hold"] and not moved.replayed
    assert (moved.wallet.available, moved.wallet.held) == (10_000 - 700, 700)  # once
    assert (wallet(f, f.player_id).available, wallet(f, f.player_id).held) == (9300, 700)

    class _Other(Exception):
        sqlstate = "53300"  # too many connections: not a "try again"

    def dies_otherwise(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["idempotency_key"])
        raise OperationalError("INSERT", {}, _Other())

    monkeypatch.setattr(store, "post", dies_otherwise)
    with pytest.raises(OperationalError):
        in_unit(s, wallets.hold, f.operator_id, f.player_id, MATCH, "EUR", 1, "other", now)
    assert calls[2:] == ["other"]  # not run again

    def always_deadlocked(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["idempotency_key"])
        raise OperationalError("INSERT", {}, _Deadlock())

    monkeypatch.setattr(store, "post", always_deadlocked)
    with pytest.raises(OperationalError):
        in_unit(s, wallets.deposit, Principal(f.operator_id), f.player_id, "EUR", 5, "dead", now)
    assert calls[3:] == ["dead"] * 3  # given up after three attempts
    assert wallet(f, f.player_id).available == 9300
    s.close()
