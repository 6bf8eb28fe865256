"""What the notebooks import to teach, one small module per concern:

- ``helpers.paths``: where things are (the checkout, the data folder, DALI_extra's layout);
  a leaf that every other module may import.
- ``helpers.data_sources``: the data every notebook reads (``locate_data``), DALI_extra or the
  embedded default; image-folder checks.
- ``helpers.embedded_data``: builds the embedded default data (``make data``, or the notebooks
  on first use); ``helpers.caffe2_records``: the LMDB record format it writes.
- ``helpers.batches``, ``helpers.display``: samples out of a ``Batch``; image grids.
- ``helpers.devices``: ``"auto" | "cpu" | "gpu"``, with a clear error without a GPU.
- ``helpers.benchmarking``, ``helpers.plots``: the benchmark method (interleaved trials, ratios
  with 95% intervals, verdicts), results JSON; charts with intervals.
- ``helpers.capture_inspection``: which operators capture mode captured.
- ``helpers.mnist_model``: the MNIST classifier and its held-out accuracy.
- ``helpers.parameters``: notebook parameter checks (also under plain papermill).
- ``helpers.loader_benchmark``, ``helpers.loader_charts``, ``helpers.lmdb_dataset``: notebook
  03's configurations, one trial's timing, time split and profile excerpt; its charts; the
  DataLoader's ``Dataset`` (in a module, so that ``forkserver`` workers can import it).
- ``helpers.torchrun``, ``helpers.lmdb_subset``: notebook 04's launcher of
  ``python -m torch.distributed.run`` (time limit, multicast off, clear errors); a small LMDB
  made of the first records of another.

The suite's machinery (the headless runner, the generated tables, the docs build) lives in
``tools``, which imports ``helpers``; ``helpers`` never imports ``tools``.
"""
