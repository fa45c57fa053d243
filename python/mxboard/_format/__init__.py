"""What the writer, the reader and the bundled server share, and nothing else: TFRecord framing
and event file names (events.py, with CRC32C: _crc32c.py), what a name below a logdir may be and
where a store's objects go on a local disk (names.py), sizes in bytes, read and written
(sizes.py), and the command that serves a logdir from where the user is, for hints
(commands.py). It imports nothing of mxboard's above it."""
