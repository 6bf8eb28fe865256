"""The one registry of the suite's notebooks: every ``notebooks/NN-slug.ipynb`` (two digits, a
dash, the slug), each described by its own metadata, ``metadata["dali_tutorials"]``.

There is no list of notebooks anywhere else: a notebook is registered by being committed under that
name with that metadata. Everything that lists notebooks reads them from here: the runner
(``tools.run_parameters``: which notebooks run, the parameters of each scale), the README's inventory
(``tools.inventory``), the results page's tables (``tools.notebook_tables``: titles and headline
labels), the README's findings (``tools.findings``: topics and their order), the comparison with
DALI's published figures (``tools.published_comparison``), the docs site's nav and files
(``docs/hooks.py``), the refusal tests, the GPU tier and every test parametrized by notebook; the
notebooks and their lessons read their goals' targets here (:func:`goal_targets`), and their tests
check the recorded goals against them. ``tests/data/test_registry.py`` adds a notebook 99 to a copy of
the checkout and checks that each of them finds it. It lives in ``helpers`` (the data layer), not
``tools``, because the lessons read it and ``helpers`` never imports ``tools``.

An entry's fields, from the metadata (``title``, ``learn``, ``needs_gpu`` and ``scales`` are
required, the others optional):

- ``title``: the notebook's title (the inventory's link text, the results page's heading);
- ``learn``: what a reader learns to do (the inventory's column);
- ``needs_gpu``: the inventory's sentence on whether it needs a GPU ("No: ..."; a notebook that
  needs one says what happens without it);
- ``scales``: the runner's parameters for the ``ci`` and ``bench`` scales (``full`` is the
  notebook's own defaults);
- ``headline``: ``{key: {"label", "format", "interval"}}`` for the headline figures it saves
  (``tools.notebook_tables``);
- ``goals``: ``{name: target}`` or ``{name: {"target", "per"}}``, the goals it judges ratios by
  (:class:`Goal`: a name may hold ``{parameter}`` fields, and ``per`` names a value the target is
  multiplied by, as notebook 04's weak scaling is 0.95 per process);
- ``finding``: ``{"topic", "order"}``, the README bullet's topic and its place among the bullets
  (a notebook without one is listed after them under its title);
- ``published``: ``[{"seed", "key", "kind", "what"}]``, the figures that DALI's own tutorials
  printed (``results/seed.json``, key ``seed``) and that the notebook records as headline ``key``:
  ``kind`` ``"rate"`` or ``"ratio"``, ``what`` the words beside it (a ratio's hold ``{}`` for the
  figure).

:func:`notebook_paths` only finds the files (the docs' nav needs no more, so that a notebook with
broken metadata still gets its page, where the build names the fault); :func:`notebooks` reads
each entry and raises :class:`RegistryError`, naming the notebook and the missing key, when the
metadata is incomplete.
"""

from __future__ import annotations

import json
import string
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
PUBLISHED_FIELDS = ("seed", "key", "kind", "what")
PUBLISHED_KINDS = ("rate", "ratio")
# the GPU every notebook's goals are stated for: a run on another GPU measures its ratios, and its
# verdicts say how that machine compares, not whether the goals hold (:func:`judges_goals`)
GOALS_GPU = "H200"


class RegistryError(ValueError):
    """A notebook whose metadata cannot be its registry entry; the message names the notebook,
    the key and what to add."""


@dataclass(frozen=True)
class Goal:
    """A goal a notebook judges a ratio by: its ``name`` (``{parameter}`` fields filled from the
    run's values), its ``target``, and ``per``, the name of a value the target is multiplied by
    (``"processes"``: 0.95 per process), or None."""

    name: str
    target: float
    per: str | None = None

    def resolved(self, **values: Any) -> tuple[str, float]:
        """``(name, target)`` for a run with these values: ``{threads}`` filled, the target
        multiplied by ``values[per]``; a value it needs and lacks is an error that names it."""
        needed = [k for k in [*_fields(self.name), *([self.per] if self.per else [])] if k not in values]
        if needed:
            raise KeyError(f"goal {self.name!r} needs {', '.join(needed)}: pass them to goal_targets(...)")
        return self.name.format(**values), self.target * (values[self.per] if self.per else 1)


@dataclass(frozen=True)
class Notebook:
    """One notebook of the suite, as its metadata describes it."""

    path: Path
    title: str
    learn: str
    needs_gpu: str
    scales: dict[str, dict[str, Any]]
    headline: dict[str, dict[str, Any]] = field(default_factory=dict)
    goals: dict[str, Goal] = field(default_factory=dict)
    finding: dict[str, Any] = field(default_factory=dict)
    published: tuple[dict[str, str], ...] = ()

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
    malformed: list[str] = []  # optional keys present in a form the suite cannot read
    headline = meta.get("headline", {})
    if not isinstance(headline, dict):
        malformed.append("headline (a dict of {key: {label, format, interval}})")
    goals = _goals(meta.get("goals", {}), malformed)
    finding = meta.get("finding", {})
    if not isinstance(finding, dict) or (
        finding and not (isinstance(finding.get("topic"), str) and isinstance(finding.get("order"), int))
    ):
        malformed.append('finding (a dict {"topic": text, "order": a whole number})')
    published = meta.get("published", [])
    if not isinstance(published, list) or not all(
        isinstance(p, dict) and set(PUBLISHED_FIELDS) <= set(p) and p["kind"] in PUBLISHED_KINDS
        for p in published
    ):
        malformed.append(f"published (a list of {{{', '.join(PUBLISHED_FIELDS)}}}, kind rate or ratio)")
    if malformed and not missing:
        raise RegistryError(
            f"{path.name}: metadata[{KEY!r}] has {', '.join(malformed)} in another form; write it in "
            "the form given here (helpers/data/registry.py describes each field)"
        )
    if missing:
        raise RegistryError(
            f"{path.name}: metadata[{KEY!r}] lacks {', '.join([*missing, *malformed])}; the notebook's registry "
            f"entry is read from there (helpers/data/registry.py): add {', '.join(REQUIRED_TEXT)} "
            f'(text) and scales ({{"ci": {{...}}, "bench": {{...}}}}: the runner\'s parameters of each scale)'
        )
    return Notebook(
        path=path,
        title=str(meta["title"]),
        learn=str(meta["learn"]),
        needs_gpu=str(meta["needs_gpu"]),
        scales={k: dict(v) for k, v in scales.items()},
        headline=dict(headline),
        goals=goals,
        finding=dict(finding),
        published=tuple(dict(p) for p in published),
    )


def _fields(text: str) -> list[str]:
    """The ``{name}`` fields of a format string."""
    return [name for _, name, _, _ in string.Formatter().parse(text) if name]


def _goals(found: Any, missing: list[str]) -> dict[str, Goal]:
    """The ``goals`` of an entry as :class:`Goal`; what is malformed is added to ``missing``."""
    wrong = 'goals (a dict of {name: target} or {name: {"target", "per"}}, a target a positive number, per a name)'
    if not isinstance(found, dict):
        missing.append(wrong)
        return {}
    goals = {}
    for name, spec in found.items():
        spec = spec if isinstance(spec, dict) else {"target": spec}
        target, per = spec.get("target"), spec.get("per")
        if (
            isinstance(target, bool)
            or not isinstance(target, (int, float))
            or target <= 0
            or not isinstance(per, (str, type(None)))
        ):
            missing.append(f"{wrong}: {name!r}")
            continue
        goals[name] = Goal(name, float(target), per)
    return goals


def notebooks(root: Path = REPO_ROOT) -> list[Notebook]:
    """Every notebook of the checkout at ``root``, read from its metadata, in order."""
    return [read(path) for path in notebook_paths(root)]


def entry(slug: str, root: Path = REPO_ROOT) -> Notebook:
    """The registry entry of ``notebooks/<slug>.ipynb``; an error that says where notebooks are
    looked for when there is none."""
    path = root / FOLDER / f"{slug}.ipynb"
    if not path.is_file():
        raise RegistryError(
            f"{slug}: no {FOLDER}/{slug}.ipynb in {root.name}/: the registry holds {FOLDER}/NN-slug.ipynb"
        )
    return read(path)


def goal_targets(slug: str, root: Path = REPO_ROOT, **values: Any) -> dict[str, float]:
    """``{name: target}`` of the notebook's goals, as its metadata states them, for a run with
    these values (:meth:`Goal.resolved`: ``threads=4`` fills a name's ``{threads}``,
    ``processes=2`` doubles a target stated per process)."""
    return dict(goal.resolved(**values) for goal in entry(slug, root).goals.values())


def judges_goals(gpu: str | None) -> bool:
    """Whether a run on ``gpu`` (its name, ``"NVIDIA H200"``; None: no GPU) judges the goals, which
    are stated for :data:`GOALS_GPU`."""
    return GOALS_GPU in (gpu or "").split()
