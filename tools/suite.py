"""Run the notebooks headless with papermill and summarize what they found.

    python -m tools.suite run    [--device auto|cpu|gpu] [--scale full|ci|bench] [--out DIR]
    python -m tools.suite bench  [--device ...]   (trials for results/<machine>[-x<GPUs>]-<date>.json)
    python -m tools.suite record --run DIR [--to FILE]   (gather a run's results into one record)
    python -m tools.suite copy   --to DIR [--fresh]   (copies of the notebooks to work in or to test)

Each command is a module's job: which notebooks run and what papermill is handed
(``tools.run_parameters``: the parameters of each scale from the notebook's own metadata, only
those that change something), running them into a folder of their own with ``run.json``
(``tools.run_notebooks``; :func:`run_suite` is looked up here, ``tools.suite.run_suite``, by this
command and by the tests' CI-scale run), gathering a run folder into a record of ``results/``
(``tools.run_record``; the format in ``tools.record_format``), and the copies for `make lab` and
nbval (``tools.copies``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.data.paths import relative
from helpers.toolkit.devices import GPUUnavailableError
from helpers.toolkit.devices import resolve_device
from tools.copies import copy_notebooks
from tools.record_format import SCALES
from tools.run_notebooks import command_line
from tools.run_notebooks import default_out_dir
from tools.run_notebooks import run_suite
from tools.run_notebooks import summary
from tools.run_record import write_record

__all__ = ["main", "run_suite"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("run", "bench", "record", "copy"))
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    parser.add_argument(
        "--scale",
        default=None,
        choices=SCALES,
        help="parameter set (default: full for run, bench for bench; copy: none injected)",
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: new)")
    parser.add_argument("--only", nargs="*", help="notebook name prefixes, e.g. 01")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="run: notebooks at a time (default 1; more only at scale ci: notebooks side "
        "by side share the machine, so their timings are not kept)",
    )
    parser.add_argument("--run", type=Path, help="record: the run folder to gather")
    parser.add_argument("--to", type=Path, help="record: the file to write; copy: the folder")
    parser.add_argument("--fresh", action="store_true", help="copy: replace existing copies")
    parser.add_argument(
        "--checked-only",
        action="store_true",
        help="copy: only the notebooks that have nbval-check-output cells",
    )
    parser.add_argument(
        "--provenance",
        action="store_true",
        help="copy: a note first in each copy, where its stored outputs came from",
    )
    args = parser.parse_args(argv)
    if args.command == "record":
        if args.run is None:
            parser.error("record needs --run RUN_FOLDER")
        print(f"record: {relative(write_record(args.run, args.to))}")
        return 0
    if args.command == "copy":
        if args.to is None:
            parser.error("copy needs --to FOLDER")
        copies = copy_notebooks(args.to, args.fresh, args.provenance, args.checked_only, args.scale)
        print(f"{len(copies)} notebooks in {relative(args.to)}")
        return 0
    scale = args.scale or ("bench" if args.command == "bench" else "full")
    if args.device == "gpu":
        try:
            resolve_device("gpu")
        except GPUUnavailableError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    out_dir = args.out or default_out_dir(args.command)
    if args.jobs < 1 or (args.jobs > 1 and (args.command == "bench" or scale != "ci")):
        parser.error(
            "--jobs N: N >= 1, and more than 1 only with `run --scale ci` (notebooks side by "
            "side share the machine: their timings would not be worth keeping)"
        )
    runs = run_suite(args.device, scale, out_dir, args.only, command_line(argv), args.jobs)
    print(summary(runs, out_dir))
    if args.command == "bench" and all(r.ok for r in runs):
        print(f"bench record: {relative(write_record(out_dir))}")
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
