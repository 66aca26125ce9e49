"""Tamper evidence: each entry's hash covers its content and the previous entry's hash.

Chains run per account (the account row is locked for every write anyway, so the chain adds no
contention). The account row keeps the head hash and the entry count, so deleting the newest
entries is caught as surely as editing or inserting one in the middle.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

GENESIS = "0" * 64


@dataclass(frozen=True)
class EntryContent:
    """Everything an entry's hash covers."""

    entry_id: str
    transaction_id: str
    account_key: str
    account_version: int
    currency: str
    amount: int
    balance_after: int
    kind: str
    created_at: datetime

    def canonical(self) -> str:
        stamp = self.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return "|".join(
            (
                self.entry_id,
                self.transaction_id,
                self.account_key,
                str(self.account_version),
                self.currency,
                str(self.amount),
                str(self.balance_after),
                self.kind,
                stamp,
            )
        )


def entry_hash(prev_hash: str, content: EntryContent) -> str:
    """``sha256(prev_hash | canonical content)`` in hex."""
    return hashlib.sha256(f"{prev_hash}|{content.canonical()}".encode()).hexdigest()
