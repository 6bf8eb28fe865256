"""The docs site's table of contents of a notebook page, repaired: mkdocs-jupyter drops a
heading's code spans from the entry's anchor, which then points at no heading."""

from __future__ import annotations

import re
from typing import Any

_HEADING = re.compile(r'<h[1-6][^>]*\bid="([^"]+)"[^>]*>(.*?)</h[1-6]>', re.S)


def headings_of(html: str) -> dict[str, str]:
    """``{id: text}`` of a rendered page's headings (tags and the permalink's pilcrow left out)."""
    return {id_: re.sub(r"<[^>]+>|¶", "", text).strip() for id_, text in _HEADING.findall(html)}


def _words_within(words: list[str], other: list[str]) -> bool:
    """Whether ``words`` appear in ``other`` in order (other words may come between)."""
    rest = iter(other)
    return all(word in rest for word in words)


def repair_toc(toc: Any, headings: dict[str, str]) -> None:
    """mkdocs-jupyter's table of contents drops a heading's code spans ("2 · Samples out of a
    `Batch`" became a link to #2-samples-out-of-a, "The ceiling, `ndd.pytorch.nodes`, and..."
    one to #the-ceiling-and-..., which no heading has): point such an entry at the one heading
    whose id holds the entry's words in order, with that heading's text."""
    for item in toc:
        if item.id not in headings:
            matches = [id_ for id_ in headings if _words_within(item.id.split("-"), id_.split("-"))]
            if len(matches) == 1:
                item.id, item.title = matches[0], headings[matches[0]]
        repair_toc(item.children, headings)
