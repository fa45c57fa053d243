"""Vendor the upstream TensorBoard files that patches/ changes, patched, into a build directory.

setup.py's build_py runs `vendor(BUILD_LIB/tensorboard_bundle/_patched)` at every build, against
the pinned TensorBoard that `[build-system]` installs. The diffs are applied here, in Python (no
`patch` binary), exactly: every hunk's context must match upstream's lines (an offset is allowed,
fuzz is not). A patch that no longer applies fails the build, naming the patch and the hunk.

    python tools/pip_package/vendor.py --check WHEEL   exit 1 unless WHEEL holds exactly what
                                                       the patches make (needs TensorBoard)
"""
import glob
import os
import re
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCHES = os.path.join(ROOT, "patches")
PACKAGE = "tensorboard_bundle/_patched"  # where the patched copies live in the wheel
PINNED = "2.21.0"  # the TensorBoard the patches are made against; pyproject.toml pins it too

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class VendorError(SystemExit):
    pass


class Hunk:
    """One `@@` block of a unified diff: the lines it expects (`old`) and what replaces them."""

    def __init__(self, number, header, start):
        self.number, self.header, self.start = number, header, start
        self.old, self.new = [], []


def parse(patch_text):
    """(the upstream path the patch changes, its hunks). A patch changes exactly one file."""
    targets = re.findall(r"^\+\+\+ b/(\S+)", patch_text, flags=re.M)
    if len(targets) != 1:
        raise ValueError("must change exactly one upstream file; it names %s" % (targets,))
    lines = patch_text.splitlines(keepends=True)
    hunks, i = [], 0
    while i < len(lines):
        match = _HUNK.match(lines[i])
        i += 1
        if not match:
            continue
        hunk = Hunk(len(hunks) + 1, lines[i - 1].strip(), int(match.group(1)))
        old_left = int(match.group(2) or 1)
        new_left = int(match.group(4) or 1)
        while old_left or new_left:
            if i >= len(lines):
                raise ValueError("hunk #%d (%s) ends early" % (hunk.number, hunk.header))
            line = lines[i]
            i += 1
            kind, text = (line[0], line[1:]) if line not in ("\n", "\r\n") else (" ", line)  # a blank context line
            if kind in " -":
                hunk.old.append(text)
                old_left -= 1
            if kind in " +":
                hunk.new.append(text)
                new_left -= 1
            if kind not in " -+":
                raise ValueError("hunk #%d (%s): a line that is neither context, removal nor addition: %r"
                                 % (hunk.number, hunk.header, line))
            if i < len(lines) and lines[i].startswith("\\"):  # "\ No newline at end of file"
                for side in ([hunk.old] if kind == "-" else [hunk.new] if kind == "+" else [hunk.old, hunk.new]):
                    side[-1] = side[-1].rstrip("\r\n")
                i += 1
        hunks.append(hunk)
    if not hunks:
        raise ValueError("has no hunk")
    return targets[0], hunks


def apply(lines, hunks):
    """`lines` (a file's lines, ends kept) with every hunk applied, in order. Each hunk's old lines
    must match exactly; they are looked for at the line the header names (shifted as earlier hunks
    shifted the file), then ever further from it, as `patch --fuzz=0` does. Raises ValueError
    naming the first hunk that matches nowhere."""
    result, shift, floor = list(lines), 0, 0
    for hunk in hunks:
        expected = max(hunk.start - 1 + shift, 0) if hunk.old else hunk.start + shift
        at = _find(result, hunk.old, expected, floor)
        if at is None:
            raise ValueError("hunk #%d (%s) does not apply: its lines are not in the file" % (hunk.number, hunk.header))
        result[at:at + len(hunk.old)] = hunk.new
        shift += len(hunk.new) - len(hunk.old)
        floor = at + len(hunk.new)
    return result


def _find(lines, wanted, expected, floor):
    n = len(wanted)
    for distance in range(len(lines) + 1):
        for at in ((expected - distance, expected + distance) if distance else (expected,)):
            if floor <= at <= len(lines) - n and lines[at:at + n] == wanted:
                return at
    return None


def patches():
    """(patch file, the upstream path it changes, its hunks), in order."""
    found = []
    for path in sorted(glob.glob(os.path.join(PATCHES, "*.diff"))):
        with open(path, encoding="utf-8", newline="") as f:
            try:
                target, hunks = parse(f.read())
            except ValueError as e:
                raise VendorError("%s %s" % (os.path.relpath(path, ROOT), e)) from None
        found.append((path, target, hunks))
    return found


def targets():
    """The upstream files the patches change, each once."""
    return list(dict.fromkeys(target for _, target, _ in patches()))


def patched():
    """{upstream path: its patched text}, from the installed (pinned) TensorBoard."""
    import tensorboard
    from tensorboard import version

    if version.VERSION != PINNED:
        raise VendorError("patches/ are made against tensorboard %s, but the build has %s (%s)"
                          % (PINNED, version.VERSION, tensorboard.__file__))
    site = os.path.dirname(os.path.dirname(os.path.abspath(tensorboard.__file__)))
    files, applied = {}, {}
    for patch, target, hunks in patches():  # in order: a later patch may change a patched file
        if target not in files:
            with open(os.path.join(site, target), encoding="utf-8", newline="") as f:
                files[target] = f.read().splitlines(keepends=True)
        try:
            files[target] = apply(files[target], hunks)
        except ValueError as e:
            raise VendorError("%s no longer applies to tensorboard %s (%s): %s"
                              % (os.path.relpath(patch, ROOT), PINNED, target, e)) from None
        applied.setdefault(target, []).append(os.path.basename(patch))
    # Apache-2.0 4(b): a changed file says so
    return {target: "# TensorBoard %s's %s, changed by mxboard's patches/%s (see NOTICE).\n%s"
            % (PINNED, target, ", patches/".join(applied[target]), "".join(lines))
            for target, lines in files.items()}


def vendored_name(target):
    """Where the patched copy of upstream's `target` lives in the wheel."""
    return PACKAGE + "/" + os.path.basename(target)


def vendor(output):
    """Write the patched files into the directory `output`; returns their paths."""
    files = patched()
    os.makedirs(output, exist_ok=True)
    written = []
    for target, text in files.items():
        path = os.path.join(output, os.path.basename(target))
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        written.append(path)
    return written


def check(wheel):
    """The names of vendored files in `wheel` that differ from what the patches make now, or are
    missing."""
    stale = []
    with tempfile.TemporaryDirectory() as fresh, zipfile.ZipFile(wheel) as members:
        for path in vendor(fresh):
            name = PACKAGE + "/" + os.path.basename(path)
            with open(path, "rb") as f:
                expected = f.read()
            try:
                actual = members.read(name)
            except KeyError:
                stale.append(name + " (missing)")
                continue
            if actual != expected:
                stale.append(name + " (differs)")
    return stale


if __name__ == "__main__":
    if sys.argv[1:2] != ["--check"] or len(sys.argv) != 3:
        sys.exit(__doc__)
    stale = check(sys.argv[2])
    if stale:
        sys.exit("%s does not hold what patches/ make: %s" % (sys.argv[2], ", ".join(stale)))
    print("%s holds all %d patched files" % (sys.argv[2], len(targets())))
