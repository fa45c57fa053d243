"""An incremental local copy of a logdir in an object store, which the fast (Rust) loader serves:
that loader reads local paths only, and the Python one reads a store ten times slower.

Its parts: `loop.py` the passes (pacing, outages, copying what a pass plans), `plan.py` what a
listing asks for (pure: no disk, no store), `manifest.py` what was copied and the directory's
claim and lock, `directory.py` the files, never through a symlink, `stores.py` listing and
reading each kind of store.

- Every pass lists the store once and fetches only what is new: new objects, and the new bytes
  of the objects that grew (range reads from where the copy ends), many requests at once
  (stores.py: on S3, presigned requests, a quarter of s3fs's CPU). Event files come first.
- Names are data: a name in the store has one local path (names.local_names), the name itself
  wherever the disk can hold it, so that runs are served as the store names them.
- mxboard's objects of one event file (`<file>`, `<file>.part0001`, ...: _format/names.py) are
  stitched into one local file, in name order; other writers' event files are copied as they
  are; other files (the projector's) are fetched whole and replace theirs at once.
- An event file only grows under the loader. Where its last object is larger, the copy's last
  VERIFY_BYTES are read again with the new bytes: another object of the same name differs
  there (its records' times and checksums), and is a changed file. Records are copied whole, their headers checked as
  they pass (events.whole_records): a record still incomplete waits for its rest, and a header
  that no record can follow (a length failing its checksum, or over `max_record_bytes`) ends
  that file's copy, said once: no file in the store can make the loader allocate what it
  claims. An event file changed other than by growing is copied anew under a new name
  (`<name>.~<n>`, which sorts after it: its steps replace the old ones as a restarted run's do)
  and the old one is removed, so no file the loader has open is ever rewritten.
- One failure is one file's: a local error (a full disk, a name the OS refuses) leaves the file
  as it was, is logged with the object's key, and that file is tried again later (backing off
  to RETRY_SECS); a read that failed is tried again at the next pass. Only a listing that fails
  is an outage: the mirror then keeps what it has, which the server goes on serving, and catches
  up at the first pass that succeeds (the outage and its end are logged).
- Disk: at most `max_bytes`; what would pass it is not fetched (said once, and the mirror goes
  on with what fits).
- CPU: a pass runs every `interval` seconds, or less often when listing the store is costly:
  watching an idle store costs at most MAX_CPU_SHARE of a core. A listing like the last one is
  not parsed again, and a pass over a listing that was all copied does nothing more.
- The directory holds MANIFEST (what was copied, and the bytes read from the store), which marks
  it as a mirror, and LOCK, an advisory lock held by the one server using it (a second one is
  refused). A directory named by the user is reused only when empty or a mirror already; then
  each file is checked against the manifest (bytes written after its last save are cut and
  fetched again, a file lost or shortened is fetched anew), and everything the store no longer
  holds is removed. Nothing is written, replaced or removed through a symlink (the manifest
  goes to a new file of its own, O_EXCL, then renamed; a link or a file planted at the staging
  directory's name is removed; files are opened O_NOFOLLOW, directories checked with lstat),
  nor below an `exclude`d path (where a --logdir_spec serves another logdir: logdirs.py). A
  directory of another user is refused.
- An object the store lists but will not return (403: archived, a key the server may not use;
  a timeout) is said once, naming it and why, and tried again backing off, as a local error on
  one file is; the rest of its run and the other runs are served.
"""
from .loop import MAX_RECORD_BYTES, Mirror
from .manifest import LOCK, MANIFEST

__all__ = ["Mirror", "MANIFEST", "LOCK", "MAX_RECORD_BYTES"]
