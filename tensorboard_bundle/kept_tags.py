"""Upstream's scalars and Time Series plugins, their tags routes made from each run's part of the
answer, kept while the run does not change, where the data provider is the bundle's loader (which
keeps each run's listings: `MxboardDataProvider.kept_listings`). At 100,000 runs upstream's
routes took 2-3 s and 1.5 s a request (each series' metadata parsed and its description rendered
again, then all of it dumped), on the interpreter that loads the runs; a run's part is now made
once, when it changes. The bytes are upstream's: each part is what json.dumps writes for that run
in upstream's answer (tests/test_loader.py). Under another data provider, or where a tag's data
is of a version this TensorBoard does not know, a route is upstream's own.
"""
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

from tensorboard import plugin_util
from tensorboard.backend import http_util
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.metrics import metrics_plugin
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.scalar import scalars_plugin
from werkzeug import wrappers

from tensorboard_bundle import upstream

__all__ = ["ScalarsPlugin", "MetricsPlugin"]

# The latest version of a series' metadata that upstream's plugins read (their version checkers').
_KNOWN_VERSION = 0
# A run's kept listing: (the run, its `changes` then, {tag: what list_* gives for it}).
Listing = Tuple[Any, int, Dict[str, Any]]


class _Parts:
    """Each run's part of an answer, `make(run, {tag: content})` (None: upstream's route answers),
    kept while the run's listing is the same object."""

    def __init__(self, make: Callable[[str, Dict[str, Any]], Any]) -> None:
        self._make = make
        # It maps a run -> (its kept listing, its part).
        self._kept: Dict[str, Tuple[Listing, Any]] = {}

    def of(self, listings: Dict[str, Listing]) -> Optional[List[Any]]:
        """The parts of the runs that hold a series, in order; None where one cannot be made."""
        found, fresh = [], {}
        for run, listing in listings.items():
            if not listing[2]:
                # A run without such series is not in upstream's answer (nor in list_*'s).
                continue
            part = self._kept.get(run)
            if part is None or part[0] is not listing:
                made = self._make(run, listing[2])
                if made is None:
                    return None
                part = (listing, made)
            fresh[run] = part
            found.append(part[1])
        self._kept = fresh
        return found


def _known(parse: Callable[[bytes], Any], tag_to_content: Dict[str, Any]) -> bool:
    """Whether every series' metadata is of a version that upstream's plugins read."""
    return all(0 <= parse(content.plugin_content).version <= _KNOWN_VERSION for content in tag_to_content.values())


def _kept(provider: Any, request: Any, plugin_name: str, data_class: int) -> Optional[Dict[str, Listing]]:
    """The runs' kept listings of the plugin's series of `data_class`; None under a data provider
    that keeps none."""
    kept = getattr(provider, "kept_listings", None)
    if kept is None:
        return None
    listings: Dict[str, Listing] = kept(plugin_util.context(request.environ),
                                        experiment_id=plugin_util.experiment_id(request.environ),
                                        plugin_name=plugin_name, data_class=data_class)
    return listings


class ScalarsPlugin(scalars_plugin.ScalarsPlugin):  # type: ignore[misc]
    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._kept_by = context.data_provider
        self._kept_tags = _Parts(_scalars_part)

    @wrappers.Request.application  # type: ignore[arg-type]
    def tags_route(self, request: Any) -> Any:
        listings = _kept(self._kept_by, request, scalar_metadata.PLUGIN_NAME, summary_pb2.DATA_CLASS_SCALAR)
        parts = self._kept_tags.of(listings) if listings is not None else None
        if parts is None:
            answer: Any = self.index_impl(plugin_util.context(request.environ),
                                          experiment=plugin_util.experiment_id(request.environ))
        else:
            answer = "{%s}" % ", ".join(parts)
        return http_util.Respond(request, answer, "application/json")


def _scalars_part(run: str, tag_to_content: Dict[str, Any]) -> Optional[str]:
    """A run's part of the scalars plugin's `index_impl`, as Respond dumps it (ensure_ascii,
    json's default separators)."""
    if not _known(scalar_metadata.parse_plugin_metadata, tag_to_content):
        return None
    tags = {tag: {"displayName": content.display_name,
                  "description": plugin_util.markdown_to_safe_html(content.description)}
            for tag, content in tag_to_content.items()}
    return "%s: %s" % (json.dumps(run), json.dumps(tags))


# The Time Series dashboard's kinds: (its name in the answer, the plugin, the data class, the
# plugin's metadata module, whose parser reads a series' version).
_KINDS = [("scalars", scalar_metadata.PLUGIN_NAME, summary_pb2.DATA_CLASS_SCALAR, scalar_metadata),
          ("histograms", histogram_metadata.PLUGIN_NAME, summary_pb2.DATA_CLASS_TENSOR, histogram_metadata),
          ("images", image_metadata.PLUGIN_NAME, summary_pb2.DATA_CLASS_BLOB_SEQUENCE, image_metadata)]


class MetricsPlugin(metrics_plugin.MetricsPlugin):  # type: ignore[misc]
    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._kept_by = context.data_provider
        self._kept_tags = {name: _Parts(_metrics_part(module.parse_plugin_metadata)) for name, _, _, module in _KINDS}

    def get_plugin_apps(self) -> Any:
        apps = super().get_plugin_apps()
        apps["/tags"] = self.tags_route
        return apps

    @wrappers.Request.application  # type: ignore[arg-type]
    def tags_route(self, request: Any) -> Any:
        answer: Any = self._answer(request)
        if answer is None:
            answer = upstream.private(metrics_plugin, "MetricsPlugin._tags_impl")(
                self, plugin_util.context(request.environ), experiment=plugin_util.experiment_id(request.environ))
        return http_util.Respond(request, answer, "application/json")

    def _answer(self, request: Any) -> Optional[str]:
        """Upstream's `_tags_impl`, as Respond dumps it, from each run's kept part; None where one
        cannot be made."""
        made = []
        for name, plugin_name, data_class, _ in _KINDS:
            listings = _kept(self._kept_by, request, plugin_name, data_class)
            parts = self._kept_tags[name].of(listings) if listings is not None else None
            if parts is None:
                return None
            made.append((name, parts))
        answer = []
        for name, parts in made:
            described = {run: content for run, _, content, _ in parts if content}
            descriptions = json.dumps(upstream.private(metrics_plugin, "_get_tag_to_description")(described))
            if name == "images":
                images = {run: sampled for run, _, _, sampled in parts}
                answer.append('"images": {"tagDescriptions": %s, "tagRunSampledInfo": %s}' % (
                    descriptions, json.dumps(upstream.private(metrics_plugin, "_get_tag_run_image_info")(images))))
            else:
                answer.append('"%s": {"runTagInfo": {%s}, "tagDescriptions": %s}' % (
                    name, ", ".join(run_tags for _, run_tags, _, _ in parts), descriptions))
        return "{%s}" % ", ".join(answer)


def _metrics_part(parse: Callable[[bytes], Any]) -> Callable[[str, Dict[str, Any]], Any]:
    """The maker of a run's part of the Time Series tags: (the run, its runTagInfo's JSON, its
    described series, its series), or None where upstream's route answers."""
    def make(run: str, tag_to_content: Dict[str, Any]) -> Optional[Tuple[str, str, Dict[str, Any], Dict[str, Any]]]:
        if not _known(parse, tag_to_content):
            return None
        described = {tag: content for tag, content in tag_to_content.items() if content.description}
        return run, "%s: %s" % (json.dumps(run), json.dumps(sorted(tag_to_content))), described, tag_to_content
    return make
