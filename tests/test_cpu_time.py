"""helpers.cpu_time: the CPU time of this process and of the processes it started."""

from __future__ import annotations

import subprocess
import sys
import time

from helpers.cpu_time import cpu_seconds_since
from helpers.cpu_time import process_tree_cpu


def test_a_child_process_counts_and_an_idle_wait_does_not() -> None:
    before = process_tree_cpu()
    # a child that burns about 0.4 s of CPU and then waits to be measured (a persistent worker)
    child = subprocess.Popen([sys.executable, "-c", "import time, sys\nend = time.process_time() + 0.4\n"
                              "while time.process_time() < end: pass\nsys.stdout.write('done\\n')\n"
                              "sys.stdout.flush()\ntime.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "done\n"
        assert child.pid in process_tree_cpu()
        used = cpu_seconds_since(before)
        assert used >= 0.35, used
        idle = process_tree_cpu()
        time.sleep(0.3)
        assert cpu_seconds_since(idle) < 0.2
    finally:
        child.kill()
        child.wait()
