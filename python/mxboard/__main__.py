"""The `python -m mxboard` command, which reads a logdir back.

`python -m mxboard report LOGDIR` writes the logdir's dashboards as one self-contained HTML file
(mxboard.report), which needs no server and no network to open.

`python -m mxboard export LOGDIR --csv|--json` writes one table (scalars, histograms, text or
hparams) as CSV or JSON, for scripts. It holds what TensorBoard shows, or every record with
`--raw`, and needs no pandas. A corrupt record is skipped with a warning, or is an error with
`--strict`. A logdir that does not exist or holds nothing of that kind is an error (exit status
1), and then nothing is written. A pipe closed early (`| head`) ends the export quietly.

`python -m mxboard run SCRIPT|-m MODULE [ARGS...]` runs a program as Python would, with torch's and
tensorboardX's SummaryWriter mxboard's (mxboard._patch.program; docs/any-library.md)."""
import argparse
import csv
import json
import os
import sys
import time
import warnings
from typing import Any, Callable, Dict, Optional, Sequence, TextIO

from . import __version__, reader
from .errors import MXBoardWarning

# Each line as the user can run it from where they are: `python` and `tensorboard` where PATH finds
# this environment's (an activated venv), else their paths (`.venv/bin/python`).
EXAMPLES = """examples:
  {python} -m mxboard report runs/demo -o demo.html
      the dashboards as one HTML file (no server)
  {python} -m mxboard export runs/demo --csv
      every scalar TensorBoard shows, as CSV
  {python} -m mxboard export runs/demo --json -o scalars.json
  {python} -m mxboard export s3://bucket/exp --kind histograms --csv
  {python} -m mxboard run train.py --epochs 3
      train.py, its torch or tensorboardX writers mxboard's
  {serve}
      serve them (the bundled TensorBoard)
"""


def _examples() -> str:
    from ._format.commands import python_command, serve_command

    return EXAMPLES.format(python=python_command(), serve=serve_command("runs"))


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    examples = _examples()
    parser = argparse.ArgumentParser(prog="python -m mxboard", epilog=examples,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="MXBoard %s: TensorBoard event files from MXNet and numpy, without "
                                                 "TensorFlow. Log with `from mxboard import SummaryWriter`; this "
                                                 "command reads a logdir back, or runs a program with its torch "
                                                 "and tensorboardX writers mxboard's." % __version__)
    parser.add_argument("--version", action="version", version="mxboard %s" % __version__)
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="a logdir's scalars, histograms, text or hparams as CSV or JSON",
                                 epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("logdir", help="a logdir (a directory or an object store's URL), or one event file")
    export.add_argument("--kind", choices=sorted(reader.KINDS), default="scalars",
                        help="which table (one per call, as their columns differ): %(choices)s; default: %(default)s")
    formats = export.add_mutually_exclusive_group(required=True)
    formats.add_argument("--csv", action="store_const", const="csv", dest="format",
                         help="comma-separated rows, a header first (lists as JSON)")
    formats.add_argument("--json", action="store_const", const="json", dest="format",
                         help="a list of row objects")
    export.add_argument("--output", "-o", help="a file to write (default: standard output)")
    export.add_argument("--raw", action="store_true",
                        help="every record, also the points TensorBoard hides (a resumed run's older ones)")
    export.add_argument("--strict", action="store_true", help="a corrupt record is an error, not a warning")
    report = commands.add_parser("report", help="the dashboards as one self-contained HTML file: no server, no network",
                                 epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter)
    report.add_argument("logdir", help="a logdir (a directory or an object store's URL), or one event file")
    report.add_argument("--output", "-o", default="report.html", help="the file to write (default: %(default)s)")
    report.add_argument("--runs", help="only the runs this regular expression finds (re.search)")
    report.add_argument("--tags", help="only the tags this regular expression finds (re.search)")
    report.add_argument("--max-points", type=int, default=2000,
                        help="the most points drawn for one scalar series (each stretch keeps its lowest and "
                             "highest point; a report of many series draws fewer, to stay within 18 MB): "
                             "%(default)s")
    # Listed for --help only: main() hands `run` its arguments before anything is parsed.
    commands.add_parser("run", help="run SCRIPT|-m MODULE [ARGS...] as python would, its torch and tensorboardX "
                                    "writers mxboard's (docs/any-library.md)")
    return parser.parse_args(argv)


def _report(args: argparse.Namespace) -> None:
    from . import report

    began = time.perf_counter()
    try:
        notes = report.write(args.logdir, args.output, args.runs, args.tags, args.max_points)
    except (FileNotFoundError, ValueError, ImportError, report.ReportError) as exc:
        sys.exit("mxboard report: %s" % exc)
    for line in notes:
        print("mxboard report: %s" % line, file=sys.stderr)
    print("mxboard report: wrote %s (%.1f MB) in %.1f s: open it in a browser, no server needed"
          % (args.output, os.path.getsize(args.output) / 1e6, time.perf_counter() - began))


def _cell(value: Any) -> Any:
    """Arrays (histogram limits and counts) as lists."""
    return value.tolist() if hasattr(value, "tolist") else value


def _table(logdir: str, kind: str, raw: bool, strict: bool) -> Dict[str, Any]:
    """The logdir's table of `kind`; SystemExit (status 1) if it has none."""
    from .storage import checked_logdir

    try:
        logdir = checked_logdir(logdir, must_exist=True)
    except (ValueError, ImportError) as exc:
        sys.exit("mxboard export: %s" % exc)
    columns = reader.table(logdir, kind, raw=raw, strict=strict)
    if not len(next(iter(columns.values()), ())):
        sys.exit("mxboard export: no %s in %s (nothing written; --kind says which: %s)"
                 % (kind, logdir, ", ".join(sorted(reader.KINDS))))
    return columns


def _write(columns: Dict[str, Any], fmt: str, out: TextIO) -> None:
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


def _one_line(command: str, formatted: Callable[..., str]) -> Callable[..., str]:
    """Python's `formatwarning`, but an MXBoardWarning (a corrupt record, a link loop) is one
    line, `mxboard <command>: <what>`, as the commands say everything else. Only how a warning
    is printed changes: filters and `catch_warnings(record=True)` see it as before."""

    def one_line(message: Any, category: Any, filename: str, lineno: int, line: Optional[str] = None) -> str:
        if issubclass(category, MXBoardWarning):
            return "mxboard %s: %s\n" % (command, message)
        return formatted(message, category, filename, lineno, line)

    return one_line


def main(argv: Optional[Sequence[str]] = None) -> None:
    given = sys.argv[1:] if argv is None else list(argv)
    # `run` hands the program its arguments: none of them is parsed here.
    if given[:1] == ["run"]:
        from ._patch.program import run

        run(given[1:])
        return
    args = _parse(argv)
    formatted = warnings.formatwarning
    warnings.formatwarning = _one_line(args.command, formatted)
    try:
        _run(args)
    finally:
        warnings.formatwarning = formatted


def _run(args: argparse.Namespace) -> None:
    if args.command == "report":
        _report(args)
        return
    options = {"raw": args.raw, "strict": args.strict}
    try:
        columns = _table(args.logdir, args.kind, **options)
    except reader.DataLossError as exc:
        sys.exit("mxboard export: %s" % exc)
    if not args.output:
        try:
            _write(columns, args.format, sys.stdout)
            sys.stdout.flush()
        # `| head` stopped reading: end quietly, as shell tools do.
        except BrokenPipeError:
            # Python flushes stdout again at exit: point it at /dev/null so that flush cannot fail
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        return
    try:
        # a run named with bytes that are not UTF-8 is written as those bytes, as on standard output
        with open(args.output, "w", newline="", errors="surrogateescape") as out:
            _write(columns, args.format, out)
    except OSError as exc:
        sys.exit("mxboard export: cannot write %s: %s" % (args.output, exc.strerror or exc))


if __name__ == "__main__":
    main()
