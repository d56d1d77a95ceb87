"""hreflang: the alternates one URL declares (HTML `<link>`, the `Link` header, or its sitemap `xhtml:link`s),
checked the way Google reads them, and the pairs the site rules find broken.

Google accepts `x-default` or an ISO 639-1 language, optionally a script (ISO 15924, four letters) and an
ISO 3166-1 alpha-2 region: `de`, `de-AT`, `zh-Hant-TW`. It ignores the rest (`en-UK`, `en_US`, `eng`, `us`),
so those are findings. The two code lists are short and static; no dependency ships both for Lambda.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from urllib.parse import urljoin

from seolens_core.audit._catalogue import Finding, FindingCode
from seolens_core.audit._indexability import absolute_url
from seolens_core.html import PageFacts

F = FindingCode
X_DEFAULT = "x-default"
LANGUAGES = frozenset(
    ["aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh", "bi", "bm", "bn", "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da", "de", "dv", "dz", "ee", "el", "en", "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr", "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he", "hi", "ho", "hr", "ht", "hu", "hy", "hz", "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv", "ka", "kg", "ki", "kj", "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li", "ln", "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb", "nd", "ne", "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi", "pl", "ps", "pt", "qu", "rm", "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk", "sl", "sm", "sn", "so", "sq", "sr", "ss", "st", "su", "sv", "sw", "ta", "te", "tg", "th", "ti", "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk", "ur", "uz", "ve", "vi", "vo", "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu"]
)
REGIONS = frozenset(
    ["ad", "ae", "af", "ag", "ai", "al", "am", "ao", "aq", "ar", "as", "at", "au", "aw", "ax", "az", "ba", "bb", "bd", "be", "bf", "bg", "bh", "bi", "bj", "bl", "bm", "bn", "bo", "bq", "br", "bs", "bt", "bv", "bw", "by", "bz", "ca", "cc", "cd", "cf", "cg", "ch", "ci", "ck", "cl", "cm", "cn", "co", "cr", "cu", "cv", "cw", "cx", "cy", "cz", "de", "dj", "dk", "dm", "do", "dz", "ec", "ee", "eg", "eh", "er", "es", "et", "fi", "fj", "fk", "fm", "fo", "fr", "ga", "gb", "gd", "ge", "gf", "gg", "gh", "gi", "gl", "gm", "gn", "gp", "gq", "gr", "gs", "gt", "gu", "gw", "gy", "hk", "hm", "hn", "hr", "ht", "hu", "id", "ie", "il", "im", "in", "io", "iq", "ir", "is", "it", "je", "jm", "jo", "jp", "ke", "kg", "kh", "ki", "km", "kn", "kp", "kr", "kw", "ky", "kz", "la", "lb", "lc", "li", "lk", "lr", "ls", "lt", "lu", "lv", "ly", "ma", "mc", "md", "me", "mf", "mg", "mh", "mk", "ml", "mm", "mn", "mo", "mp", "mq", "mr", "ms", "mt", "mu", "mv", "mw", "mx", "my", "mz", "na", "nc", "ne", "nf", "ng", "ni", "nl", "no", "np", "nr", "nu", "nz", "om", "pa", "pe", "pf", "pg", "ph", "pk", "pl", "pm", "pn", "pr", "ps", "pt", "pw", "py", "qa", "re", "ro", "rs", "ru", "rw", "sa", "sb", "sc", "sd", "se", "sg", "sh", "si", "sj", "sk", "sl", "sm", "sn", "so", "sr", "ss", "st", "sv", "sx", "sy", "sz", "tc", "td", "tf", "tg", "th", "tj", "tk", "tl", "tm", "tn", "to", "tr", "tt", "tv", "tw", "tz", "ua", "ug", "um", "us", "uy", "uz", "va", "vc", "ve", "vg", "vi", "vn", "vu", "wf", "ws", "ye", "yt", "za", "zm", "zw"]
)
_HINTS = {"uk": "gb"}
PAIR_CODES = frozenset(
    {"ALERT_HREFLANG_NO_RETURN", "ALERT_HREFLANG_TO_NON_200", "ALERT_HREFLANG_TO_NON_CANONICAL"}
)
"""The site rules' findings about one (page, alternate) pair: the report's hreflang matrix."""


def hreflang_problem(code: str) -> str | None:
    """Why Google ignores this hreflang value, or None when it is valid."""
    value = code.strip().lower()
    if value == X_DEFAULT:
        return None
    if "_" in value:
        return f"{code!r}: separate language and region with '-', not '_'"
    parts = value.split("-")
    language, rest = parts[0], parts[1:]
    if language not in LANGUAGES:
        if language in REGIONS and not rest:
            return f"{code!r}: a region alone; start with an ISO 639-1 language"
        return f"{code!r}: {language!r} is not an ISO 639-1 language code"
    if rest and len(rest[0]) == 4 and rest[0].isalpha():
        rest = rest[1:]  # a script subtag (Hant, Latn)
    if len(rest) > 1:
        return f"{code!r}: too many subtags"
    if rest and rest[0] not in REGIONS:
        hint = f" (use {_HINTS[rest[0]].upper()})" if rest[0] in _HINTS else ""
        return f"{code!r}: {rest[0].upper()!r} is not an ISO 3166-1 alpha-2 region{hint}"
    return None


def alternate_signals(
    url: str, alternates: Sequence[tuple[str, str]], source: str
) -> Iterator[tuple[str, str, str | None]]:
    """(code, detail, related URL) of one URL's own alternates (`source`: "HTML", "sitemap"): invalid codes,
    no self-reference, no x-default. `alternates` hold normalized absolute hrefs."""
    if not alternates:
        return
    for lang, href in alternates:
        problem = hreflang_problem(lang)
        if problem is not None:
            yield F.HREFLANG_INVALID_CODE, f"{source}: {problem}", href
    if not any(href == url for _, href in alternates):
        yield F.HREFLANG_NO_SELF, f"{source}: {len(alternates)} alternates, none to this URL", None
    if not any(lang.strip().lower() == X_DEFAULT for lang, _ in alternates):
        yield F.HREFLANG_NO_X_DEFAULT, f"{source}: no x-default among {len(alternates)} alternates", None


def page_alternates(facts: PageFacts) -> list[tuple[str, str]]:
    """The page's alternates made absolute (HTML ones against `<base>`, the Link header's against the URL),
    in order, each (language, URL) once: the fallback when the caller has no normalized ones."""
    html_base = urljoin(facts.url, facts.base_href) if facts.base_href else facts.url
    found: list[tuple[str, str]] = []
    for base, alternates in ((html_base, facts.hreflang), (facts.url, facts.header_hreflang)):
        for lang, href in alternates:
            url = absolute_url(base, href)
            if url is not None and (lang, url) not in found:
                found.append((lang, url))
    return found


def pair_detail(lang: str, what: str) -> str:
    """The detail of a pair finding; `pair_lang` reads the language back (one format, in one place)."""
    return f"hreflang {lang}: {what}"


def pair_lang(finding: Finding) -> str:
    """The alternate's hreflang value of a pair finding (`pair_detail`)."""
    head = finding.detail.split(":", 1)[0]
    return head.removeprefix("hreflang ").strip()
