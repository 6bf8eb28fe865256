from __future__ import annotations

import pytest

from helpers.toolkit.parameters import ParameterError
from helpers.toolkit.parameters import check_known
from helpers.toolkit.parameters import positive_int
from helpers.toolkit.parameters import positive_ints
from helpers.toolkit.parameters import reject_unknown_parameters

DECLARED = {
    "batch_size": 8,
    "device": "auto",
    "rate": 0.5,
    "image_dir": None,
    "thread_counts": [1, 4],
    "flag": False,
}


def test_known_parameters_of_the_right_type_pass() -> None:
    check_known(
        DECLARED,
        {"batch_size": 4, "rate": 1, "image_dir": "/x", "thread_counts": [2], "flag": True},
        "nb.ipynb",
    )


def test_an_unknown_parameter_is_named_with_the_closest_declared_one() -> None:
    with pytest.raises(
        ParameterError,
        match="nb.ipynb: unknown parameter batchsize; did you mean "
        "batch_size[?] Its parameters are: batch_size, device",
    ):
        check_known(DECLARED, {"batchsize": 4}, "nb.ipynb")
    with pytest.raises(ParameterError, match=r"unknown parameter zzz\. Its parameters are"):
        check_known(DECLARED, {"zzz": 4}, "nb.ipynb")


@pytest.mark.parametrize(
    "name,value",
    [
        ("batch_size", "8"),
        ("batch_size", 8.0),
        ("batch_size", True),
        ("device", 1),
        ("thread_counts", 4),
        ("flag", 1),
    ],
)
def test_a_mistyped_parameter_is_named(name, value) -> None:
    with pytest.raises(ParameterError, match=f"parameter {name} must be of type"):
        check_known(DECLARED, {name: value}, "nb.ipynb")


@pytest.mark.parametrize("value", [0, -1, 2.5, "3", True, None])
def test_positive_int_rejects(value) -> None:
    with pytest.raises(ParameterError, match="batch_size"):
        positive_int("batch_size", value)


def test_positive_ints() -> None:
    assert positive_ints("threads", [1, 2]) == [1, 2]
    for bad in ([], "12", [1, 0], 4):
        with pytest.raises(ParameterError, match="threads"):
            positive_ints("threads", bad)


PARAMETERS_CELL = 'batch_size = 8  # images per batch\ndevice = "auto"\nrate = 0.5\n'


def test_nothing_injected_passes() -> None:
    reject_unknown_parameters(["", PARAMETERS_CELL, "import os"])


def test_a_mistyped_injected_name_suggests_the_declared_one() -> None:
    injected = "# Parameters\nbatchsize = 8\n"
    with pytest.raises(ParameterError, match="unknown parameter batchsize; did you mean batch_size?"):
        reject_unknown_parameters(["", PARAMETERS_CELL, injected], "nb.ipynb")


def test_an_injected_value_of_the_wrong_type_is_named() -> None:
    with pytest.raises(ParameterError, match="parameter batch_size must be of type int"):
        reject_unknown_parameters(["", PARAMETERS_CELL, '# Parameters\nbatch_size = "8"\n'])
    reject_unknown_parameters(["", PARAMETERS_CELL, "# Parameters\nbatch_size = 4\nrate = 1\n"])


def test_at_least_checks_every_named_parameter_in_one_call() -> None:
    from helpers.toolkit.parameters import at_least

    minimums = {"batch_size": 1, "trials": (2, "a 95% interval needs two trials")}
    at_least({"batch_size": 8, "trials": 2, "other": "x"}, minimums)
    with pytest.raises(ParameterError, match="parameter batch_size must be a positive integer, not 0"):
        at_least({"batch_size": 0, "trials": 3}, minimums)
    with pytest.raises(ParameterError, match="parameter trials must be at least 2, not 1: a 95% interval"):
        at_least({"batch_size": 8, "trials": 1}, minimums)
    with pytest.raises(ParameterError, match="parameter trials must be a positive integer, not '3'"):
        at_least({"batch_size": 8, "trials": "3"}, minimums)
