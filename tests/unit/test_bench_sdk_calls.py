"""The SDK-call benchmark's grouping of profiled functions into layers."""

from __future__ import annotations

from benchmarks.bench_sdk_calls import _layer

SITE = "/venv/lib/python3.11/site-packages/"


def test_specific_layers_win_over_their_package() -> None:
    assert _layer(SITE + "botocore/auth.py") == "signing (SigV4)"
    assert _layer(SITE + "aiobotocore/signers.py") == "signing (SigV4)"
    assert _layer(SITE + "botocore/serialize.py") == "serialisation"
    assert _layer(SITE + "botocore/retries/adaptive.py") == "retries"
    assert _layer(SITE + "botocore/client.py") == "botocore, other"
    assert _layer(SITE + "aiobotocore/client.py") == "aiobotocore, other"
    assert _layer("/work/seolens_core/adapters/_metering.py") == "call meter"


def test_built_ins_are_socket_io_or_called_from_the_layers() -> None:
    assert _layer("~", "<method 'send' of '_socket.socket' objects>") == "socket I/O"
    assert _layer("~", "<method 'poll' of 'select.epoll' objects>") == "socket I/O"
    assert _layer("~", "<built-in method builtins.isinstance>") == "built-ins"
    assert _layer("/usr/lib/python3.11/inspect.py") == "other"
