"""Test certificates: a throwaway CA and one server certificate for the names given, made with `cryptography`.

`TlsFixture.server` serves the certificate; `TlsFixture.client` trusts only that CA and checks host names
as a crawler's default context does, so a name the certificate does not list fails with "Hostname mismatch".
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["TlsFixture"]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _alt_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


@dataclass(frozen=True)
class TlsFixture:
    """A CA certificate (PEM) and a server certificate chain and key (PEM) for `names`."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @classmethod
    def for_names(cls, names: Sequence[str]) -> TlsFixture:
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (
            x509.CertificateBuilder()
            .subject_name(_name("seolens test CA"))
            .issuer_name(_name("seolens test CA"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(names[0]))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([_alt_name(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        pem = serialization.Encoding.PEM
        return cls(
            ca_pem=ca.public_bytes(pem),
            cert_pem=cert.public_bytes(pem),
            key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        )

    def server(self) -> ssl.SSLContext:
        """A server context presenting the certificate (HTTP/1.1 only)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp, "cert.pem"), Path(tmp, "key.pem")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["http/1.1"])
        return context

    def client(self) -> ssl.SSLContext:
        """A verifying client context (host names checked) that trusts this CA only."""
        context = ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))
        context.set_alpn_protocols(["h2", "http/1.1"])
        return context
