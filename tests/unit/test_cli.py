"""Bad CLI input gives one clear line on stderr and exit status 2, never a traceback; nothing is started."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from infra.local import cli


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["crawl", "ftp://example.com/"], "start URL must be http(s)"),
        (["crawl", "http://127.0.0.1:1/", "--max-pages", "0"], "invalid setting max_pages"),
        (["crawl", "http://127.0.0.1:1/", "--workers", "0"], "--workers must be between 1 and 64"),
        (["crawl", "http://127.0.0.1:1/", "--header", "no-colon"], "--header must look like NAME:VALUE"),
        (["crawl", "http://127.0.0.1:1/", "--user-agent", "bad agent!"], "invalid setting user_agent"),
        (["crawl", "http://127.0.0.1:1/", "--config", "/nonexistent/x.json"], "cannot read config file"),
    ],
)
def test_bad_options_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("seolens: error: ") and message in err[0], err
    assert not (tmp_path / "out").exists()


def test_unreachable_start_url(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/"
    assert cli.main(["crawl", url, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"seolens: error: start URL {url} is unreachable: Connection refused"]


def test_config_file_and_overrides(tmp_path: Path) -> None:
    config = tmp_path / "crawl.yaml"
    config.write_text("max_pages: 50\nmax_depth: 3\npoliteness:\n  initial_delay_ms: 500\n")
    args = cli._parser().parse_args(
        ["crawl", "http://127.0.0.1:9/", "--config", str(config), "--max-depth", "2", "--no-aimd"]
    )
    settings = cli.build_settings(args, args.start_urls)
    assert (settings.max_pages, settings.max_depth) == (50, 2)
    assert settings.politeness.initial_delay_ms == 500 and settings.politeness.aimd is False


def test_bad_config_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "crawl.json"
    config.write_text("[1, 2]")
    assert cli.main(["crawl", "http://127.0.0.1:9/", "--config", str(config)]) == 2
    assert "must hold a mapping" in capsys.readouterr().err


@pytest.mark.parametrize(("cores", "workers"), [(1, 2), (2, 3), (3, 4), (64, 4)])
def test_the_default_worker_count_follows_a_small_machines_cores(cores: int, workers: int) -> None:
    assert cli.default_workers(cores) == workers


def test_the_default_worker_count_is_this_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert cli.default_workers() == 3
    assert cli._parser().parse_args(["crawl", "http://127.0.0.1:1/"]).workers == 3


def test_an_unpinned_moto_is_refused_in_one_line_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from infra.local import moto_patches, moto_server

    def must_not_start(*_: object) -> None:
        raise AssertionError("an unpinned moto was started")

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setattr(cli, "check_reachable", lambda settings: None)
    monkeypatch.setattr(moto_patches, "moto_version", lambda: "9.9.9")
    monkeypatch.setattr(moto_server, "_start_subprocess", must_not_start)
    monkeypatch.setattr(moto_server, "_start_thread", must_not_start)
    assert cli.main(["crawl", "http://127.0.0.1:1/", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    pinned = moto_patches.PINNED_MOTO_VERSION
    assert err == [
        f"seolens: error: moto 9.9.9 is installed; the embedded emulator needs moto {pinned} "
        f"(pip install 'moto[server]=={pinned}', as scripts/bootstrap does)"
    ]
    with pytest.raises(
        moto_server.MotoVersionError, match=r"moto 9\.9\.9 is installed"
    ):  # the local runtime's own start, too
        moto_server.launch_moto_server()


def test_the_cloud_batching_is_asked_for_by_an_option() -> None:
    parse = cli._parser().parse_args
    assert parse(["crawl", "http://a.test/"]).wait_out_batching_window is False
    assert parse(["crawl", "http://a.test/", "--wait-out-batching-window"]).wait_out_batching_window is True
