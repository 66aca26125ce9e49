"""The double-entry ledger.

:mod:`~service.ledger.postings` holds the pure value objects (account references, postings,
balanced journal transactions) and :mod:`~service.ledger.chain` the entry hash; both import no
framework. :mod:`~service.ledger.store` writes them to the database: accounts are locked in
sorted order, each entry records the account's balance after it and the hash of the previous
entry of that account, and a ledger transaction's idempotency key is unique per operator.
"""
