"""The one rule of where webhooks may go (service.outbound.targets): public addresses only,
however an address is spelt; names are vetted by the addresses they resolve to."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.outbound import targets as webhook_targets
from service.outbound.targets import PrivateTarget, check, literal_address, refusal


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("fe80::1%eth0", "fe80::1"),
        ("ops.example", None),
        ("localhost", None),
    ],
)
def test_literal_addresses_in_every_form_a_resolver_reads(host: str, address: str | None) -> None:
    found = literal_address(host)
    assert (None if found is None else str(found)) == address


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.31.255.255",
        "192.168.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "224.0.0.1",
        "::1",
        "::",
        "fc00::1",
        "fd00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::1",
        "localhost",
        "LOCALHOST.",
        "db.localhost",
        "127.1",
        "017700000001",
    ],
)
def test_private_hosts_are_refused_without_a_lookup(host: str) -> None:
    assert refusal(host) is not None
    with pytest.raises(PrivateTarget, match="not a public address"):
        check(host, allow_private=False)
    check(host, allow_private=True)  # configured to allow: nothing raised


@pytest.mark.parametrize(
    "host", ["ops.example", "8.8.8.8", "2606:4700::1111", "64:ff9b::808:808", "localhost.example"]
)
def test_public_hosts_and_unresolved_names_pass(host: str) -> None:
    assert refusal(host) is None


def test_a_name_is_judged_by_every_address_it_resolves_to() -> None:
    assert refusal("hooks.ops.example", ["93.184.215.14", "2606:2800:21f:cb07::1"]) is None
    reason = refusal("rebound.example", ["93.184.215.14", "10.0.0.7"])
    assert reason is not None and "10.0.0.7" in reason
    assert refusal("odd.example", ["not-an-address"]) is not None


def test_the_rule_is_pure() -> None:
    """No framework, database or network client in the module (a parse is all it does)."""
    source = Path(webhook_targets.__file__).read_text()
    for name in ("flask", "sqlalchemy", "celery", "getaddrinfo", "create_connection"):
        assert name not in source
