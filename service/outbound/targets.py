"""Where webhooks may go: public internet addresses only, unless the service is configured to
allow private networks (``WEBHOOK_ALLOW_PRIVATE_NETWORKS``, for development and tests).

The service connects to a webhook URL from inside its own network. A URL whose host is
loopback, a private range, link-local (a cloud's metadata service at 169.254.169.254), the
unspecified address or any other address that is not global would let an operator reach what
only the service can: server-side request forgery. The rule, stated here once: every address
a host stands for must be global in the sense of :mod:`ipaddress` (and not multicast), an IPv4
address embedded in an IPv6 one (mapped, 6to4, NAT64) included; the names that stand for
loopback by definition (``localhost``, ``*.localhost``, RFC 6761) are not public either.

It is applied twice, by :func:`refusal`:

* when an endpoint is created or its URL changed, to what is known without a DNS query: an IP
  literal in any form a resolver reads (``127.1``, ``0x7f000001``, ``[::ffff:127.0.0.1]``) and
  the loopback names. Such a URL is refused at once (422 naming ``url``). A host name is not
  resolved then: that would cost a DNS round trip in the request and prove nothing about the
  moment of delivery, since a name can be pointed elsewhere afterwards;
* at every delivery, to every address the host resolves to at that moment; the connection then
  goes to the address that was checked (no second DNS answer).

Pure: parsing only, no network.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: The environment variable (read by :mod:`service.config`) that lifts the rule.
ALLOW_PRIVATE_SETTING = "WEBHOOK_ALLOW_PRIVATE_NETWORKS"

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOOPBACK_NAMES = ("localhost",)


class PrivateTarget(ValueError):
    """Raised when a webhook target is not a public internet address."""


def literal_address(host: str) -> Address | None:
    """The address ``host`` spells, when it is an IP literal in any form a resolver accepts
    (dotted, shortened or numeric IPv4, IPv6 with or without brackets or a zone); None for a
    host name."""
    text = host.strip("[]").split("%")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:  # inet_aton's forms: 127.1, 0x7f.1, 2130706433 (a parse, no lookup)
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except (OSError, ValueError):
        return None


def is_public(address: Address) -> bool:
    """Whether ``address`` is a global unicast address, and so is any IPv4 address it embeds."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        embedded = [address.ipv4_mapped, address.sixtofour]
        if address in _NAT64:
            embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        return all(is_public(v4) for v4 in embedded if v4 is not None)
    return True


def refusal(host: str, addresses: Iterable[str] = ()) -> str | None:
    """Why a webhook to ``host`` would not reach a public address, or None when nothing says
    so. ``addresses`` are what the host resolved to, when it has been resolved."""
    name = host.strip("[]").rstrip(".").lower()
    if name in _LOOPBACK_NAMES or name.endswith(tuple(f".{n}" for n in _LOOPBACK_NAMES)):
        return f"{host!r} is a loopback name, not a public address"
    literal = literal_address(name)
    if literal is not None and not is_public(literal):
        return f"{host!r} is {literal}, not a public address"
    for text in addresses:
        address = literal_address(text)
        if address is None or not is_public(address):
            return f"{host!r} resolves to {text}, not a public address"
    return None


def check(host: str, addresses: Iterable[str] = (), *, allow_private: bool) -> None:
    """:raises PrivateTarget: with :func:`refusal`'s reason, unless ``allow_private``."""
    if allow_private:
        return
    reason = refusal(host, addresses)
    if reason is not None:
        raise PrivateTarget(reason)
