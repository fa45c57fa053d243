"""Logdirs in object stores (`s3://bucket/prefix/run`, and any fsspec URL whose filesystem is
installed: `gs://`, `az://`, `hdfs://`, `memory://`...), in parts that each do one thing:

- profiles.py: what mxboard knows of each kind of store (its schemes, package, client settings,
  version field, emulator), and `open_filesystem`, the one way to a store's filesystem;
- policy.py: `UploadPolicy`, how a writer uploads (the numbers, as one value);
- store.py: `RemoteStorage`, a logdir in a store, checked when a writer is made;
- event_file.py: `RemoteEventFile`, an event file as a series of objects, and what waits for them
  (in memory, in the spool: ../spool.py), kept on disk when the store does not take it;
- uploader.py: the file's uploader thread, a small state machine, and what it measures of the link;
- parts.py: the objects of one file, and how whole records are taken into them.
"""
from .event_file import RemoteEventFile
from .parts import Parts, take_records
from .policy import UploadPolicy
from .profiles import OTHER, PROFILES, S3_REQUESTS, Profile, checked_logdir, open_filesystem, profile_of, scheme_of
from .store import RemoteStorage, check, refused
from .uploader import Link, Uploader, put_within

__all__ = ["Link", "OTHER", "PROFILES", "Parts", "Profile", "RemoteEventFile", "RemoteStorage", "S3_REQUESTS",
           "UploadPolicy", "Uploader", "check", "checked_logdir", "open_filesystem", "profile_of", "put_within",
           "refused", "scheme_of", "take_records"]
