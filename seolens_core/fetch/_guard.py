"""SSRF guard: which resolved addresses a crawl may connect to.

Loopback, private, link-local, unique-local, IPv4-mapped, unspecified, multicast and reserved addresses are refused
unless the host was given as a start URL or with --allow-host. The cloud's own ranges (169.254.0.0/16 and
fd00:ec2::/32, however an IPv6 address embeds them) are refused always.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
ALWAYS_REFUSED = (
    ipaddress.ip_network("169.254.0.0/16"),  # link-local: instance metadata, ECS task credentials (.170.2)
    ipaddress.ip_network("fd00:ec2::/32"),  # EC2's IPv6 metadata, DNS and time services
)
"""Refused even for start hosts and --allow-host: what lives there is the cloud's, never a site to audit."""
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """The address to connect to, or why none may be used."""

    address: str | None
    reason: str | None = None

    @property
    def allowed(self) -> bool:
        return self.address is not None


def _effective(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, NAT64 well-known prefix), else `ip`."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def always_refused(ip: IPAddress) -> bool:
    eff = _effective(ip)
    return any(eff in net for net in ALWAYS_REFUSED if net.version == eff.version) or any(
        ip in net for net in ALWAYS_REFUSED if net.version == ip.version
    )


def normalize_trusted(entry: str) -> str:
    """A `host[:port]` trust entry as the fetcher compares hosts: lower case, no trailing dot, IPv6 without
    brackets unless a port follows (`Shop.Test.` is `shop.test`, `[::1]:80` stays `[::1]:80`)."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return f"[{host}]:{port}" if port else host
    host, colon, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
    host = host.rstrip(".")
    return f"{host}:{port}" if colon else host


def is_public(ip: IPAddress) -> bool:
    """True for a globally routable unicast address."""
    eff = _effective(ip)
    return not (
        eff.is_loopback
        or eff.is_private
        or eff.is_link_local
        or eff.is_multicast
        or eff.is_unspecified
        or eff.is_reserved
        or (isinstance(eff, ipaddress.IPv6Address) and eff.is_site_local)
        or not eff.is_global
    )


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Decides, per connection, whether a host's resolved addresses may be used.

    `trusted` holds `host` or `host:port` entries (start URLs and --allow-host); only they may resolve to
    non-public addresses.
    """

    trusted: frozenset[str] = frozenset()

    @classmethod
    def for_hosts(cls, hosts: Iterable[str]) -> AddressPolicy:
        return cls(frozenset(normalize_trusted(h) for h in hosts))

    def is_trusted(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]").rstrip(".")
        return host in self.trusted or f"{host}:{port}" in self.trusted or f"[{host}]:{port}" in self.trusted

    def choose(self, host: str, port: int, addresses: Sequence[str]) -> GuardVerdict:
        """Pick the first usable address of `host`; the caller connects to exactly that address."""
        if not addresses:
            return GuardVerdict(None, "host did not resolve")
        trusted = self.is_trusted(host, port)
        refused: list[str] = []
        for raw in addresses:
            try:
                ip = ipaddress.ip_address(raw.split("%", 1)[0])
            except ValueError:
                refused.append(raw)
                continue
            if always_refused(ip):
                refused.append(raw)
                continue
            if trusted or is_public(ip):
                return GuardVerdict(str(ip))
            refused.append(raw)
        return GuardVerdict(
            None, f"refused non-public address {', '.join(refused)} for untrusted host {host}"
        )
