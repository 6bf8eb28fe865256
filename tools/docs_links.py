"""Links inside a notebook page of the docs site. mkdocs-jupyter renders them and MkDocs never
sees them: a link to another notebook becomes a link to its page, and so does one to a docs page
by its path in the checkout (``../docs/pages/x.md``, which GitHub follows); one that points to
nothing in the site is a warning."""

from __future__ import annotations

import logging
import posixpath
import re
from typing import Any
from urllib.parse import urlsplit

# a notebook links to a page of the docs by its path in the checkout (notebooks/ -> ../docs/pages/),
# which GitHub follows; on the site the page is at the top (docs_dir is docs/pages)
PAGES_IN_THE_CHECKOUT = "docs/pages/"
_URL_ATTRIBUTE = re.compile(r'\b(href|src)="([^"]*)"')


def _is_relative(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.path) and not parts.scheme and not parts.netloc and not url.startswith("/")


def rewrite_links(html: str, source: str, page_file: Any, files: Any, log: logging.Logger) -> str:
    """``html`` of the notebook page ``source`` (its path in the site, ``page_file`` its MkDocs
    file) with each relative link to a notebook or a docs page pointing at that page among
    ``files`` (MkDocs' ``Files``); a link or figure that points to nothing is logged as a warning."""

    def rewrite(match: re.Match[str]) -> str:
        attribute, url = match.group(1), match.group(2)
        if not _is_relative(url):
            return match.group(0)
        parts = urlsplit(url)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), parts.path))
        if target.startswith(PAGES_IN_THE_CHECKOUT):  # ../docs/pages/x.md: a link that works on GitHub
            target = target[len(PAGES_IN_THE_CHECKOUT) :]
        file = files.get_file_from_path(target)
        if file is None:
            kind = "figure" if attribute == "src" else "link"
            log.warning("%s: %s '%s' points to '%s', which is not in the site", source, kind, url, target)
            return match.group(0)
        if attribute == "href" and target.endswith((".ipynb", ".md")):
            fragment = f"#{parts.fragment}" if parts.fragment else ""
            return f'href="{file.url_relative_to(page_file)}{fragment}"'
        return match.group(0)

    return _URL_ATTRIBUTE.sub(rewrite, html)
