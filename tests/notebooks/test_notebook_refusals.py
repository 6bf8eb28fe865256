"""Every notebook refuses a parameter that cannot work, in its set-up, with a message that names it
and says what to do, before it starts any work: the set-up cells executed in this process
(``notebook_setup.run_setup``). Each notebook's refusals are listed in its own test file
(``REFUSALS`` in tests/notebooks/test_nbNN.py); this file runs them, and the good parameters, for every
notebook of the registry (``helpers.data.registry``). One refusal per notebook also runs in a kernel
through the runner, in that notebook's test file."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from notebook_setup import refusal_cases
from notebook_setup import run_setup
from notebook_setup import setup_cells

from helpers.data.data_sources import DataSourceError
from helpers.data.data_sources import locate_data
from helpers.data.data_sources import locate_photos
from helpers.data.lmdb_subset import first_records
from helpers.data.paths import REPO_ROOT
from helpers.data.registry import notebook_paths
from helpers.toolkit.parameters import ParameterError
from tools import run_parameters

NOTEBOOKS = REPO_ROOT / "notebooks"
# the set-ups of 04 and 06 empty their scratch folders, where the CI-scale run may be at work
pytestmark = pytest.mark.usefixtures("scratch_folders_to_ourselves")


@pytest.mark.parametrize("name,parameters,error,message", refusal_cases())
def test_a_bad_parameter_is_refused_by_name_in_the_set_up(name, parameters, error, message) -> None:
    """Refused before the set-up empties or makes the notebook's scratch folder (build/nb04,
    ``helpers.data.paths.work_folder``), which another run of the notebook may be using. The cases are
    each notebook's ``REFUSALS``, in its own test file (``notebook_setup.refusal_cases``)."""
    if error is None:
        pytest.fail(message, pytrace=False)
    scratch = REPO_ROOT / "build" / f"nb{name[:2]}"

    def state() -> int | None:  # emptying it makes it anew: another inode
        return scratch.stat().st_ino if scratch.is_dir() else None

    before = state()
    notebook = NOTEBOOKS / f"{name}.ipynb"
    with pytest.raises(error) as raised:
        run_setup(notebook, {**run_parameters.parameters_for(notebook, "ci", "cpu"), **parameters})
    assert message in str(raised.value)
    assert state() == before, "a refused set-up made or emptied the notebook's scratch folder"


def test_a_loader_batch_larger_than_the_records_of_an_epoch_is_refused(tmp_path: Path) -> None:
    small = first_records(locate_data(verbose=False).mnist_training, tmp_path / "small", 200)
    with pytest.raises(ParameterError, match=r"the largest loader batch \(256\) is larger than the 200"):
        run_setup(
            NOTEBOOKS / "03-feeding-pytorch-fast.ipynb",
            {"data_path": str(small), "batch_sizes": [64, 256], "device": "cpu"},
        )


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing", "does not exist. Pass a folder that holds one subfolder of images per class"),
        ("empty", "No images found in"),
        ("small", "is larger than the 4 images in"),
    ],
)
def test_a_bad_image_dir_says_what_to_do(tmp_path: Path, case: str, expected: str) -> None:
    folder = tmp_path / "photos"
    if case != "missing":
        (folder / "a").mkdir(parents=True)
    if case == "small":
        for file in sorted(locate_photos(128, verbose=False).val.glob("*/*.jpg"))[:4]:
            (folder / "a" / file.name).write_bytes(file.read_bytes())
    with pytest.raises((DataSourceError, ParameterError)) as raised:
        run_setup(NOTEBOOKS / "05-photos-at-scale.ipynb", {"image_dir": str(folder), "device": "cpu"})
    assert expected in str(raised.value)


def test_a_video_dir_that_is_not_a_folder_of_videos_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "cats").mkdir()
    (tmp_path / "cats" / "a.mp4").write_text("not a video")
    with pytest.raises(DataSourceError) as raised:
        run_setup(NOTEBOOKS / "07-video-clips.ipynb", {"video_dir": str(tmp_path), "device": "cpu"})
    assert "video_dir" in str(raised.value) and "a.mp4" in str(raised.value)


@pytest.mark.parametrize("notebook", notebook_paths(), ids=lambda p: p.stem)
def test_good_parameters_pass_the_set_up_and_it_ends_before_the_first_lesson(notebook: Path) -> None:
    """The set-up of each notebook of the registry at its CI parameters runs through, so each
    refusal above is caused by its own bad value; and it stops before the lessons (no cell of
    them is run)."""
    cells = setup_cells(notebook)
    assert any("parameters" in c.metadata.get("tags", []) for c in cells), notebook.name
    namespace = run_setup(notebook, run_parameters.parameters_for(notebook, "ci", "cpu"))
    assert namespace["device"] == "cpu", notebook.name


def test_the_set_up_skips_an_opening_lesson_and_stops_at_the_first_lesson_after_the_parameters(
    tmp_path: Path,
) -> None:
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("guard = 1", metadata={"tags": ["hide-input"]}),
            nbformat.v4.new_code_cell("opening = lesson_needs_no_parameter"),
            nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell("y = x + 1", metadata={"tags": ["hide-input"]}),
            nbformat.v4.new_code_cell("raise AssertionError('a lesson, not the set-up')"),
            nbformat.v4.new_code_cell("z = 3", metadata={"tags": ["hide-input"]}),
        ]
    )
    path = tmp_path / "98-x.ipynb"
    nbformat.write(notebook, path)
    assert [c.source for c in setup_cells(path)] == ["guard = 1", "x = 1", "y = x + 1"]
    assert run_setup(path, {"x": 5})["y"] == 6
