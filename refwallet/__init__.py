"""A reference operator wallet: the other side of the seamless-wallet contract.

The service moves a player's money by calling the operator's wallet (``/debit``,
``/credit``, ``/rollback``, ``/balance``, signed with ``Gin-Signature``); this package is a
small, complete wallet that honours that contract, so integrators have an example to read and
the service's own tests have a real counterpart to call, faults included. It is a separate
system: its own process (``python -m refwallet serve``), its own SQLite file, and no
use of the service's models. The contract is in ``docs/seamless-wallet.md``.
"""

from __future__ import annotations

from refwallet.app import create_app

__all__ = ["create_app"]
