"""An incremental local copy of a logdir in an object store, which the fast (Rust) loader serves:
that loader reads local paths only, and the Python one reads a store ten times slower.

Its parts: `loop.py` the passes (pacing, outages, copying what a pass plans), `plan.py` what a
listing asks for (pure: no disk, no store), `manifest.py` what was copied and the directory's
claim and lock, `directory.py` the files, never through a symlink, `stores.py` listing and
reading each kind of store. docs/server.md ("The mirror") says what each pass does, what it
guarantees, and what it costs.
"""
from .loop import MAX_RECORD_BYTES, Mirror
from .manifest import LOCK, MANIFEST

__all__ = ["Mirror", "MANIFEST", "LOCK", "MAX_RECORD_BYTES"]
