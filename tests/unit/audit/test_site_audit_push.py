"""SiteAudit (links pushed one at a time, never listed) gives exactly site_findings' findings, in order."""

from __future__ import annotations

import random
from dataclasses import asdict
from itertools import product

from seolens_core.audit import LinkRow, PageRow, SiteAudit, site_findings

S = "https://example.com"


def _site(seed: int) -> tuple[list[PageRow], list[LinkRow]]:
    rng = random.Random(seed)
    paths = [f"/p{i}" for i in range(30)]
    pages = []
    for i, path in enumerate(paths):
        status = rng.choice([200, 200, 200, 301, 404, 500])
        pages.append(
            PageRow(
                url=S + path,
                status=status,
                redirect_to=S + rng.choice(paths) if status == 301 else None,
                title=rng.choice(["A", "B", None]),
                meta_desc=rng.choice(["d", None]),
                canonical=S + rng.choice(paths) if rng.random() < 0.2 else None,
                hreflang=(("de", S + rng.choice(paths)),) if rng.random() < 0.2 else (),
                is_sitemap_url=i % 4 == 0,
                waf_provider="Cloudflare" if i == 7 else None,
            )
        )
    links = [
        LinkRow(S + rng.choice(paths), S + rng.choice(paths), internal=rng.random() < 0.9) for _ in range(200)
    ]
    return pages, links


def test_pushing_links_equals_site_findings_with_counted_and_given_inlinks() -> None:
    codes: set[str] = set()
    for seed in range(20):
        pages, links = _site(seed)
        for inlinks, as_stored in product((None, {S + "/p0": 3}), (False, True)):
            expected = list(site_findings(pages, links, inlinks=inlinks))
            audit = SiteAudit(iter(pages), count_links=inlinks is None)
            got = list(audit.page_findings())
            if as_stored:  # the rows as the crawl stores them, pushed in one call
                got += audit.link_rows(asdict(link) for link in links)
            for link in links if not as_stored else ():
                finding = audit.link(link)
                if finding is not None:
                    got.append(finding)
            got += audit.orphans(inlinks)
            assert got == expected
            codes |= {f.code for f in got}
    # the generated sites exercise the link rules and the page rules, not only empty outputs
    assert {
        "ALERT_BROKEN_INTERNAL_LINK",
        "ALERT_BROKEN_EXTERNAL_LINK",
        "ALERT_INTERNAL_LINK_TO_REDIRECT",
        "ALERT_TITLE_DUPLICATE",
        "ALERT_GRAPH_ORPHAN_PAGE",
    } <= codes


def test_a_link_finding_is_reported_once_per_source_target_and_code() -> None:
    audit = SiteAudit([PageRow(url=S + "/gone", status=404)])
    first = audit.link(LinkRow(S + "/a", S + "/gone", True))
    assert first is not None and first.code == "ALERT_BROKEN_INTERNAL_LINK"
    assert audit.link(LinkRow(S + "/a", S + "/gone", True)) is None
    assert audit.link(LinkRow(S + "/b", S + "/unknown", True)) is None


def test_links_to_pages_outside_link_targets_make_no_finding() -> None:
    """The report reads only the link rows to `link_targets()`: every link finding has its target there, and
    a page that cannot make one (2xx with another canonical or hreflang, a WAF page, unfetched) is not."""
    for seed in range(20):
        pages, links = _site(seed)
        pages.append(PageRow(url=S + "/disallowed", status=None, outcome="disallowed"))
        links += [LinkRow(S + "/p1", S + "/disallowed", internal=True)]
        audit = SiteAudit(iter(pages), count_links=False)
        list(audit.page_findings())
        targets = set(audit.link_targets())
        outside = [link for link in links if link.target not in targets]
        assert outside and all(audit.link(link) is None for link in outside)
        assert any(audit.link(link) is not None for link in links if link.target in targets)
        for page in pages:
            can = page.waf_provider is None and (page.error is not None or (page.status or 0) >= 300)
            assert (page.url in targets) == can, page
