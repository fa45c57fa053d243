"""Logdirs in object stores: `s3://bucket/prefix/run`, and any fsspec URL whose filesystem is
installed (`gs://`, `az://`, `hdfs://`, `memory://`...).

This package exports what the rest of mxboard uses: `RemoteStorage` (store.py), the writer's
settings `UploadPolicy` (policy.py) and `SpoolSettings` (spool_settings.py), and from profiles.py
the check of a logdir and the way to a store's filesystem. Its other modules are its own:
event_file.py, unsent.py, keep.py, uploader.py, parts.py, and the spool's modules. The
"A logdir in an object store" section of docs/architecture.md shows how they fit together.
"""
from .policy import UploadPolicy
from .profiles import S3_REQUESTS, checked_logdir, open_filesystem, profile_of
from .spool_settings import SpoolSettings
from .store import RemoteStorage

__all__ = ["RemoteStorage", "S3_REQUESTS", "SpoolSettings", "UploadPolicy", "checked_logdir", "open_filesystem",
           "profile_of"]
