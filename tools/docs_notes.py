"""The notes at the top of a notebook's page on the docs site: the download link with what the
notebook needs to run (its first cell stops with the same words outside the checkout), and, for
a notebook not run yet, that its outputs come with its first run."""

from __future__ import annotations

# A new notebook is committed before its first GPU run (the runner's executed notebook follows):
# its page says so. tests/notebooks/test_committed_notebooks.py names each such notebook
# (AWAITS_ITS_FIRST_GPU_RUN), so that none stays unexecuted unnoticed.
RERUN_NOTE = (
    '<p class="notebook-awaits-rerun"><strong>Awaiting a re-run.</strong> This notebook\'s '
    "code changed after the run whose outputs this page shows ({}); cells added since have no "
    "outputs. The next run on the GPU machine replaces this page. Run it yourself with "
    "<code>make lab</code>.</p>\n"
)
AWAITING_NOTE = (
    '<p class="notebook-awaits-run"><strong>Not run yet.</strong> This notebook is shown '
    "without outputs: they come with its first run on the GPU machine, which replaces "
    "this page. Run it yourself with <code>make lab</code>.</p>\n"
)


# What a downloaded notebook needs; its first cell stops with the same words outside the checkout.
NEEDS_THE_REPOSITORY = (
    "It runs inside its repository, dali-dynamic-tutorials: clone it and run "
    "<code>make lab</code>, which sets up the packages and the data "
    "(<code>make data</code>) and opens the notebooks in JupyterLab."
)


def download_note(name: str) -> str:
    return (
        f'<p class="notebook-download"><a href="{name}" download title="the notebook as '
        f'committed, with its outputs">Download {name}</a> '
        f'<span class="notebook-needs">{NEEDS_THE_REPOSITORY}</span></p>\n'
    )
