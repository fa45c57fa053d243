"""Reading event files back, for mxboard.reader and the report: records.py reads one file's
records, each checked against its CRCs, and scan.py reads many records at once with numpy."""
