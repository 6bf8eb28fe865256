"""The docs site (make docs): built from the committed notebooks, then every page loaded in
headless Chromium (Playwright, driving Debian's /usr/bin/chromium: `.ci/install-browser.sh`).

Per page: HTTP 200, no console error or page error, nothing requested from outside the site,
every <img> decoded (naturalWidth > 0), every internal link answered with 200 (and its anchor
present), no rendered traceback or error output. The landing page holds the notebook inventory
and the results table. A screenshot of each page goes to build/site-screenshots/.
The build itself must fail on a notebook missing from notebooks/ (built from a temporary copy).
"""

from __future__ import annotations

import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest

from helpers import docs_site
from helpers.results_table import render_results_table

ROOT = docs_site.REPO_ROOT
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "build" / "site-screenshots"
TRACEBACK = "Traceback (most recent call last)"
# nbconvert renders an error output as stderr text; these would be the error styling of other
# templates (classic nbconvert, JupyterLab)
ERROR_SELECTORS = ".output_error, .jp-mod-error, [data-mime-type='application/vnd.jupyter.error']"


def _nav_html_pages() -> list[str]:
    config = docs_site.load_config(ROOT / "docs" / "mkdocs.yml")
    return [re.sub(r"\.(md|ipynb)$", ".html", page)
            for page in docs_site.nav_pages(config.get("nav"))]


PAGES = _nav_html_pages()


@pytest.fixture(scope="module")
def site() -> Path:
    return docs_site.build(quiet=True)


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    server = docs_site.start_server(site)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: the docs site's browser test needs Debian's chromium. "
                    "Run `.ci/install-browser.sh` (as root) first.", pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright for Python is missing: pip install -r requirements-docs.txt",
                    pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code


def test_site_has_a_page_for_every_nav_entry(site: Path) -> None:
    built = sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if p.name != "404.html")
    assert built == sorted(PAGES)


def page_problems(browser: Any, base_url: str, page_path: str,
                  screenshot: Path | None = None) -> tuple[list[str], Any]:
    """Load one page; what is wrong with it, and its <img> elements (src, naturalWidth)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console error: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith(base_url) or url.startswith("data:"):
            request_route.continue_()
        else:  # the site must be self-contained (CI has no network anyway)
            problems.append(f"requested from outside the site: {url}")
            request_route.abort()

    page.route("**/*", route)
    try:
        response = page.goto(base_url + page_path, wait_until="load")
        if response is None or response.status != 200:
            return [f"HTTP status {response.status if response else None}"], []
        page.wait_for_function("Array.from(document.images).every(i => i.complete)",
                               timeout=15_000)
        page.wait_for_timeout(200)  # late console messages of scripts run on load
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            is_notebook = page_path.startswith("notebooks/")
            page.screenshot(path=str(screenshot), full_page=not is_notebook)  # notebooks: long
            if is_notebook and page.locator("img").count():
                page.locator("img").first.scroll_into_view_if_needed()
                page.screenshot(path=str(screenshot.with_name(screenshot.stem + "-first-figure.png")))

        images = page.eval_on_selector_all(
            "img", "els => els.map(e => ({src: (e.getAttribute('src') || '').slice(0, 60),"
                   " width: e.naturalWidth}))")
        problems += [f"image did not load: {i['src']}" for i in images if i["width"] <= 0]

        if TRACEBACK in page.inner_text("body"):
            problems.append("a rendered traceback")
        if page.locator(ERROR_SELECTORS).count():
            problems.append("error output styling")
        stderr = page.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
        problems += [f"error text in a stderr output: {t[:200]}" for t in stderr
                     if re.search(r"^\w*(Error|Exception)\b", t, re.MULTILINE)]

        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        internal = sorted({link for link in links if link.startswith(base_url)})
        if not internal:
            problems.append("no internal links at all")
        for link in internal:
            target, fragment = urldefrag(link)
            if _status(target) != 200:
                problems.append(f"link {link} does not resolve")
            elif fragment and target.endswith(".html"):
                html = urllib.request.urlopen(target, timeout=10).read().decode()
                if not re.search(rf'\bid="{re.escape(fragment)}"', html):
                    problems.append(f"link {link}: no anchor #{fragment}")
        return problems, images
    finally:
        page.close()


@pytest.mark.parametrize("page_path", PAGES)
def test_page_renders_cleanly(browser: Any, base_url: str, site: Path, page_path: str) -> None:
    shot = SCREENSHOTS / page_path.replace("/", "_").replace(".html", ".png")
    problems, images = page_problems(browser, base_url, page_path, screenshot=shot)
    assert not problems, f"{page_path}: " + "; ".join(problems)
    if page_path.startswith("notebooks/"):
        notebook = docs_site.read_notebook(ROOT / Path(page_path).with_suffix(".ipynb"))
        assert notebook.figures > 0 and len(images) >= notebook.figures, \
            f"{page_path}: {len(images)} images shown, the notebook has {notebook.figures}"


def test_page_checks_catch_a_broken_page(browser: Any, tmp_path: Path) -> None:
    """The checks above, on a page with every fault they look for."""
    (tmp_path / "index.html").write_text("<p>index</p>")
    (tmp_path / "bad.html").write_text(
        '<img src="missing.png"><img src="https://example.com/x.png">'
        '<script>console.error("boom")</script>'
        "<pre>Traceback (most recent call last):</pre>"
        '<a href="index.html#nowhere">anchor</a><a href="gone.html">gone</a>')
    server = docs_site.start_server(tmp_path)
    try:
        problems, _ = page_problems(browser, f"http://127.0.0.1:{server.server_address[1]}/",
                                    "bad.html")
    finally:
        server.shutdown()
        server.server_close()
    report = "\n".join(problems)
    for expected in ("console error: boom", "image did not load: missing.png",
                     "outside the site: https://example.com/x.png", "a rendered traceback",
                     "gone.html does not resolve", "no anchor #nowhere"):
        assert expected in report, f"{expected!r} not caught:\n{report}"


def test_landing_page_has_the_inventory_and_the_results_table(browser: Any, base_url: str) -> None:
    page = browser.new_page()
    try:
        page.goto(base_url + "index.html")
        inventory = page.locator("table", has=page.locator("th", has_text="What you learn"))
        assert inventory.count() == 1
        rows = inventory.locator("tbody tr")
        notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
        assert rows.count() == len(notebooks)
        for row, notebook in zip(rows.all(), notebooks):
            cells = row.locator("td").all_inner_texts()
            assert cells[0] == notebook.stem[:2]
            assert cells[3].strip() and cells[4].strip(), f"{notebook.name}: GPU or runtime empty"
            href = row.locator("a").first.get_attribute("href")
            assert href == f"notebooks/{notebook.stem}.html"
        results = page.locator(".results-table table")
        assert results.count() == 1, "no results table on the landing page"
        assert results.locator("tbody tr").count() >= 1
        expected = render_results_table().splitlines()[0]  # the header row of the README's table
        headers = [h.strip() for h in expected.strip("|").split("|")]
        assert results.locator("th").first.inner_text().strip() == re.sub(r"[`*]", "", headers[0])
    finally:
        page.close()


def _copy_checkout(tmp_path: Path) -> Path:
    """The parts of the checkout that the site is built from, in a temporary folder."""
    root = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    if (ROOT / "results").is_dir():
        shutil.copytree(ROOT / "results", root / "results")
    return root


def test_build_fails_on_a_missing_notebook(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    (root / "notebooks" / "02-capture-mode.ipynb").unlink()
    with pytest.raises(docs_site.DocsBuildError, match="02-capture-mode.ipynb"):
        docs_site.build(root, quiet=True)
    assert not (root / "build" / "site").exists()


def test_build_fails_on_a_broken_link_or_a_missing_figure(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    page = root / "docs" / "running.md"
    page.write_text(page.read_text() + "\n[gone](no-such-page.md)\n\n![chart](figures/gone.png)\n")
    with pytest.raises(docs_site.DocsBuildError) as failure:
        docs_site.build(root, quiet=True)
    assert "no-such-page.md" in str(failure.value) and "figures/gone.png" in str(failure.value)
    assert not (root / "build" / "site").exists()


def test_build_fails_on_a_notebook_missing_from_the_nav(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    shutil.copy(root / "notebooks" / "02-capture-mode.ipynb", root / "notebooks" / "03-extra.ipynb")
    with pytest.raises(docs_site.DocsBuildError, match="03-extra.ipynb"):
        docs_site.build(root, quiet=True)


def test_build_fails_on_a_broken_link_in_a_notebook(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    notebook = root / "notebooks" / "02-capture-mode.ipynb"
    text = notebook.read_text()
    assert "(01-getting-started.ipynb)" in text
    notebook.write_text(text.replace("(01-getting-started.ipynb)", "(00-missing.ipynb)"))
    with pytest.raises(docs_site.DocsBuildError, match=r"02-capture-mode\.ipynb: link '00-missing"):
        docs_site.build(root, quiet=True)


def test_build_fails_on_a_missing_figure_in_a_notebook(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    notebook = root / "notebooks" / "02-capture-mode.ipynb"
    text = notebook.read_text()
    first_png = re.search(r'"image/png": "([^"]+)"', text)
    assert first_png
    notebook.write_text(text.replace(first_png.group(1), "", 1))
    with pytest.raises(docs_site.DocsBuildError, match="02-capture-mode.html: an empty"):
        docs_site.build(root, quiet=True)


def test_build_fails_on_a_notebook_without_outputs(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    notebook = root / "notebooks" / "01-getting-started.ipynb"
    text = re.sub(r'"execution_count": \d+', '"execution_count": null', notebook.read_text())
    notebook.write_text(text)
    with pytest.raises(docs_site.DocsBuildError, match="01-getting-started.ipynb: not executed"):
        docs_site.build(root, quiet=True)


def test_inventory_is_read_from_the_notebooks() -> None:
    info = docs_site.read_notebook(ROOT / "notebooks" / "01-getting-started.ipynb")
    assert info.number == "01" and info.title
    assert info.learn and info.needs_gpu and info.runtime
    table = docs_site.notebook_inventory([info])
    assert "(notebooks/01-getting-started.ipynb)" in table


def test_urls_of_the_site_are_relative(site: Path) -> None:
    """use_directory_urls is off: the site works opened from the file system, too."""
    index = (site / "index.html").read_text()
    hrefs = re.findall(r'href="([^"]+)"', index)
    absolute = [h for h in hrefs if h.startswith("/") and not urlsplit(h).netloc]
    assert not absolute
