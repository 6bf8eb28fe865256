"""Where things are: the checkout, the data folder, and DALI_extra's layout.

A leaf module (it imports nothing of the project), so that every other module can import it.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# DALI_extra's layout (https://github.com/NVIDIA/DALI_extra), which the embedded data copies
MNIST_TRAINING = Path("db/MNIST/training")
MNIST_TESTING = Path("db/MNIST/testing")


def default_data_dir() -> Path:
    """``$DALI_TUTORIALS_DATA`` if set, else ``data/`` of this checkout."""
    return Path(os.environ.get("DALI_TUTORIALS_DATA") or REPO_ROOT / "data")


def relative(path: str | Path) -> str:
    """``path`` as printed in notebooks and results JSON, with nothing of the machine in it:
    relative to the checkout, to ``$DALI_EXTRA_PATH`` or to the home folder, when inside one."""
    path = Path(path).expanduser()
    if not path.is_absolute():
        return path.as_posix()
    bases = [(REPO_ROOT, "")]
    if os.environ.get("DALI_EXTRA_PATH", "").strip():
        bases.append((Path(os.environ["DALI_EXTRA_PATH"].strip()).expanduser(), "$DALI_EXTRA_PATH/"))
    bases.append((Path.home(), "~/"))
    for base, prefix in bases:
        # as given first (a checkout's data/ may be a link to a folder elsewhere), then resolved
        for mine, theirs in ((Path(os.path.normpath(path)), Path(os.path.normpath(base))),
                             (path.resolve(), base.resolve())):
            try:
                inside = mine.relative_to(theirs)
            except ValueError:
                continue
            return f"{prefix}{inside.as_posix()}" if prefix or str(inside) != "." else "."
    return path.as_posix()


def work_folder(name: str) -> Path:
    """A notebook's scratch folder, ``build/<name>`` of the checkout: the same name in every run
    (so that the outputs name no temporary folder), emptied when the notebook starts. It holds
    only what the notebook itself writes there."""
    import shutil

    folder = REPO_ROOT / "build" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder
