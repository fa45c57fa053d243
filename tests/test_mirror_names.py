"""Names are data: run names and tags from the whole printable Unicode range, with spaces, `%`,
`+`, `,`, `=`, `..` inside a name, names over 255 bytes and names that nest, written to a real S3
store (SeaweedFS) and served by the bundle's loader through its mirror, must be served as
the same runs on local disk are (Hypothesis generates them). `local_names`, the one function that
maps a store's names to local paths, is checked on its own first."""
import itertools
import os
import pathlib
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Server, event_files
from mxboard import SummaryWriter
from mxboard._format.names import local_names
from mxboard.storage import remote

PRINTABLE = st.characters(exclude_categories=("Cs", "Cc", "Co", "Cn"), exclude_characters="/\\")
SPECIAL = st.sampled_from([" ", "%", "+", ",", "=", "..", "%20", "é", "ü", "名", "🙂"])
COMPONENT = st.one_of(
    st.lists(st.one_of(PRINTABLE, SPECIAL), min_size=1, max_size=12).map("".join),
    st.text(PRINTABLE, min_size=90, max_size=120).map(lambda t: t + "名" * 60),  # over 255 bytes
).filter(lambda c: c.strip() not in ("", ".", ".."))


@st.composite
def run_names(draw, max_runs=4):
    """Distinct run names, some nested in others ('a' and 'a/b')."""
    names = draw(st.lists(COMPONENT, min_size=1, max_size=max_runs, unique=True))
    nested = draw(st.lists(st.tuples(st.sampled_from(names), COMPONENT), max_size=2))
    return sorted(set(names) | {"%s/%s" % pair for pair in nested})


@settings(max_examples=300, deadline=None, derandomize=True)
@given(names=run_names(max_runs=8), files=st.lists(COMPONENT, max_size=3))
def test_local_names_are_holdable_unique_and_the_names_themselves_where_they_can_be(names, files):
    paths = ["%s/events.out.tfevents.1.h" % name for name in names] + names[:len(files)]  # files where runs are
    mapped = local_names(paths)
    assert len(set(mapped.values())) == len(paths)  # two names never share a path
    directories = {p.rsplit("/", i)[0] for p in mapped.values() for i in range(1, p.count("/") + 1)}
    for name, path in mapped.items():
        components = path.split("/")
        assert len(components) == len(name.split("/"))
        assert all(0 < len(c.encode("utf-8")) <= 255 and "\x00" not in c for c in components)
        assert path not in directories  # no file where a directory must be
        if "tfevents" in name.rsplit("/", 1)[-1]:
            assert "tfevents" in components[-1]
        holdable = all(len(c.encode("utf-8")) <= 255 for c in name.split("/"))
        if holdable and name not in {n.rsplit("/", i)[0] for n in paths for i in range(1, n.count("/") + 1)}:
            assert path == name  # served as named in the store


@pytest.fixture(scope="module")
def both(seaweed, tmp_path_factory):
    """One bucket and one local directory, each served by the bundle (the bucket through its
    mirror); every example writes below a prefix of its own in both."""
    bucket = seaweed.bucket("names-%d" % os.getpid())
    local = tmp_path_factory.mktemp("names-local")
    fs, _ = remote.open_filesystem("s3://%s" % bucket)
    fs.pipe_file("%s/.keep/events.out.tfevents.0.h" % bucket, b"")  # the logdir exists before the first example
    (local / ".keep").mkdir()
    servers = [Server("s3://%s" % bucket, "--mirror_interval", "1"), Server(str(local))]
    try:
        assert all("data loader: mxboard (in-process)" in s.banner for s in servers)
        yield bucket, local, fs, servers
    finally:
        for server in servers:
            server.close()


_EXAMPLES = itertools.count()


def _served(server, prefix, count, timeout=30):
    """{run: {tag: [(step, value)]}} of the runs below `prefix`, once `count` of them are served."""
    runs = [r for r in server.json("/data/runs", until=lambda runs: sum(r.startswith(prefix) for r in runs) == count,
                                   timeout=timeout) if r.startswith(prefix)]
    tags = server.json("/data/plugin/scalars/tags")
    return {run: {tag: [tuple(row[1:]) for row in server.json("/data/plugin/scalars/scalars",
                                                                {"run": run, "tag": tag})]
                  for tag in tags.get(run, {})} for run in runs}


def _check_served_as_on_local_disk(both, tmp_path_factory, names, tags):
    bucket, local, fs, (mirrored, on_disk) = both
    prefix = "ex%d/" % next(_EXAMPLES)
    written = tmp_path_factory.mktemp("written")
    objects = {}
    for i, name in enumerate(names):
        directory = written / str(i)
        with SummaryWriter(str(directory)) as writer:
            for step, tag in enumerate(tags):
                writer.add_scalar(tag, float(i * 10 + step), step)
        (path,) = event_files(directory)
        objects[prefix + name + "/events.out.tfevents.1.h"] = path
    objects[prefix + names[0] + "/" + names[0].rsplit("/", 1)[-1][:20] + ".txt"] = path  # not an event file
    for key, path in local_names(objects).items():  # local disk holds the names as the mirror maps them
        os.makedirs(os.path.dirname(local / path), exist_ok=True)
        shutil.copy(objects[key], local / path)
    fs.pipe({"%s/%s" % (bucket, key): pathlib.Path(path).read_bytes() for key, path in objects.items()})
    expected = _served(on_disk, prefix, len(names))
    assert len(expected) == len(names) and all(len(t) == len(tags) for t in expected.values())
    assert _served(mirrored, prefix, len(names)) == expected


TAGS = st.lists(st.text(PRINTABLE, min_size=1, max_size=10).filter(str.strip), min_size=1, max_size=2, unique=True)
SERVED = settings(max_examples=3, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow
@SERVED
@given(names=run_names(), tags=TAGS)
def test_runs_from_s3_are_served_as_on_local_disk(both, tmp_path_factory, names, tags):
    """A fixed seed: the same examples on every CI run."""
    _check_served_as_on_local_disk(both, tmp_path_factory, names, tags)


@pytest.mark.slow
@settings(SERVED, derandomize=False, max_examples=2)
@given(names=run_names(), tags=TAGS)
def test_runs_from_s3_are_served_as_on_local_disk_random_seed(both, tmp_path_factory, names, tags):
    """New examples on every run (Hypothesis prints the seed that fails, for @seed)."""
    _check_served_as_on_local_disk(both, tmp_path_factory, names, tags)
