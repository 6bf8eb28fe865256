"""The data layer: where the data sets are (``paths``, ``data_sources``), how the embedded ones are
built and checked (``embedded_data``, ``embedded_video``, ``caffe2_records``), the errors that say
what to run, and the results files. It imports nothing else of the project."""
