"""AddressPolicy: which resolved addresses a crawl may connect to (the SSRF guard's decision table)."""

from __future__ import annotations

import pytest

from seolens_core.fetch import AddressPolicy

UNTRUSTED = AddressPolicy.for_hosts(["start.example"])

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.0.0.3", "loopback, any 127/8"),
    ("::1", "IPv6 loopback"),
    ("10.1.2.3", "private 10/8"),
    ("172.16.0.1", "private 172.16/12"),
    ("192.168.1.1", "private 192.168/16"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("169.254.169.254", "cloud metadata"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "IPv6 link-local"),
    ("fd00::1", "unique-local"),
    ("fc00::1", "unique-local fc00::/7"),
    ("fd00:ec2::254", "EC2 IPv6 metadata"),
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped private"),
    ("::ffff:169.254.169.254", "IPv4-mapped metadata"),
    ("2002:7f00:0001::", "6to4 wrapping 127.0.0.1"),
    ("2002:a9fe:a9fe::", "6to4 wrapping 169.254.169.254"),
    ("2002:c0a8:0101::1", "6to4 wrapping 192.168.1.1"),
    ("0.0.0.0", "unspecified"),
    ("::", "IPv6 unspecified"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast SSDP"),
    ("ff02::1", "IPv6 multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.1", "documentation TEST-NET-1"),
    ("198.18.0.1", "benchmarking"),
    ("fec0::1", "site-local (deprecated)"),
    ("not-an-ip", "garbage from a resolver"),
]

PUBLIC = [
    "93.184.216.34",
    "1.1.1.1",
    "8.8.8.8",
    "2606:4700:4700::1111",
    "::ffff:93.184.216.34",
    "2002:5db8:d822::1",
]


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_untrusted_host_never_gets_a_non_public_address(address: str, why: str) -> None:
    verdict = UNTRUSTED.choose("evil.example", 80, [address])
    assert not verdict.allowed, why
    assert verdict.address is None
    assert verdict.reason and "evil.example" in verdict.reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed_for_anyone(address: str) -> None:
    verdict = UNTRUSTED.choose("public.example", 443, [address])
    assert verdict.allowed and verdict.address is not None


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",
        "::ffff:169.254.169.254",
        "fd00:ec2::254",
        "169.254.170.2",  # ECS task credentials
        "169.254.0.1",
        "fd00:ec2::23",  # EC2's IPv6 DNS
        "fd00:ec2:0:1::1",
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b::a9fe:aa02",
        "::ffff:169.254.170.2",
        "2002:a9fe:a9fe::1",  # 6to4
    ],
)
def test_the_clouds_ranges_are_refused_even_when_the_host_is_trusted(address: str) -> None:
    policy = AddressPolicy.for_hosts(["metadata.internal", "169.254.169.254"])
    assert not policy.choose("metadata.internal", 80, [address]).allowed
    assert not policy.choose("169.254.169.254", 80, [address]).allowed


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.3", "10.0.0.5", "::1", "fd00::1"])
def test_trusted_hosts_may_be_private(address: str) -> None:
    policy = AddressPolicy.for_hosts(["intranet.local", "127.0.0.2:8080"])
    assert policy.choose("intranet.local", 80, [address]).address is not None


def test_trust_by_host_and_port_is_port_specific() -> None:
    policy = AddressPolicy.for_hosts(["127.0.0.2:8080"])
    assert policy.choose("127.0.0.2", 8080, ["127.0.0.2"]).allowed
    assert not policy.choose("127.0.0.2", 8081, ["127.0.0.2"]).allowed
    assert not policy.choose("127.0.0.3", 8080, ["127.0.0.3"]).allowed


def test_trust_is_case_insensitive_and_accepts_bracketed_ipv6() -> None:
    policy = AddressPolicy.for_hosts(["Intranet.Local", "[::1]:8080"])
    assert policy.choose("INTRANET.local", 80, ["10.0.0.1"]).allowed
    assert policy.choose("[::1]", 8080, ["::1"]).allowed


def test_first_public_address_wins_and_private_ones_are_skipped() -> None:
    """A name resolving to both private and public addresses connects to the public one, never the private."""
    verdict = UNTRUSTED.choose("mixed.example", 80, ["10.0.0.1", "127.0.0.1", "93.184.216.34"])
    assert verdict.address == "93.184.216.34"


def test_rebinding_answer_with_only_private_addresses_is_refused() -> None:
    verdict = UNTRUSTED.choose("rebind.example", 80, ["127.0.0.1", "::1", "0.0.0.0"])
    assert not verdict.allowed


def test_unresolved_host_is_refused() -> None:
    assert not UNTRUSTED.choose("nx.example", 80, []).allowed


def test_zone_index_is_ignored_when_classifying() -> None:
    assert not UNTRUSTED.choose("ll.example", 80, ["fe80::1%eth0"]).allowed


@pytest.mark.parametrize("entry", ["Shop.Test.", "SHOP.TEST", "shop.test.", " shop.test "])
def test_allow_host_entries_are_normalised_as_hosts_are(entry: str) -> None:
    assert AddressPolicy.for_hosts([entry]).choose("shop.test", 80, ["10.0.0.7"]).allowed
    assert AddressPolicy.for_hosts([f"{entry.strip()}:8080"]).choose("shop.test", 8080, ["10.0.0.7"]).allowed
    assert not AddressPolicy.for_hosts([f"{entry.strip()}:8080"]).choose("shop.test", 80, ["10.0.0.7"]).allowed


def test_a_nat64_address_is_judged_by_the_ipv4_address_it_carries() -> None:
    policy = AddressPolicy()
    assert not policy.choose("x.example", 80, ["64:ff9b::7f00:1"]).allowed  # 127.0.0.1
    assert policy.choose("x.example", 80, ["64:ff9b::808:808"]).allowed  # 8.8.8.8
