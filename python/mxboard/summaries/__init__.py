"""Summary builders: pure functions, numpy in, `Summary` out, no I/O. One module a kind."""
