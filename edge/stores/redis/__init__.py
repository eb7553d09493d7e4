"""The Redis backends of the edge's stores, one module per kind of state (``edge/stores/base.py``
has the table): together they are larger than one readable file, the batch queue alone ~300 lines."""
