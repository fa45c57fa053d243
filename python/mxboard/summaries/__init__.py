"""Summary builders: pure functions, numpy in, `Summary` out, no I/O. One module a kind; but
`projector.py` writes the Projector's files, through the storage (storage/) it is given."""
