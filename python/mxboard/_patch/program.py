"""`python -m mxboard run SCRIPT [ARGS...]` and `run -m MODULE [ARGS...]`: the program, patched.

It runs as `python SCRIPT` and `python -m MODULE` run it, in this process: a new `__main__`
module (left in place when the program ends, as Python leaves its own), `sys.argv`, `sys.path[0]`,
the file names in tracebacks and warnings, and the exit status are Python's, and bad input gets
Python's message and status. Its traceback shows the program's frames only. Before the program,
patch() and MXBOARD_PATCH=1 (for its child Pythons): nothing else of the process changes.
"""
from __future__ import annotations

import builtins
import io
import os
import pkgutil
import runpy
import sys
from importlib.machinery import SourceFileLoader
from types import CodeType, ModuleType, TracebackType
from typing import Any, List, NoReturn, Optional, Sequence, Type

from . import VARIABLE, patch

__all__ = ["run"]

USAGE = "usage: python -m mxboard run [-h] (SCRIPT | -m MODULE) [ARGS ...]"
HELP = USAGE + """

Run a Python program as `python SCRIPT ARGS` (or `python -m MODULE ARGS`) would, with every
SummaryWriter of torch.utils.tensorboard and tensorboardX mxboard's (and tensorboardX's FileWriter),
in its child Pythons too (multiprocessing, DataLoader workers, subprocesses of sys.executable):
mxboard.patch(), and MXBOARD_PATCH=1 in the environment. docs/any-library.md says more.

examples:
  {python} -m mxboard run train.py --epochs 3
  {python} -m mxboard run -m my_package.train --epochs 3
"""


def _usage_error(message: str) -> NoReturn:
    """argparse's way: the usage and the error on stderr, status 2."""
    sys.stderr.write("%s\npython -m mxboard run: error: %s\n" % (USAGE, message))
    raise SystemExit(2)


def run(argv: Sequence[str]) -> None:
    """Run the program that `argv` (what follows `run`) names, patched."""
    args = list(argv)
    if args and args[0] in ("-h", "--help"):
        from .._format.commands import python_command

        # The examples as the user can run them from here (`.venv/bin/python` where the venv is
        # not activated).
        sys.stdout.write(HELP.format(python=python_command()))
        return
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        _usage_error("a SCRIPT or -m MODULE is needed")
    first = args[0]
    if first.startswith("-m"):
        if first == "-m" and len(args) < 2:
            # Python's own words for `python -m`, and its status.
            sys.stderr.write("Argument expected for the -m option\n%s\n" % USAGE)
            raise SystemExit(2)
        module, rest = (args[1], args[2:]) if first == "-m" else (first[2:], args[1:])
        _start()
        _run_module(module, rest)
    elif first.startswith("-"):
        _usage_error("unknown option %s (Python's own options go before -m mxboard: python -X dev -m mxboard "
                     "run ...)" % first)
    else:
        _start()
        _run_script(first, args[1:])


def _start() -> None:
    os.environ[VARIABLE] = "1"
    patch()


def _main_module(file: Optional[str], loader: Any, spec: Any = None, cached: Optional[str] = None,
                 package: Optional[str] = None) -> ModuleType:
    """A new `__main__` in sys.modules, with the attributes Python gives its own."""
    main = ModuleType("__main__")
    vars(main).update(__file__=file, __cached__=cached, __loader__=loader, __spec__=spec, __package__=package,
                      __builtins__=builtins, __annotations__={})
    sys.modules["__main__"] = main
    return main


def _program_name() -> str:
    """How the Python was called (its argv[0]), as Python names itself in its own errors."""
    original: List[str] = getattr(sys, "orig_argv", None) or [sys.executable]
    return original[0]


def _run_script(path: str, rest: List[str]) -> None:
    program = os.path.abspath(path)
    # A directory or a zip file has an importer, and Python runs its __main__ module.
    if pkgutil.get_importer(program) is not None:
        _run_main_of(path, program, rest)
        return
    try:
        with io.open_code(program) as f:
            source = f.read()
    except OSError as exc:
        sys.stderr.write("%s: can't open file %r: [Errno %s] %s\n" % (_program_name(), program, exc.errno,
                                                                       exc.strerror))
        raise SystemExit(2) from None
    try:
        code = compile(source, program, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        # Python shows a program that does not compile without a traceback, and exits with 1.
        sys.excepthook(type(exc), exc.with_traceback(None), None)
        raise SystemExit(1) from None
    main = _main_module(program, SourceFileLoader("__main__", program))
    sys.argv[:] = [path] + rest
    # Python's sys.path[0] is the script's real folder, unless -P or PYTHONSAFEPATH leaves it out.
    if not getattr(sys.flags, "safe_path", False):
        sys.path[0:1] = [os.path.dirname(os.path.realpath(program))]
    _execute(code, main)


def _run_main_of(path: str, program: str, rest: List[str]) -> None:
    """A directory or a zip file: its `__main__` module, found first on sys.path, as Python runs it."""
    if not getattr(sys.flags, "safe_path", False):
        sys.path[0:1] = [program]
    else:
        sys.path.insert(0, program)
    sys.argv[:] = [path] + rest
    details = getattr(runpy, "_get_main_module_details", None)
    # A Python without runpy's helper gets its public function, which is near enough.
    if details is None:
        runpy.run_path(path, run_name="__main__")
        return
    error: Type[Exception] = getattr(runpy, "_Error", ImportError)
    try:
        _, spec, code = details(error)
    except error as exc:
        raise SystemExit("%s: %s" % (sys.executable, exc)) from None
    _execute(code, _main_module(spec.origin, spec.loader, spec, spec.cached, spec.parent))


def _run_module(name: str, rest: List[str]) -> None:
    # Python's sys.argv while it looks the module up.
    sys.argv[:] = ["-m"] + rest
    details = getattr(runpy, "_get_module_details", None)
    # A Python without runpy's helper gets its public function, which is near enough.
    if details is None:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
        return
    error: Type[Exception] = getattr(runpy, "_Error", ImportError)
    # A module that cannot be run gets Python's message for `python -m` (runpy's), and its status, 1.
    try:
        _, spec, code = details(name, error)
    except error as exc:
        raise SystemExit("%s: %s" % (sys.executable, exc)) from None
    main = _main_module(spec.origin, spec.loader, spec, spec.cached, spec.parent)
    sys.argv[0] = spec.origin
    _execute(code, main)


def _execute(code: CodeType, main: ModuleType) -> None:
    """Run the program's code in `main`. What it raises goes on up unchanged, to end the process
    as it would have ended it; its traceback is shown from the program's first frame on."""
    try:
        exec(code, vars(main))
    except SystemExit:
        raise
    except BaseException as exc:
        _show_from_the_program(exc)
        raise


# The files of the frames between Python and the program: this module's and runpy's.
OURS = frozenset({_execute.__code__.co_filename, runpy.run_path.__code__.co_filename})


def _show_from_the_program(exc: BaseException) -> None:
    """Have the exception hook (the program's, if it set one) show `exc` without this module's
    frames, once: Python calls the hook with the traceback it has, which starts at its own
    entry point, after mxboard's frames have been added."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in OURS:
        tb = tb.tb_next
    shown = tb
    previous = sys.excepthook

    def show(kind: Type[BaseException], value: BaseException, traceback: Optional[TracebackType]) -> None:
        if sys.excepthook is show:
            sys.excepthook = previous
        if value is exc:
            value.__traceback__ = traceback = shown
            sys.last_traceback = shown
        previous(kind, value, traceback)

    sys.excepthook = show
