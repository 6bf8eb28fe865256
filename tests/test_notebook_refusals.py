"""Every notebook refuses a parameter that cannot work, in its set-up, with a message that names it
and says what to do, before it starts any work: the set-up cells executed in this process
(``notebook_setup.run_setup``). One refusal per notebook also runs in a kernel through the runner,
in that notebook's test file."""

from __future__ import annotations

from pathlib import Path

import pytest
from notebook_setup import run_setup
from notebook_setup import setup_cells

from helpers.data_sources import DataSourceError
from helpers.data_sources import locate_data
from helpers.data_sources import locate_photos
from helpers.devices import GPUUnavailableError
from helpers.devices import gpu_available
from helpers.lmdb_subset import first_records
from helpers.parameters import ParameterError
from helpers.paths import REPO_ROOT
from tools import suite

NOTEBOOKS = REPO_ROOT / "notebooks"
# the set-ups of 04 and 06 empty their scratch folders, where the CI-scale run may be at work
pytestmark = pytest.mark.usefixtures("scratch_folders_to_ourselves")
no_gpu = pytest.mark.skipif(gpu_available(), reason="needs a machine without a GPU")

CASES = [
    ("01-getting-started", {"batch_size": 0}, ParameterError,
     "parameter batch_size must be a positive integer"),
    ("01-getting-started", {"batch_size": 22}, ParameterError, "batch_size=22 is larger than the 21 images"),
    ("01-getting-started", {"image_dir": "/no/such/folder"}, DataSourceError,
     "image folder /no/such/folder does not exist"),
    ("01-getting-started", {"speed_batch_size": 65}, ParameterError,
     "speed_batch_size=65 is larger than speed_images=64"),
    ("01-getting-started", {"hw_decoder_loads": [0.5, 2.0]}, ParameterError,
     "hw_decoder_loads must be a non-empty list of numbers in [0, 1]"),
    ("01-getting-started", {"trials": 1}, ParameterError,
     "parameter trials must be at least 2, not 1: a 95% interval needs two trials"),
    ("01-getting-started", {"batchsize": 8}, ParameterError,
     "unknown parameter batchsize; did you mean batch_size?"),
    ("02-capture-mode", {"batchsize": 8}, ParameterError,
     "unknown parameter batchsize; did you mean batch_size?"),
    ("02-capture-mode", {"epochs": "3"}, ParameterError,
     "parameter epochs must be a positive integer, not '3'"),
    ("02-capture-mode", {"placement_epochs": 2}, ParameterError,
     "parameter placement_epochs must be at least 3, not 2: the first epoch of each way is an untimed"),
    pytest.param("02-capture-mode", {"device": "gpu"}, GPUUnavailableError, 'device="cpu"', marks=no_gpu),
    ("03-feeding-pytorch-fast", {"batch_sizes": [64, 100], "device": "cpu"}, ParameterError,
     "every loader batch size must be a multiple of the first (64)"),
    ("04-scaling-out", {"processes": 1}, ParameterError, "parameter processes must be at least 2"),
    ("04-scaling-out", {"records": 10**9}, ParameterError, "records: use at most"),
    ("06-checkpoint-resume", {"processes": 1}, ParameterError, "parameter processes must be at least 2"),
    ("06-checkpoint-resume", {"epochs": 1}, ParameterError,
     "parameter epochs must be at least 2, not 1: the first epoch of each benchmark trial"),
    ("06-checkpoint-resume", {"every": 40, "records": 1024}, ParameterError,
     "parameter every=40 is too large for 24 steps"),
]


@pytest.mark.parametrize("name,parameters,error,message", CASES)
def test_a_bad_parameter_is_refused_by_name_in_the_set_up(name, parameters, error, message) -> None:
    """Refused before the set-up empties or makes the notebook's scratch folder (build/nb04,
    ``helpers.paths.work_folder``), which another run of the notebook may be using."""
    scratch = REPO_ROOT / "build" / f"nb{name[:2]}"

    def state() -> int | None:  # emptying it makes it anew: another inode
        return scratch.stat().st_ino if scratch.is_dir() else None

    before = state()
    notebook = NOTEBOOKS / f"{name}.ipynb"
    with pytest.raises(error) as raised:
        run_setup(notebook, {**suite.parameters_for(notebook, "ci", "cpu"), **parameters})
    assert message in str(raised.value)
    assert state() == before, "a refused set-up made or emptied the notebook's scratch folder"


def test_a_loader_batch_larger_than_the_records_of_an_epoch_is_refused(tmp_path: Path) -> None:
    small = first_records(locate_data(verbose=False).mnist_training, tmp_path / "small", 200)
    with pytest.raises(ParameterError, match=r"the largest loader batch \(256\) is larger than the 200"):
        run_setup(NOTEBOOKS / "03-feeding-pytorch-fast.ipynb",
                  {"data_path": str(small), "batch_sizes": [64, 256], "device": "cpu"})


@pytest.mark.parametrize("case, expected", [
    ("missing", "does not exist. Pass a folder that holds one subfolder of images per class"),
    ("empty", "No images found in"),
    ("small", "is larger than the 4 images in"),
])
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


def test_good_parameters_pass_the_set_up_and_it_ends_before_the_first_lesson() -> None:
    """The set-up of each notebook at its CI parameters runs through, so each refusal above is
    caused by its own bad value; and it stops before the lessons (no cell of them is run)."""
    for notebook in sorted(NOTEBOOKS.glob("0[1-7]-*.ipynb")):
        cells = setup_cells(notebook)
        assert any("parameters" in c.metadata.get("tags", []) for c in cells), notebook.name
        namespace = run_setup(notebook, suite.parameters_for(notebook, "ci", "cpu"))
        assert namespace["device"] == "cpu", notebook.name
