"""The polite fetch path's I/O edge: an SSRF-guarded httpx client that never follows redirects by itself."""

from seolens_core.fetch._client import Fetcher, FetchError, FetchErrorKind, FetchResult
from seolens_core.fetch._credentials import Credentials, CredentialScope
from seolens_core.fetch._guard import AddressPolicy, GuardVerdict

__all__ = [
    "AddressPolicy",
    "CredentialScope",
    "Credentials",
    "FetchError",
    "FetchErrorKind",
    "FetchResult",
    "Fetcher",
    "GuardVerdict",
]
