"""Summary builders: pure functions that take numpy arrays and return a `Summary`, with no I/O.
There is one module per kind of summary. Only `projector.py` writes files: the Projector's, through
the storage (storage/) it is given."""
