"""Vendor the upstream TensorBoard files that patches/ changes, patched, into
tensorboard_bundle/_patched/. Run at every build (setup.py's build_py), against the pinned
TensorBoard installed in the build environment; fails loudly if that is another version or if a
patch no longer applies exactly (no fuzz).

    python tools/pip_package/vendor.py                 vendor into the source tree
    python tools/pip_package/vendor.py --check [WHEEL] exit 1 unless the tree (and WHEEL) hold
                                                       exactly what the patches make
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCHES = os.path.join(ROOT, "patches")
OUTPUT = os.path.join(ROOT, "tensorboard_bundle", "_patched")
PINNED = "2.21.0"  # the TensorBoard the patches are made against; pyproject.toml pins it too


class VendorError(SystemExit):
    pass


def patches():
    """(patch file, the upstream path it changes), in order."""
    found = []
    for path in sorted(glob.glob(os.path.join(PATCHES, "*.diff"))):
        with open(path) as f:
            targets = re.findall(r"^\+\+\+ b/(\S+)", f.read(), flags=re.M)
        if len(targets) != 1:
            raise VendorError("%s must change exactly one upstream file; it names %s" % (path, targets))
        found.append((path, targets[0]))
    return found


def targets():
    """The upstream files the patches change, each once."""
    return list(dict.fromkeys(target for _, target in patches()))


def vendored_name(target):
    """Where the patched copy of upstream's `target` lives in the package."""
    return "tensorboard_bundle/_patched/" + os.path.basename(target)


def check(wheel=None):
    """The names of vendored files (in the tree, or in `wheel`) that differ from what the
    patches make now, or are missing."""
    import zipfile

    with tempfile.TemporaryDirectory() as fresh:
        vendor(fresh)
        stale = []
        members = zipfile.ZipFile(wheel) if wheel else None
        for target in targets():
            name = vendored_name(target)
            with open(os.path.join(fresh, os.path.basename(target)), "rb") as f:
                expected = f.read()
            try:
                if members is not None:
                    actual = members.read(name)
                else:
                    with open(os.path.join(ROOT, name), "rb") as f:
                        actual = f.read()
            except (KeyError, FileNotFoundError):
                actual = None
            if actual != expected:
                stale.append(name + (" (missing)" if actual is None else " (differs)"))
        return stale


def vendor(output=OUTPUT):
    import tensorboard
    from tensorboard import version

    if version.VERSION != PINNED:
        raise VendorError("patches/ are made against tensorboard %s, but the build has %s (%s)"
                          % (PINNED, version.VERSION, tensorboard.__file__))
    site = os.path.dirname(os.path.dirname(os.path.abspath(tensorboard.__file__)))
    with tempfile.TemporaryDirectory() as work:
        for patch, target in patches():  # in order: a later patch may change a patched file
            if not os.path.exists(os.path.join(work, target)):
                os.makedirs(os.path.dirname(os.path.join(work, target)), exist_ok=True)
                shutil.copyfile(os.path.join(site, target), os.path.join(work, target))
            with open(patch, "rb") as f:
                result = subprocess.run(["patch", "-p1", "--forward", "--batch", "--fuzz=0",
                                         "--no-backup-if-mismatch", "-d", work],
                                        stdin=f, capture_output=True, text=True)
            if result.returncode != 0:
                raise VendorError("%s no longer applies to tensorboard %s:\n%s%s"
                                  % (os.path.relpath(patch, ROOT), PINNED, result.stdout, result.stderr))
        os.makedirs(output, exist_ok=True)
        for target in targets():
            shutil.copyfile(os.path.join(work, target), os.path.join(output, os.path.basename(target)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        where = sys.argv[2] if len(sys.argv) > 2 else None
        stale = check(where)
        if stale:
            sys.exit("%s does not hold what patches/ make: %s" % (where or "the source tree", ", ".join(stale)))
        print("%s holds all %d patched files" % (where or "the source tree", len(targets())))
    elif sys.argv[1:]:
        sys.exit(__doc__)
    else:
        vendor()
        print("vendored %d patched files into %s" % (len(targets()), os.path.relpath(OUTPUT, ROOT)))
