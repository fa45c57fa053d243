"""`python -m mxboard export LOGDIR --csv|--json [--kind scalars|histograms|text|hparams]`: what a
logdir holds, as a table for scripts (to stdout, or to --output). Needs no pandas."""
import argparse
import csv
import json
import sys

from . import reader


def _parse(argv):
    parser = argparse.ArgumentParser(prog="python -m mxboard")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="a logdir's scalars, histograms, text or hparams as CSV or JSON")
    export.add_argument("logdir")
    export.add_argument("--kind", choices=sorted(reader.KINDS), default="scalars")
    formats = export.add_mutually_exclusive_group(required=True)
    formats.add_argument("--csv", action="store_const", const="csv", dest="format")
    formats.add_argument("--json", action="store_const", const="json", dest="format",
                         help="a list of row objects")
    export.add_argument("--output", "-o", help="a file to write (default: standard output)")
    return parser.parse_args(argv)


def _cell(value):
    """Arrays (histogram limits and counts) as lists."""
    return value.tolist() if hasattr(value, "tolist") else value


def export(logdir, kind, fmt, out):
    columns = reader.table(logdir, kind)
    names = list(columns)
    rows = [dict(zip(names, (_cell(v) for v in row))) for row in zip(*columns.values())]
    if fmt == "json":
        json.dump(rows, out)
        out.write("\n")
        return
    writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()})


def main(argv=None):
    args = _parse(argv)
    if args.output:
        with open(args.output, "w", newline="") as out:
            export(args.logdir, args.kind, args.format, out)
    else:
        export(args.logdir, args.kind, args.format, sys.stdout)


if __name__ == "__main__":
    main()
