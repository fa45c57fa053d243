"""What the integrations share: the check of the keyword arguments a trainer's class passes on to
`mxboard.SummaryWriter`, made when the class is made, and the one-line ImportError of a trainer
package that is missing. Importing this module imports no trainer."""
from __future__ import annotations

import difflib
import importlib.metadata
import inspect
import re
from typing import Collection, FrozenSet, Optional

from .. import SummaryWriter

__all__ = ["check_writer_arguments", "missing_trainer"]

# The writer's arguments that every integration gives itself: the run's directory.
_SET_BY_THE_INTEGRATION = frozenset({"logdir", "log_dir"})

# Where docs/integrations.md says how to install torch, for CPU and for GPU.
_TORCH_HINT = ("Install the build you want: for CPU, pip install torch --index-url "
               "https://download.pytorch.org/whl/cpu; for a GPU, pip install torch (docs/integrations.md, "
               "\"Installing\")")


def writer_parameters() -> FrozenSet[str]:
    """The keyword arguments of `mxboard.SummaryWriter` that an integration passes on (all of its
    named ones, tensorboardX's aliases among them, less the logdir, which the integration gives)."""
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(name for name, parameter in inspect.signature(SummaryWriter).parameters.items()
                     if parameter.kind in named) - _SET_BY_THE_INTEGRATION


def check_writer_arguments(owner: str, given: Collection[str], own: Collection[str] = ()) -> None:
    """Refuse, when an integration's class is made, a keyword argument that neither the class
    (`own`, its parameters) nor `mxboard.SummaryWriter` takes. The writer is made later (at `fit`,
    at the first log), where the error would name `SummaryWriter.__init__` instead of the class.

    Args:
        owner: the class's public name, as the message shows it
            (`mxboard.integrations.keras.TensorBoard`).
        given: the names of the keyword arguments it was given.
        own: the names of the class's own parameters.

    Raises:
        TypeError: as Python's own for an unexpected keyword argument, naming `owner`, the
            argument and the closest name the class takes.
    """
    allowed = writer_parameters()
    for name in given:
        if name in own or name in allowed:
            continue
        close = difflib.get_close_matches(name, sorted(allowed | frozenset(own)), n=1)
        hint = " Did you mean %r?" % close[0] if close else ""
        raise TypeError("%s() got an unexpected keyword argument %r.%s It takes its own arguments and "
                        "mxboard.SummaryWriter's." % (owner, name, hint))


def missing_trainer(integration: str, package: str, error: ImportError) -> ImportError:
    """The one-line error of an integration whose trainer cannot be imported, to raise in place of
    `error`: it names the integration, the package that is missing and what to install.

    Args:
        integration: the module's name (`mxboard.integrations.lightning`).
        package: the trainer's package, as the `trainers` extra names it (`lightning`).
        error: the ImportError its import raised.
    """
    missing = (error.name or package).split(".")[0]
    detail = (str(error).splitlines() or [type(error).__name__])[0]
    if missing == "torch":
        message = "%s needs torch, which is not installed here (%s). %s" % (integration, detail, _TORCH_HINT)
    elif package == "keras" and missing in ("tensorflow", "jax", "jaxlib") and _version("keras"):
        backend = "jax" if missing == "jaxlib" else missing
        other = " or ".join("KERAS_BACKEND=%s" % b for b in ("torch", "jax") if b != backend)
        message = ("%s needs Keras's backend, %s (KERAS_BACKEND, else ~/.keras/keras.json; TensorFlow by "
                   "default), which is not installed here (%s). Set %s before keras is imported, or pip "
                   "install %s" % (integration, backend, detail, other, backend))
    else:
        installed = None if isinstance(error, ModuleNotFoundError) and missing == package else _version(package)
        state = ("%s %s is installed here, and importing it failed" % (package, installed) if installed
                 else "which is not installed here")
        message = ("%s needs %s, %s (%s). To install the release tested: pip install 'mxboard[trainers]' (the "
                   "four trainers), or pip install '%s' (this one)" % (integration, package, state, detail,
                                                                      _requirement(package)))
    # A ModuleNotFoundError where a module is missing, as Python's own error was, so that code
    # which catches that still does.
    cls = ModuleNotFoundError if isinstance(error, ModuleNotFoundError) else ImportError
    return cls(message, name=missing)


def _version(package: str) -> Optional[str]:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _requirement(package: str) -> str:
    """The package with the versions of mxboard's `trainers` extra (`lightning>=2.6,<2.7`), read
    from the installed mxboard's metadata; the bare name where mxboard is not installed."""
    try:
        requires = importlib.metadata.requires("mxboard") or []
    except importlib.metadata.PackageNotFoundError:
        return package
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        name = re.match(r"[A-Za-z0-9_.-]*", spec.strip())
        if name and name.group(0).lower() == package.lower() and "trainers" in marker:
            return spec.replace(" ", "")
    return package
