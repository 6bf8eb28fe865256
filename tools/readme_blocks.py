"""Generated blocks of Markdown between two HTML comments, as in README.md:

    <!-- inventory:start -->
    ...generated, never edited by hand...
    <!-- inventory:end -->

``tools.inventory`` (the inventory) writes its README block with :func:`update`, and
``tools.results_table`` the README's findings (``tools.findings``), the results page's tables
(docs/pages/results.md) and, through :func:`main`'s ``others``, each notebook's bottom-line cell
(``tools.bottom_lines``); the docs hook fills the blocks of the docs pages with
:func:`replace_block` when it builds the site.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from helpers.data.paths import REPO_ROOT


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def replace_block(text: str, name: str, body: str, where: str = "the text") -> str:
    """``text`` with the block ``name`` holding ``body``; a missing block is an error."""
    start, end = markers(name)
    if start not in text or end not in text.split(start, 1)[1]:
        raise ValueError(
            f"{where} has no {start} ... {end} block: add the two lines where the generated table goes"
        )
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.strip()}\n{end}{tail}"


def update(path: Path, bodies: Mapping[str, str], *, check: bool, command: str) -> int:
    """Rewrite the blocks ``{name: body}`` of ``path`` (exit status 0), or with ``check`` only
    report whether one is stale (1) without writing."""
    text = path.read_text(encoding="utf-8")
    updated = text
    try:
        for name, body in bodies.items():
            updated = replace_block(updated, name, body, where=path.name)
    except ValueError as err:
        print(err)
        return 1
    if check:
        stale = [name for name, body in bodies.items() if replace_block(text, name, body) != text]
        if stale:
            print(f"{path.name}: the {', '.join(stale)} block is out of date: run `{command}`")
            return 1
        return 0
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return 0


Blocks = Mapping[str, Callable[[], str]]
# another target's writer: update(path, check=...) -> exit status (0, or 1 when ``check`` finds it stale)
Update = Callable[..., int]


def main(
    argv: Sequence[str] | None,
    *,
    blocks: Blocks,
    command: str,
    description: str,
    pages: Mapping[str, tuple[Path, Blocks]] | None = None,
    others: Mapping[str, tuple[Path, Update]] | None = None,
) -> int:
    """The command line of generated blocks: rewrite them in README.md (``blocks``) and in the
    other pages (``pages``: ``{option: (default path, blocks)}``, each page's path an option
    ``--<option>``), and the targets of ``others`` (``{option: (default path, update)}``, such as
    the notebooks' bottom-line cells, after the pages), or ``--check`` them all (exit status 1 if
    one is stale)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="only say whether a block is stale")
    parser.add_argument("--readme", type=Path, default=REPO_ROOT / "README.md")
    for option, (default, _) in {**(pages or {}), **(others or {})}.items():
        parser.add_argument(f"--{option}", type=Path, default=default, help=f"default: {default.name}")
    args = parser.parse_args(argv)
    targets = [(args.readme, blocks)] + [
        (getattr(args, option.replace("-", "_")), page_blocks)
        for option, (_, page_blocks) in (pages or {}).items()
    ]
    try:
        rendered = [
            (path, {name: render() for name, render in page_blocks.items()}) for path, page_blocks in targets
        ]
    except ValueError as err:
        print(f"{command}: {err}", file=sys.stderr)
        return 1
    statuses = [update(path, bodies, check=args.check, command=command) for path, bodies in rendered]
    for option, (_, update_other) in (others or {}).items():
        try:
            statuses.append(update_other(getattr(args, option.replace("-", "_")), check=args.check))
        except ValueError as err:
            print(f"{command}: {err}", file=sys.stderr)
            statuses.append(1)
    return max(statuses, default=0)
