"""The suite's machinery, apart from what the notebooks teach: the headless runner
(``tools.suite``, the command line of ``tools.run_parameters``, ``tools.run_notebooks``,
``tools.run_record`` and ``tools.copies``), the README's generated tables
and the docs build: whatever only ``make`` and the tests call.

It may import ``helpers``; ``helpers`` never imports it (tests/test_structure.py checks both).
"""
