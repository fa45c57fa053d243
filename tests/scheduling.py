"""How `make test` shares the tests among pytest-xdist's workers (`--dist loadgroup`): the tests of
a file go to one worker, as `--dist loadfile` sends them (a module's fixtures made once), except
those marked `@pytest.mark.xdist_group(name)`, which go to one worker by group. The groups are the
long chains (a fresh clone's venvs, the trainers' trainings): they are handed out first, so that
the many short files fill the other workers meanwhile, instead of a long chain starting last (xdist
orders files and groups by their count of tests, most first; the groups keep that order)."""
import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """On a worker, a grouped test's id ends in @<group>, which the controller's scheduler reads.
    (pytest-xdist 3.8 does so by setting Item._nodeid, which pytest 9 no longer reads: its id is
    Item._id. Where neither takes, the tests go by file.)"""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under --dist loadgroup
        return
    try:
        from _pytest.nodeid import NodeId  # private: a pytest without it groups the tests by file
    except ImportError:
        return
    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse("%s@%s" % (item.nodeid, "_".join(names)))


@pytest.hookimpl(optionalhook=True)  # the plain environments have no pytest-xdist
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            if nodeid.rfind("@") > nodeid.rfind("]"):  # a grouped test: <nodeid>@<group>
                return "@" + nodeid.rsplit("@", 1)[1]
            return nodeid.split("::", 1)[0]

        def _assign_work_unit(self, node):
            for scope in reversed([s for s in self.workqueue if s.startswith("@")]):
                self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return FilesAndGroups(config, log)
