"""RobotsGate: no page of a host is fetched before its robots decision exists.

The decision lives in HostsTable (`host`, kind `ROBOTS`), shared by every worker and every crawl; one worker
at a time refreshes it under a short lease, and the failure history (retry back-off) is read from the stored
item under that lease, never from a container's cache. A container keeps a definitive decision for 2 min (never
past its `valid_until`) and a pending or failing one for 10 s, as another worker's retry may replace it.

robots.txt may be 500 KiB (RFC 9309) but a DynamoDB item holds 400 KB: the texts live zlib-compressed in a
Binary attribute (`text_z`), the decision JSON refers to them. Storage never makes the rules more permissive:
a text that still does not fit is replaced by its records alone (`compact_robots_text`: the same rules for
every agent, without comments, unknown lines or garbage), and if even those do not fit, by a disallow-all
text (a prefix could drop a Disallow). The item then carries `finding` = ALERT_ROBOTS_TEXT_TRUNCATED and the
original size. The worker that fetched robots.txt applies the stored form too, as every other worker does.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from dataclasses import asdict, dataclass, replace
from typing import Any

from seolens_core.adapters._gather import SingleFlight
from seolens_core.crawl._ports import RobotsAnswer
from seolens_core.fetch import Fetcher
from seolens_core.fetch._client import FetchErrorKind
from seolens_core.robots import (
    DecisionReason,
    FetchKind,
    NetworkErrorClass,
    PageAction,
    RobotsDecision,
    RobotsFetchOutcome,
    RobotsMode,
    RobotsRules,
    RobotsSettings,
    RobotsState,
    compact_robots_text,
    crawl_delay_policy,
    decide_robots,
    decision_for,
    rules_for,
)
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, normalize

KIND = "ROBOTS"
ALERT_ROBOTS_TEXT_TRUNCATED = "ALERT_ROBOTS_TEXT_TRUNCATED"
TEXT_BUDGET_BYTES = 300_000
"""Largest compressed text stored in one item (DynamoDB's limit is 400 KB for the whole item)."""
LOCAL_CACHE_S = 10.0
DECIDED_CACHE_S = 120.0
LEASE_S = 60.0
BUSY_RETRY_S = 2.0
TTL_S = 31 * 24 * 3600
_NET = {
    FetchErrorKind.DNS: NetworkErrorClass.DNS,
    FetchErrorKind.CONNECT: NetworkErrorClass.CONNECT,
    FetchErrorKind.RESET: NetworkErrorClass.RESET,
    FetchErrorKind.TIMEOUT: NetworkErrorClass.TIMEOUT,
    FetchErrorKind.TLS: NetworkErrorClass.TLS,
}
_log = logging.getLogger(__name__)


def decision_to_json(decision: RobotsDecision) -> str:
    """The decision as JSON, texts included (see `decision_to_item` for the stored, compressed form)."""
    data = asdict(decision)
    data["mode"] = decision.mode.value
    data["reason"] = decision.reason.value
    return json.dumps(data, separators=(",", ":"))


def decision_from_json(raw: str) -> RobotsDecision:
    data = json.loads(raw)
    return RobotsDecision(
        mode=RobotsMode(data["mode"]),
        rules_text=data["rules_text"],
        valid_until=float(data["valid_until"]),
        retry_at=data["retry_at"],
        suspended=bool(data["suspended"]),
        reason=DecisionReason(data["reason"]),
        state=RobotsState(**data["state"]),
    )


@dataclass(frozen=True, slots=True)
class StoredText:
    """How the robots texts were stored: compressed size, and whether they had to be cut to fit."""

    compressed_bytes: int
    original_bytes: int
    truncated: bool


DISALLOW_ALL_TEXT = "User-agent: *\nDisallow: /\n"
"""What is stored when not even a robots.txt's records fit: nothing of the host may be fetched."""


def _fit(text: str, budget: int) -> tuple[bytes, str, bool]:
    """zlib of `text`, else of its records alone, else of a disallow-all text, whichever fits `budget` first;
    True when it is not `text` itself."""
    packed = zlib.compress(text.encode("utf-8"), 9)
    if len(packed) <= budget:
        return packed, text, False
    compact = compact_robots_text(text)
    packed = zlib.compress(compact.encode("utf-8"), 9)
    if len(packed) <= budget:
        return packed, compact, True
    return zlib.compress(DISALLOW_ALL_TEXT.encode("utf-8"), 9), DISALLOW_ALL_TEXT, True


def decision_to_item(
    decision: RobotsDecision, budget: int = TEXT_BUDGET_BYTES
) -> tuple[dict[str, Any], StoredText | None]:
    """DynamoDB attributes for a decision: JSON without the texts, the text(s) zlib-compressed in `text_z`.

    rules_text and state.last_good_text are almost always the same text; it is stored once.
    """
    rules, good = decision.rules_text, decision.state.last_good_text
    text = rules if rules is not None else good
    data = json.loads(
        decision_to_json(
            replace(decision, rules_text=None, state=replace(decision.state, last_good_text=None))
        )
    )
    attrs: dict[str, Any] = {}
    stored: StoredText | None = None
    if text is not None:
        packed, kept, truncated = _fit(text, budget)
        data["rules_text"] = "$text" if rules is not None else None
        data["state"]["last_good_text"] = "$text" if good == text else None
        if good is not None and good != text:
            # An outage decision never holds two different texts, but stay exact if one ever does.
            packed_good, _, truncated_good = _fit(good, budget // 2)
            packed, kept, truncated = _fit(text, budget // 2)
            truncated = truncated or truncated_good
            data["state"]["last_good_text"] = "$good"
            attrs["good_z"] = {"B": packed_good}
        attrs["text_z"] = {"B": packed}
        stored = StoredText(len(packed), len(text.encode("utf-8")), truncated)
        if truncated:
            attrs["finding"] = {"S": ALERT_ROBOTS_TEXT_TRUNCATED}
            attrs["text_bytes"] = {"N": str(stored.original_bytes)}
            attrs["kept_bytes"] = {"N": str(len(kept.encode("utf-8")))}
    attrs["decision"] = {"S": json.dumps(data, separators=(",", ":"))}
    return attrs, stored


def decision_from_item(item: dict[str, Any]) -> RobotsDecision | None:
    """The decision stored by `decision_to_item` (None when the item has none yet, e.g. only a lease)."""
    raw = item.get("decision", {}).get("S")
    if not raw:
        return None
    data = json.loads(raw)
    texts = {
        "$text": _unzip(item.get("text_z")),
        "$good": _unzip(item.get("good_z")),
    }
    for holder, name in ((data, "rules_text"), (data["state"], "last_good_text")):
        value = holder.get(name)
        if isinstance(value, str) and value in texts:
            holder[name] = texts[value]
    return decision_from_json(json.dumps(data))


def _unzip(attr: dict[str, Any] | None) -> str | None:
    if not attr or "B" not in attr:
        return None
    return zlib.decompress(bytes(attr["B"])).decode("utf-8")


def _cache_s(decision: RobotsDecision | None) -> float:
    """How long a container trusts its copy: a definitive answer (rules, allow-all) changes only when
    robots.txt is fetched again (`valid_until`, checked apart); a pending or failing one may be replaced by
    another worker's retry at any moment."""
    if decision is None or decision.retry_at is not None or decision.suspended:
        return LOCAL_CACHE_S
    return DECIDED_CACHE_S


@dataclass
class _Entry:
    decision: RobotsDecision | None
    rules: RobotsRules | None
    agents: tuple[str, ...]
    loaded_at: float


class RobotsGate:
    def __init__(self, client: Any, table: str, settings: RobotsSettings | None = None) -> None:
        self._client = client
        self._table = table
        self._settings = settings or RobotsSettings()
        self._cache: dict[str, _Entry] = {}
        self._loads: SingleFlight[tuple[str, tuple[str, ...]], _Entry] = SingleFlight()
        self._per_crawl: dict[tuple[float, bool, float], RobotsSettings] = {}
        self.fetches = 0

    def _robots_settings(self, crawl: CrawlSettings) -> RobotsSettings:
        p = crawl.politeness
        key = (p.max_crawl_delay_s, p.force_crawl_delay_cap, crawl.robots_retry_base_s)
        cached = self._per_crawl.get(key)
        if cached is None:
            cached = replace(
                self._settings,
                max_crawl_delay_s=p.max_crawl_delay_s,
                force_crawl_delay_cap=p.force_crawl_delay_cap,
                retry_base_s=crawl.robots_retry_base_s,
            )
            self._per_crawl[key] = cached
        return cached

    async def check(
        self, origin: str, path_query: str, settings: CrawlSettings, fetcher: Fetcher, now: float
    ) -> RobotsAnswer:
        agents = (settings.product_token, "Googlebot", "*")
        entry = await self._entry(origin, agents, now)
        verdict = decision_for(entry.decision, now, path_query, entry.rules)
        if verdict.action is PageAction.FETCH_ROBOTS:
            refreshed = await self._refresh(origin, agents, fetcher, now, settings)
            if isinstance(refreshed, RobotsAnswer):
                return refreshed
            entry = refreshed
            verdict = decision_for(entry.decision, now, path_query, entry.rules)
        rules = entry.rules
        applied = rules.applied_agent if rules is not None else None
        if verdict.action is PageAction.WAIT:
            return RobotsAnswer(
                False,
                wait_until=verdict.until,
                reason="robots.txt unreachable: host suspended",
                suspended=True,
            )
        if verdict.action is PageAction.FETCH_ROBOTS:
            return RobotsAnswer(False, wait_until=now + BUSY_RETRY_S, reason="robots.txt being fetched")
        if verdict.action is PageAction.DISALLOWED:
            return RobotsAnswer(
                False,
                reason="disallowed by robots.txt",
                finding="ALERT_ROBOTS_DISALLOWED",
                applied_agent=applied,
            )
        delay = crawl_delay_policy(
            rules.crawl_delay if rules is not None else None, self._robots_settings(settings)
        )
        if delay.refused:
            return RobotsAnswer(
                False,
                reason=f"Crawl-delay {delay.requested_s}s exceeds the maximum",
                finding=delay.finding,
                applied_agent=applied,
            )
        return RobotsAnswer(True, crawl_delay_s=delay.pacing_floor_s or None, applied_agent=applied)

    async def sitemaps(self, origin: str, settings: CrawlSettings, fetcher: Fetcher, now: float) -> list[str]:
        """Sitemap: lines of the host's robots.txt (fetching it first if needed); [] when unavailable."""
        agents = (settings.product_token, "Googlebot", "*")
        entry = await self._entry(origin, agents, now)
        if entry.decision is None or now >= entry.decision.valid_until:
            refreshed = await self._refresh(origin, agents, fetcher, now, settings)
            if isinstance(refreshed, RobotsAnswer):
                return []
            entry = refreshed
        return list(entry.rules.sitemaps) if entry.rules is not None else []

    async def stored_decision(self, origin: str) -> RobotsDecision | None:
        """The host's shared decision as stored (no fetch, no cache)."""
        resp = await self._client.get_item(
            TableName=self._table, Key={"host": {"S": origin}, "kind": {"S": KIND}}, ConsistentRead=True
        )
        return decision_from_item(resp.get("Item", {}))

    async def _entry(self, origin: str, agents: tuple[str, ...], now: float) -> _Entry:
        entry = self._cache.get(origin)
        if (
            entry is not None
            and entry.agents == agents
            and now - entry.loaded_at < _cache_s(entry.decision)
            and (entry.decision is None or now < entry.decision.valid_until)
        ):
            return entry
        return await self._loads.run((origin, agents), lambda: self._load(origin, agents, now))

    async def _load(self, origin: str, agents: tuple[str, ...], now: float) -> _Entry:
        resp = await self._client.get_item(
            TableName=self._table, Key={"host": {"S": origin}, "kind": {"S": KIND}}, ConsistentRead=True
        )
        decision = decision_from_item(resp.get("Item", {}))
        entry = _Entry(decision, _rules(decision, agents), agents, now)
        self._cache[origin] = entry
        return entry

    async def _refresh(
        self, origin: str, agents: tuple[str, ...], fetcher: Fetcher, now: float, settings: CrawlSettings
    ) -> _Entry | RobotsAnswer:
        try:
            leased = await self._client.update_item(
                TableName=self._table,
                Key={"host": {"S": origin}, "kind": {"S": KIND}},
                UpdateExpression="SET lease_until = :l",
                ConditionExpression="attribute_not_exists(lease_until) OR lease_until < :now",
                ExpressionAttributeValues={":l": {"N": repr(now + LEASE_S)}, ":now": {"N": repr(now)}},
                ReturnValues="ALL_NEW",
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return RobotsAnswer(
                False, wait_until=now + BUSY_RETRY_S, reason="robots.txt being fetched by another worker"
            )
        # The failure history comes from the stored item (read under the lease), not from this container's
        # cache: another worker may have recorded failures since, and the back-off must keep growing.
        stored = decision_from_item(leased.get("Attributes", {}))
        if stored is not None and _current(stored, now):
            await self._release_lease(origin)  # another worker refreshed it meanwhile
            entry = _Entry(stored, _rules(stored, agents), agents, now)
            self._cache[origin] = entry
            return entry
        outcome = await self._fetch(origin, fetcher)
        if outcome is None:
            await self._release_lease(origin)
            return RobotsAnswer(False, reason="host refused by the SSRF guard", finding="ALERT_SSRF_BLOCKED")
        fetched_at = time.time()
        decision = decide_robots(
            outcome,
            stored.state if stored is not None else None,
            fetched_at,
            self._robots_settings(settings),
        )
        self.fetches += 1
        attrs, text = decision_to_item(decision)
        if text is not None and text.truncated:
            decision = decision_from_item(attrs) or decision  # apply what every other worker will read
            _log.warning(
                "robots.txt of %s stored as its records only, or disallow-all (%d bytes, %s)",
                origin,
                text.original_bytes,
                ALERT_ROBOTS_TEXT_TRUNCATED,
            )
        await self._client.put_item(
            TableName=self._table,
            Item={
                "host": {"S": origin},
                "kind": {"S": KIND},
                **attrs,
                "mode": {"S": decision.mode.value},
                "reason": {"S": decision.reason.value},
                "fetched_at": {"N": repr(fetched_at)},
                "expires_at": {"N": str(int(fetched_at) + TTL_S)},
            },
        )
        entry = _Entry(decision, _rules(decision, agents), agents, now)
        self._cache[origin] = entry
        return entry

    async def _release_lease(self, origin: str) -> None:
        await self._client.update_item(
            TableName=self._table,
            Key={"host": {"S": origin}, "kind": {"S": KIND}},
            UpdateExpression="REMOVE lease_until",
        )

    async def _fetch(self, origin: str, fetcher: Fetcher) -> RobotsFetchOutcome | None:
        """GET /robots.txt following up to max_redirects hops (each hop SSRF-checked); None if refused."""
        url = f"{origin}/robots.txt"
        seen = {url}
        hops = 0
        while True:
            result = await fetcher.fetch(url)
            if result.error is not None:
                if result.error.kind is FetchErrorKind.SSRF_BLOCKED:
                    return None
                return RobotsFetchOutcome(
                    FetchKind.NETWORK_ERROR,
                    error=_NET.get(result.error.kind, NetworkErrorClass.OTHER),
                    redirect_hops=hops,
                )
            status = result.status or 0
            location = result.location
            if location is not None:
                target = normalize(location, url)
                if not isinstance(target, NormalizedURL):
                    return RobotsFetchOutcome(FetchKind.HTTP_STATUS, status=status, redirect_hops=hops)
                hops += 1
                if target.url in seen:
                    return RobotsFetchOutcome(
                        FetchKind.HTTP_STATUS, status=status, redirect_hops=hops, redirect_loop=True
                    )
                if hops > self._settings.max_redirects:
                    return RobotsFetchOutcome(FetchKind.HTTP_STATUS, status=status, redirect_hops=hops)
                seen.add(target.url)
                url = target.url
                continue
            max_age = _max_age(result.headers.get("cache-control"))
            if 200 <= status < 300:
                return RobotsFetchOutcome(
                    FetchKind.OK, status=status, body=result.body, redirect_hops=hops, max_age_s=max_age
                )
            retry_after = result.headers.get("retry-after")
            return RobotsFetchOutcome(
                FetchKind.HTTP_STATUS,
                status=status,
                redirect_hops=hops,
                max_age_s=max_age,
                retry_after_s=float(retry_after) if retry_after and retry_after.isdigit() else None,
            )


def _max_age(value: str | None) -> float | None:
    if not value:
        return None
    for part in value.split(","):
        name, _, arg = part.strip().partition("=")
        if name.lower() == "max-age" and arg.strip().isdigit():
            return float(arg.strip())
    return None


def _current(decision: RobotsDecision, now: float) -> bool:
    """True when the stored decision needs no robots fetch at `now` (valid, or suspended until later)."""
    if decision.suspended:
        return decision.retry_at is not None and now < decision.retry_at
    return now < decision.valid_until


def _rules(decision: RobotsDecision | None, agents: tuple[str, ...]) -> RobotsRules | None:
    if decision is None:
        return None
    return rules_for(decision, agents)
