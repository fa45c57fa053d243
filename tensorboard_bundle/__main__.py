"""`python -m tensorboard_bundle`. Run from a source checkout's root, `-m` finds the checkout's
package first (the working directory leads sys.path), which has no patched TensorBoard files
(the build makes them): where an installed package is found without the working directory, the
command runs again with that one."""
import importlib.machinery
import os
import sys
from typing import List, Optional

# as handover.py's: the working directory taken off sys.path, then the launcher
_LAUNCH = ("import sys; sys.path[:] = [p for p in sys.path if p]; sys.argv[0] = 'tensorboard'; "
           "from tensorboard_bundle.launcher import main; main()")


def _built(package: str) -> bool:
    return os.path.isfile(os.path.join(package, "_patched", "program.py"))


def _installed_elsewhere() -> Optional[str]:
    """The installed package's directory, where this one is an unbuilt checkout's found through
    the working directory; else None."""
    here = os.path.dirname(os.path.abspath(__file__))
    cwd = os.getcwd()
    if _built(here) or os.path.dirname(here) != cwd:
        return None
    path: List[str] = [p for p in sys.path if p and os.path.abspath(p) != cwd]
    spec = importlib.machinery.PathFinder.find_spec("tensorboard_bundle", path)
    locations = list(spec.submodule_search_locations or ()) if spec else []
    return next((where for where in locations if _built(where)), None)


if _installed_elsewhere():
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-c", _LAUNCH] + sys.argv[1:])

# The import comes after the check above.
from tensorboard_bundle.launcher import main  # noqa: E402

main()
