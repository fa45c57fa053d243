"""Upstream TensorBoard files changed by the diffs in patches/, generated at build time by
tools/pip_package/vendor.py (the .py files beside this one are not in git)."""
