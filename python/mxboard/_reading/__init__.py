"""Reading event files back, for mxboard.reader and the report: records.py reads one file's
records, each checked against its CRCs, scan.py reads many records at once with numpy,
small_files.py many small files in one scan, and listing.py finds the event files below a logdir."""
