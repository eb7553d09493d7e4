"""Where a URL a caller gives (a batch's webhook) may lead: public addresses, and only those.

A caller must not turn the edge into a way into its own network: loopback, private, link-local
(a cloud's metadata service at 169.254.169.254 included), multicast and other non-global addresses
are refused, unless an operator allows a network for local receivers (``VOICEMESH_WEBHOOK_ALLOW``,
comma-separated CIDRs). The check runs twice: on a literal address when the URL is given (a clear
400), and on the address each connection actually goes to (httpx-secure validates the resolved IP
and connects to that IP), so a name that resolves to a refused address, or re-resolves to one later
(DNS rebinding), is refused too.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from httpx_secure import httpx_ssrf_protection

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_ENV = "VOICEMESH_WEBHOOK_ALLOW"


def parse_networks(raw: str, what: str = ALLOW_ENV) -> tuple[Network, ...]:
    """``"127.0.0.1/32, 10.1.0.0/16"`` as networks; ``ValueError`` naming the bad entry."""
    networks = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError as exc:
            raise ValueError(f"{what}: {entry!r} is not an address or CIDR network ({exc})") from None
    return tuple(networks)


def refusal(address: Address) -> str:
    """Why ``address`` is refused by default ("" when it is a public one)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return refusal(address.ipv4_mapped)
    for kind, hit in (
        ("a loopback", address.is_loopback),
        ("a link-local", address.is_link_local),
        ("a multicast", address.is_multicast),
        ("an unspecified", address.is_unspecified),
        ("a private", address.is_private),
        ("a reserved", address.is_reserved),
    ):
        if hit:
            return f"{kind} address"
    return "" if address.is_global else "a non-public address"


@dataclass(frozen=True)
class EgressPolicy:
    allow: tuple[Network, ...] = ()
    """Networks allowed although not public (local webhook receivers)."""

    def why_refused(self, address: Address) -> str:
        if any(address in net for net in self.allow if net.version == address.version):
            return ""
        return refusal(address)

    def permits(self, _host: str, address: Address, _port: int) -> bool:
        """httpx-secure's validator: called with the address a connection is about to use."""
        return not self.why_refused(address)

    def check_url(self, url: str) -> str:
        """Why ``url``'s host is refused, when it is a literal address; "" otherwise (a name is
        checked as it resolves, at each connection)."""
        host = urlsplit(url).hostname or ""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return ""
        reason = self.why_refused(address)
        return f"{host} is {reason}" if reason else ""

    def client(self, timeout_s: float) -> httpx.AsyncClient:
        """A client whose every connection goes only where this policy permits (no proxies from the
        environment: they would be connected to instead of the checked address)."""
        client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False, trust_env=False)
        return httpx_ssrf_protection(client, check_globally_reachable=False, custom_validator=self.permits)


__all__ = ["ALLOW_ENV", "EgressPolicy", "parse_networks", "refusal"]
