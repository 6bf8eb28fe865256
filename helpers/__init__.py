"""What the notebooks import, in three kinds, each a folder:

- ``helpers.toolkit``: reusable pieces a user could take (the capture guard, loaders, the harness,
  checkpoints, hardware readings, charts);
- ``helpers.data``: the data layer (where the data is, how the embedded sets are built, errors);
- ``helpers.lessons``: one module per notebook, its bookkeeping (``nbNN_<name>``).

Imports go one way: lessons -> toolkit -> data (``pyproject.toml``'s import-linter contracts).
CONTRIBUTING.md's module table is checked against these folders (tests/test_structure.py). The
suite's machinery lives in ``tools``, which imports ``helpers``; ``helpers`` never imports ``tools``.
"""
