"""Everything is in pyproject.toml but one step: the build vendors patched TensorBoard files."""
import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_with_patched_tensorboard(build_py):  # noqa: N801 - setuptools' naming
    def run(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools", "pip_package"))
        import vendor

        vendor.vendor()  # into the source tree, so that editable installs have it too
        super().run()


setup(cmdclass={"build_py": build_py_with_patched_tensorboard})
