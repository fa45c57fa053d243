"""`python -m mxboard export LOGDIR --csv|--json [--kind scalars|histograms|text|hparams] [--raw]
[--strict]`: what a logdir holds (what TensorBoard shows, or `--raw` every record), as a table for
scripts (to stdout, or to --output). A corrupt record is skipped with a warning on stderr
(`--strict`: an error, exit status 1). Needs no pandas."""
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
    export.add_argument("--raw", action="store_true",
                        help="every record, also the points TensorBoard hides (a resumed run's older ones)")
    export.add_argument("--strict", action="store_true", help="a corrupt record is an error, not a warning")
    return parser.parse_args(argv)


def _cell(value):
    """Arrays (histogram limits and counts) as lists."""
    return value.tolist() if hasattr(value, "tolist") else value


def export(logdir, kind, fmt, out, raw=False, strict=False):
    columns = reader.table(logdir, kind, raw=raw, strict=strict)
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
    options = {"raw": args.raw, "strict": args.strict}
    try:
        if args.output:
            with open(args.output, "w", newline="") as out:
                export(args.logdir, args.kind, args.format, out, **options)
        else:
            export(args.logdir, args.kind, args.format, sys.stdout, **options)
    except reader.DataLossError as exc:
        sys.exit("mxboard export: %s" % exc)


if __name__ == "__main__":
    main()
