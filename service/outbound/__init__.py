"""Calls to operators' servers, in one place: webhooks and seamless wallet calls share them.

* :mod:`~service.outbound.signing`: the ``Gin-Signature`` header over a raw body (secrets,
  signing, verification, rotation overlap);
* :mod:`~service.outbound.targets`: which addresses a call may reach (no loopback or private
  network unless the operator's deployment allows it);
* :mod:`~service.outbound.transport`: the HTTP POST itself, with its timeouts and the answer
  as data;
* :mod:`~service.outbound.wallet_protocol`: the seamless wallet contract (calls, answers and
  their classification, reconciliation of a day's calls against the operator's export).

The reference operator wallet that answers the seamless calls in tests and demos is a separate
program, the top-level :mod:`refwallet` package.
"""
