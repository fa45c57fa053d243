"""What the writer, the reader and the bundled server share.

events.py frames TFRecords and names event files, with the CRC32C of _crc32c.py. names.py says
what a name below a logdir may be, and where a store's objects go on a local disk. files.py
replaces a file whole and locks files between processes, sizes.py reads and writes sizes in bytes,
and commands.py gives the command that serves a logdir, for hints."""
