"""The writer thread and the process around it: worker.py (the seam: the verbs the caller's side
uses), intake.py (what waits, in call order, and its bounds), output.py (the files, each batch
built, encoded and written), encoding.py (events to bytes), lifecycle.py (exit, fork, SIGTERM,
the reaper), callsite.py (a warning shown at the user's line, from either side)."""
