"""Alt texts on a notebook's page: each figure's ``<img>`` gets the ``alt`` text that its output's
metadata holds (``helpers.toolkit.plots.Chart`` and ``helpers.toolkit.display.Grid`` write it from
the numbers and labels they draw). nbconvert writes "No description has been provided for this
image" for every image, whatever the metadata says."""

from __future__ import annotations

import html as html_escape
import re
from typing import Any

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
_IMG = re.compile(r'<img\b[^>]*\bsrc="data:image/[a-z+]+;base64,[^"]*"[^>]*>')
_ALT = re.compile(r'\salt="[^"]*"')


def alt_texts(notebook: dict[str, Any]) -> list[str]:
    """Each image output's alt text, in the order of the page ("" where it has none)."""
    found = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            for mime in IMAGE_TYPES:
                if mime in output.get("data", {}):
                    found.append(str(output.get("metadata", {}).get(mime, {}).get("alt", "")))
                    break
    return found


def with_alt_texts(page: str, notebook: dict[str, Any]) -> tuple[str, list[str]]:
    """The page with each embedded image's ``alt`` replaced by its output's (nbconvert's stays
    where the output has none: tests/tools/test_docs_alt.py asks every committed figure for one), and
    the problems: a page whose images do not match the notebook's outputs one to one."""
    texts = alt_texts(notebook)
    images = list(_IMG.finditer(page))
    if len(images) != len(texts):
        return page, [
            f"its page embeds {len(images)} images, its outputs hold {len(texts)}: alt texts not added"
        ]
    problems: list[str] = []
    parts, end = [], 0
    for match, text in zip(images, texts, strict=True):
        tag = match.group(0)
        if text:
            alt = html_escape.escape(text, quote=True)
            tag = _ALT.sub("", tag).replace("<img", f'<img alt="{alt}"', 1)
        parts += [page[end : match.start()], tag]
        end = match.end()
    return "".join(parts) + page[end:], problems
