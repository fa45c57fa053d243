"""Everything is in pyproject.toml but two steps: the build vendors patched TensorBoard files
(tools/pip_package/vendor.py) into the build directory, never into the source tree, and writes
mxboard-tensorboard.pth beside the packages (see PTH)."""
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))

# Run by `site` at every start of the interpreter mxboard is installed in: where the environment's
# scripts directory is not on PATH (a Jupyter kernel started by the venv's python, unactivated:
# VS Code, `python -m ipykernel install`, nbclient), TENSORBOARD_BINARY names its `tensorboard`
# (unless set), which `%tensorboard` and `tensorboard.notebook.start` run (else they say "Could
# not find `tensorboard`"). Nothing is imported but os and sys, which `site` has already.
# Its second line runs only in the `tensorboard` command itself: upstream_line.hide keeps upstream's
# "TensorFlow installation not found" line out of its output (tensorboard_bundle/upstream_line.py).
# Its third acts only where MXBOARD_PATCH is on (1, true, yes or on, any case, as every switch of
# mxboard's: `python -m mxboard run` sets it for the program's child Pythons): it puts a finder
# first on sys.meta_path that does nothing until the program imports torch.utils.tensorboard or
# tensorboardX, and then imports mxboard and patches (mxboard._patch):
# a child that never imports either never imports mxboard.
# Its fourth puts a finder on sys.meta_path (once: a venv's lib64 link may have `site` read this
# file twice) that does nothing until tensorboard.manager or
# tensorboard.notebook is imported (a Jupyter kernel's %tensorboard, TensorBoard itself), and then,
# once the real module has run, imports tensorboard_bundle.notebook: TensorBoard's info files go to
# a directory only the user can write, and the notebook's frame carries the server's token.
PTH_NAME = "mxboard-tensorboard.pth"
PTH = ("import os, sys; _d = os.path.join(sys.prefix, 'Scripts' if os.name == 'nt' else 'bin'); "
       "_t = os.path.join(_d, 'tensorboard.exe' if os.name == 'nt' else 'tensorboard'); "
       "_d in os.environ.get('PATH', '').split(os.pathsep) or not os.path.isfile(_t) or "
       "os.environ.setdefault('TENSORBOARD_BINARY', _t); del _d, _t\n"
       "import os, sys; os.path.basename((getattr(sys, 'argv', None) or [''])[0]) in "
       "('tensorboard', 'tensorboard.exe') and __import__('tensorboard_bundle.upstream_line').upstream_line.hide()\n"
       "import os, sys; os.environ.get('MXBOARD_PATCH', '').strip().lower() in ('1', 'true', 'yes', 'on') and "
       "sys.meta_path.insert(0, type('MXBoardPatchTrigger', "
       "(), {'find_spec': staticmethod(lambda name, path=None, target=None: __import__('mxboard._patch', "
       "fromlist=['triggered']).triggered(name, path, target) if name in ('torch.utils.tensorboard', 'tensorboardX') "
       "else None)})())\n"
       "import sys; any(type(f).__name__ == 'MXBoardNotebookTrigger' for f in sys.meta_path) or "
       "sys.meta_path.insert(0, type('MXBoardNotebookTrigger', (), {'find_spec': staticmethod(lambda name, "
       "path=None, target=None: __import__('tensorboard_bundle.notebook', fromlist=['triggered']).triggered(name, "
       "path, target) if name in ('tensorboard.manager', 'tensorboard.notebook') else None)})())\n")


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
