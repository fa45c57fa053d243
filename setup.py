"""Everything is in pyproject.toml but two steps: the build vendors patched TensorBoard files
(tools/pip_package/vendor.py) into the build directory, never into the source tree, and writes
mxboard-tensorboard.pth beside the packages (see PTH)."""
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))

# Run by `site` at every start of the interpreter mxboard is installed in: one import and one call,
# as coverage and setuptools write theirs. What it does is python/_mxboard_startup.py, a module of
# the standard library only, linted, typed and tested like the rest.
PTH_NAME = "mxboard-tensorboard.pth"
PTH = "import _mxboard_startup; _mxboard_startup.start()\n"


class build_py_with_patched_tensorboard(build_py):  # noqa: N801 - setuptools' naming
    """build_py, then the patched TensorBoard files written beside the built package. An editable
    install has no build directory: its bundle cannot run (the launcher says so), its logger can."""

    def run(self):
        if not self.editable_mode:
            for package in ("mxboard", "tensorboard_bundle"):  # no file left from an earlier build
                shutil.rmtree(os.path.join(self.build_lib, package), ignore_errors=True)
        super().run()
        if not self.editable_mode:
            pth = os.path.join(self.build_lib, PTH_NAME)
            with open(pth, "w") as f:
                f.write(PTH)
            self._vendored = self._vendor() + [pth]

    def _vendor(self):
        sys.path.insert(0, os.path.join(HERE, "tools", "pip_package"))
        try:
            import vendor
        finally:
            sys.path.pop(0)
        return vendor.vendor(os.path.join(self.build_lib, *vendor.PACKAGE.split("/")))

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + list(getattr(self, "_vendored", []))


setup(cmdclass={"build_py": build_py_with_patched_tensorboard})
