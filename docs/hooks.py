"""MkDocs hooks of the docs site (docs/mkdocs.yml names this file).

mkdocs-jupyter renders a notebook to HTML itself, so MkDocs never checks the links and figures
inside it. This hook does: a relative link to another notebook (``02-capture-mode.ipynb``, as
written in the notebooks so that they work in JupyterLab) becomes a link to that notebook's page,
and a relative link or figure whose target is not in the site is a warning, which fails the
strict build. Each notebook page also gets a link to download its notebook.
"""

from __future__ import annotations

import logging
import posixpath
import re
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("mkdocs.hooks.docs_site")  # under "mkdocs": counted by --strict

_URL_ATTRIBUTE = re.compile(r'\b(href|src)="([^"]*)"')


def _is_relative(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.path) and not parts.scheme and not parts.netloc and not url.startswith("/")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    source = page.file.src_uri
    if not source.endswith(".ipynb"):
        return html  # Markdown pages: MkDocs validates their links itself

    def rewrite(match: re.Match[str]) -> str:
        attribute, url = match.group(1), match.group(2)
        if not _is_relative(url):
            return match.group(0)
        parts = urlsplit(url)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), parts.path))
        file = files.get_file_from_path(target)
        if file is None:
            kind = "figure" if attribute == "src" else "link"
            log.warning("%s: %s '%s' points to '%s', which is not in the site", source, kind,
                        url, target)
            return match.group(0)
        if attribute == "href" and target.endswith(".ipynb"):
            fragment = f"#{parts.fragment}" if parts.fragment else ""
            return f'href="{file.url_relative_to(page.file)}{fragment}"'
        return match.group(0)

    name = posixpath.basename(source)  # mkdocs-jupyter's include_source puts it beside the page
    download = (f'<p class="notebook-download"><a href="{name}" download title="the notebook as '
                f'committed, with its outputs">Download {name}</a></p>\n')
    return download + _URL_ATTRIBUTE.sub(rewrite, html)
