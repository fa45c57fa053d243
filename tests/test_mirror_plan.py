"""The mirror's planner (tensorboard_bundle/mirror/plan.py) over listings Hypothesis makes: no
disk, no store. What a listing asks for is checked against what the objects are: every
event file's objects (`<file>`, `<file>.part0001`, ...) make one file, read in part order; a
file is planned only where its first object is listed; no key that is no path below the logdir,
or that lies below an excluded path, is ever planned; and the range reads of a job cover what the
file lacks, once, in order."""
import posixpath

from hypothesis import given
from hypothesis import strategies as st

from mxboard._format.names import part_key
from tensorboard_bundle.mirror.plan import Job, extends, is_event_file, plan

ROOT = "bucket/exp"
OWN = (".mxboard-mirror.json", ".mxboard-mirror.lock", ".mxboard-mirror-new")
RUNS = st.sampled_from(["run", "lr=0.1,bs=32", "a b", "résumé", "deep/er", "..", "", ".mxboard-mirror-new",
                        "excluded", "excluded/inner"])
EVENT = st.builds(lambda host, parts: ("events.out.tfevents.1.%s" % host, parts),
                  st.sampled_from(["h1", "h2"]), st.lists(st.integers(0, 10_001), max_size=4, unique=True))
OTHER = st.sampled_from(["projector_config.pbtxt", "meta/data.tsv", "tfevents-not-an-event/x"])


@st.composite
def listings(draw):
    """{key: info} with event files in parts (some without their first object), other files,
    keys that leave the logdir, and keys outside the root."""
    listing = {}
    for run in draw(st.lists(RUNS, max_size=5)):
        for base, parts in draw(st.lists(EVENT, max_size=2)):
            for number in parts:  # 0: the first object
                name = posixpath.join(run, base) if run else "/" + base
                key = "%s/%s" % (ROOT, part_key(name, number) if number else name)
                listing[key] = {"type": "file", "size": draw(st.integers(0, 100)), "ETag": "e%d" % number}
        for other in draw(st.lists(OTHER, max_size=2)):
            listing["%s/%s/%s" % (ROOT, run, other)] = {"type": "file", "size": 7, "mtime": 1.5}
    if draw(st.booleans()):
        listing["bucket/elsewhere/x"] = {"type": "file", "size": 1}
        listing[ROOT + "/run"] = {"type": "directory", "size": 0}
    return listing


def _valid(name):
    parts = name.split("/")
    return name and all(p not in ("", ".", "..") for p in parts) and parts[0] not in OWN


@given(listings())
def test_a_listing_plans_each_file_once_from_its_objects_in_order(listing):
    found = plan(listing, ROOT, exclude=("excluded/",), own=OWN)
    planned = [key for pieces in found.wanted.values() for key, _, _ in pieces]
    assert len(planned) == len(set(planned))  # no object in two files
    for name, pieces in found.wanted.items():
        assert _valid(name) and not (name + "/").startswith("excluded/")
        keys = [key for key, _, _ in pieces]
        assert keys[0] == "%s/%s" % (ROOT, name)  # planned only where its first object is listed
        assert keys == sorted(keys)  # part names sort in creation order
        assert [size for _, size, _ in pieces] == [listing[key]["size"] for key in keys]
        assert all(tag for _, _, tag in pieces)  # each version told apart
        if not is_event_file(name):
            assert len(pieces) == 1
    for key, info in listing.items():
        if info["type"] != "file" or not key.startswith(ROOT + "/"):
            assert key not in planned
            continue
        name = key[len(ROOT) + 1:]
        if not _valid(name):
            assert key in found.refused and key not in planned
        elif (name + "/").startswith("excluded/"):
            assert "excluded/" in found.excluded and key not in planned
        elif key not in planned:  # left out only as a part whose first object is not listed
            assert is_event_file(name) and ".part" in name
            base = name[:name.rindex(".part")]
            assert "%s/%s" % (ROOT, base) not in listing


@given(listings(), listings())
def test_a_plan_made_with_what_earlier_listings_placed_is_the_plan_made_without(earlier, listing):
    """The mirror keeps what each key is to the plan between its passes (plan's memo)."""
    memo = {}
    plan(earlier, ROOT, exclude=("excluded/",), own=OWN, memo=memo)
    assert plan(listing, ROOT, exclude=("excluded/",), own=OWN, memo=memo) == plan(
        listing, ROOT, exclude=("excluded/",), own=OWN)
    assert set(memo) >= {key for key, info in listing.items() if info["type"] == "file"}


@given(st.lists(st.integers(0, 50), min_size=1, max_size=5), st.data())
def test_a_jobs_range_reads_cover_what_the_file_lacks_once_in_order(sizes, data):
    pieces = [("k%d" % i, size, "t") for i, size in enumerate(sizes)]
    total = sum(sizes)
    start = data.draw(st.integers(0, total))
    verify = bytes(data.draw(st.integers(0, start)))
    most = data.draw(st.integers(1, 20))
    job = Job("events.out.tfevents.1.h", pieces, "local", start, verify)
    offsets = dict(zip((key for key, _, _ in pieces), [sum(sizes[:i]) for i in range(len(sizes))]))
    covered = []
    for owner, key, begin, end in job.ranges(most):
        assert owner is job and 0 <= begin < end <= dict((k, s) for k, s, _ in pieces)[key] and end - begin <= most
        covered.extend(range(offsets[key] + begin, offsets[key] + end))
    assert covered == list(range(start - len(verify), total))


@given(st.lists(st.integers(0, 50), min_size=1, max_size=4), st.integers(0, 3), st.integers(0, 30))
def test_an_event_file_extends_only_by_growing(sizes, more, growth):
    have = [("k%d" % i, size, "t%d" % i) for i, size in enumerate(sizes)]
    grown = have[:-1] + [(have[-1][0], have[-1][1] + growth, "new")] + [("n%d" % i, 5, "t") for i in range(more)]
    assert extends(have, grown)
    assert extends(have, have)
    if have[-1][1] > 0:
        assert not extends(have, have[:-1] + [(have[-1][0], have[-1][1] - 1, "t")])  # shrunk
    if len(have) > 1:
        assert not extends(have, have[1:])  # an object gone
    assert not extends(have, [("other", 10, "t")] + have[1:])
    assert not extends([], have)
