"""The throughput benchmark's CPU breakdown: py-spy's collapsed stacks summed by activity, phase and operation."""

from pathlib import Path

from benchmarks._profile import Profile

CRAWLER = 'process 10:"python seolens crawl"'
EMULATOR = 'process 11:"python infra/local/moto_server.py --serve 4000"'
WORKER = "handler (functions/fetch_worker.py:46);BatchRun._visit (seolens_core/crawl/_worker.py:500)"


def test_samples_count_for_the_innermost_activity_and_the_served_operation(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "\n".join(
            [
                f"{CRAWLER};{WORKER};claim (seolens_core/adapters/urls.py:9);_make_api_call (botocore/client.py:1) 30",
                f"{CRAWLER};{WORKER};normalize (seolens_core/urls/_normalize.py:3) 10",
                f"{CRAWLER};build (seolens_core/crawl/_report.py:4);loads (json/decoder.py:353) 5",
                f"{CRAWLER};{EMULATOR};call_action (moto/dynamodb/responses.py:1);"
                "DynamoHandler.update_item (moto/dynamodb/responses.py:9);validate (moto/x.py:1) 40",
                f"{CRAWLER};{EMULATOR};handle (gunicorn/workers/gthread.py:7) 20",
                "not a sample line",
            ]
        ),
        encoding="utf-8",
    )
    profile = Profile.read(raw)
    assert profile.crawler == {
        "AWS SDK (botocore, aiobotocore)": 30,
        "URL normalization": 10,
        "JSON + compression": 5,
    }
    assert profile.phases == {"fetch worker": 40, "report after the crawl": 5}
    assert profile.emulator == {
        "dynamodb.update_item": 40,
        "HTTP serving (gunicorn, werkzeug, request parsing)": 20,
    }
    lines = profile.lines(crawler_ms=9.0, emulator_ms=6.0)
    assert "      6.00 ms/page  66.7%  AWS SDK (botocore, aiobotocore)" in lines
    assert "      4.00 ms/page  66.7%  dynamodb.update_item" in lines
