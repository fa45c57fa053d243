"""Where the user called mxboard: the first frame outside the package. A warning about a call is
shown there, as Python shows warnings (once a line and message), even when the writer thread
finds the reason later (writer_thread.py hands such notes to the caller's next call)."""
import os
import sys
import warnings
from typing import Any, Dict, NamedTuple, Optional, Type

__all__ = ["CallSite", "call_site", "warn_at", "warn_at_call"]

# This is the folder of all of mxboard.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class CallSite(NamedTuple):
    filename: str
    lineno: int
    module: Optional[str]
    # The module's __warningregistry__: "once a line" as Python keeps it.
    registry: Dict[Any, Any]


def call_site() -> Optional[CallSite]:
    """The user's frame that called into mxboard (None: no caller outside it, as on its own thread)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None
    return CallSite(frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__"),
                    frame.f_globals.setdefault("__warningregistry__", {}))


def warn_at(site: Optional[CallSite], message: str, category: Type[Warning] = UserWarning) -> None:
    """`message` as a warning at `site` (None: at mxboard's own line)."""
    if site is None:
        warnings.warn(message, category, stacklevel=2)
    else:
        warnings.warn_explicit(message, category, site.filename, site.lineno, module=site.module,
                               registry=site.registry)


def warn_at_call(message: str, category: Type[Warning] = UserWarning) -> None:
    """A warning pointing at the user's line that called mxboard, shown once there."""
    warn_at(call_site(), message, category)
