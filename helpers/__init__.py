"""What the notebooks import to teach, one small module per concern.

CONTRIBUTING.md's module table says what each module is for (tests/test_structure.py keeps it in
step with the modules here). The suite's machinery (the headless runner, the generated tables,
the docs build) lives in ``tools``, which imports ``helpers``; ``helpers`` never imports ``tools``.
"""
