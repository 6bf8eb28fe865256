"""helpers.toolkit.cpu_time: the CPU time of this process and of the processes it started."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from helpers.data.paths import REPO_ROOT

# In a process of its own: the tests' process has other children at times (the CI-scale run's
# kernels, tests/conftest.py), which the process tree counts too.
SCENARIO = textwrap.dedent("""
    import subprocess, sys, time
    from helpers.toolkit.cpu_time import cpu_seconds_since, process_tree_cpu

    before = process_tree_cpu()
    # a child that burns about 0.4 s of CPU and then waits to be measured (a persistent worker)
    child = subprocess.Popen([sys.executable, "-c", "import time, sys\\nend = time.process_time() + 0.4\\n"
                              "while time.process_time() < end: pass\\nsys.stdout.write('done\\\\n')\\n"
                              "sys.stdout.flush()\\ntime.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "done\\n"
        assert child.pid in process_tree_cpu()
        used = cpu_seconds_since(before)
        idle = process_tree_cpu()
        time.sleep(0.3)
        print(used, cpu_seconds_since(idle))
    finally:
        child.kill()
        child.wait()
""")


def test_a_child_process_counts_and_an_idle_wait_does_not() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": ""},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    used, idle = map(float, done.stdout.split())
    assert used >= 0.35, used  # the child's 0.4 s, counted while it is alive
    assert idle < 0.2, idle  # a process tree that waits uses next to nothing
