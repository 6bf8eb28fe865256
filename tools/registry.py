"""The one registry of the suite's notebooks: every ``notebooks/NN-slug.ipynb`` (two digits, a
dash, the slug), each described by its own metadata, ``metadata["dali_tutorials"]``.

There is no list of notebooks anywhere else: a notebook is registered by being committed under that
name with that metadata. Everything that lists notebooks reads them from here: the runner
(``tools.run_parameters``: which notebooks run, the parameters of each scale), the README's inventory
(``tools.inventory``), the results page's tables (``tools.notebook_tables``: titles and headline
labels), the docs site's nav and files (``docs/hooks.py``), the refusal tests, the GPU tier and
every test parametrized by notebook. ``tests/test_registry.py`` adds a notebook 99 to a copy of
the checkout and checks that each of them finds it.

An entry's fields, from the metadata (``title``, ``learn``, ``needs_gpu`` and ``scales`` are
required, ``headline`` is optional):

- ``title``: the notebook's title (the inventory's link text, the results page's heading);
- ``learn``: what a reader learns to do (the inventory's column);
- ``needs_gpu``: the inventory's sentence on whether it needs a GPU ("No: ..."; a notebook that
  needs one says what happens without it);
- ``scales``: the runner's parameters for the ``ci`` and ``bench`` scales (``full`` is the
  notebook's own defaults);
- ``headline``: ``{key: {"label", "format", "interval"}}`` for the headline figures it saves
  (``tools.notebook_tables``).

:func:`notebook_paths` only finds the files (the docs' nav needs no more, so that a notebook with
broken metadata still gets its page, where the build names the fault); :func:`notebooks` reads
each entry and raises :class:`RegistryError`, naming the notebook and the missing key, when the
metadata is incomplete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from helpers.data.paths import REPO_ROOT

FOLDER = "notebooks"
PATTERN = "[0-9][0-9]-*.ipynb"  # NN-slug.ipynb
KEY = "dali_tutorials"
REQUIRED_TEXT = ("title", "learn", "needs_gpu")
REQUIRED_SCALES = ("ci", "bench")  # "full" is the notebook's defaults


class RegistryError(ValueError):
    """A notebook whose metadata cannot be its registry entry; the message names the notebook,
    the key and what to add."""


@dataclass(frozen=True)
class Notebook:
    """One notebook of the suite, as its metadata describes it."""

    path: Path
    title: str
    learn: str
    needs_gpu: str
    scales: dict[str, dict[str, Any]]
    headline: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def number(self) -> str:
        """The two digits of its name: ``"07"``."""
        return self.path.name[:2]

    @property
    def slug(self) -> str:
        """Its file's stem, the name the runner, the records and the tests use: ``"07-video-clips"``."""
        return self.path.stem

    @property
    def site_path(self) -> str:
        """Its path in the docs site (and in the checkout): ``"notebooks/07-video-clips.ipynb"``."""
        return f"{FOLDER}/{self.path.name}"


def notebook_paths(root: Path = REPO_ROOT) -> list[Path]:
    """The notebooks of the checkout at ``root``, in their order (``notebooks/NN-*.ipynb``)."""
    return sorted((root / FOLDER).glob(PATTERN))


def read_metadata(path: Path) -> dict[str, Any]:
    """A notebook's ``metadata["dali_tutorials"]`` as it is (possibly empty); an error naming the
    notebook when the file is not a notebook."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RegistryError(f"{path.name}: cannot read the notebook ({err})") from err
    meta = notebook.get("metadata", {}).get(KEY) if isinstance(notebook, dict) else None
    return dict(meta) if isinstance(meta, dict) else {}


def read(path: Path) -> Notebook:
    """The registry entry of the notebook at ``path``; :class:`RegistryError` names the notebook
    and each key that is missing or empty, and says where to add it."""
    meta = read_metadata(path)
    missing = [k for k in REQUIRED_TEXT if not str(meta.get(k, "")).strip()]
    scales = meta.get("scales")
    if not isinstance(scales, dict):
        missing.append("scales")
    else:
        missing += [f"scales.{s}" for s in REQUIRED_SCALES if not isinstance(scales.get(s), dict)]
    headline = meta.get("headline", {})
    if not isinstance(headline, dict):
        missing.append("headline (a dict of {key: {label, format, interval}})")
    if missing:
        raise RegistryError(
            f"{path.name}: metadata[{KEY!r}] lacks {', '.join(missing)}; the notebook's registry entry "
            f"is read from there (tools/registry.py): add {', '.join(REQUIRED_TEXT)} (text) and scales "
            f'({{"ci": {{...}}, "bench": {{...}}}}: the runner\'s parameters of each scale)'
        )
    return Notebook(
        path=path,
        title=str(meta["title"]),
        learn=str(meta["learn"]),
        needs_gpu=str(meta["needs_gpu"]),
        scales={k: dict(v) for k, v in scales.items()},
        headline=dict(headline),
    )


def notebooks(root: Path = REPO_ROOT) -> list[Notebook]:
    """Every notebook of the checkout at ``root``, read from its metadata, in order."""
    return [read(path) for path in notebook_paths(root)]
