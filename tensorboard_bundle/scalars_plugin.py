"""Upstream's scalars plugin, its tags route answered from each run's part of the answer, kept
while the run does not change, where the data provider is the bundle's loader (which keeps each
run's listing: `MxboardDataProvider.kept_scalars`). With 100,000 runs upstream's route took about
2 s a request (the listing copied, and each of 300,000 series' metadata parsed and its
description rendered, then all of it dumped), on the interpreter that loads the runs; a run's
part is now made once, when it changes. The bytes are upstream's: each part is what json.dumps
writes for that run in upstream's answer (tests/test_loader.py). Under another data provider, or
where a tag's data is of a version this TensorBoard does not know, the route is upstream's own.
"""
import json
from typing import Any, Dict, Optional, Tuple

from tensorboard import plugin_util
from tensorboard.backend import http_util
from tensorboard.plugins.scalar import metadata, scalars_plugin
from werkzeug import wrappers

__all__ = ["ScalarsPlugin"]


class ScalarsPlugin(scalars_plugin.ScalarsPlugin):  # type: ignore[misc]
    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self._kept_scalars = getattr(context.data_provider, "kept_scalars", None)
        # It maps a run -> (its kept listing, its part of the answer).
        self._parts: Dict[str, Tuple[Any, str]] = {}

    @wrappers.Request.application  # type: ignore[arg-type]
    def tags_route(self, request: Any) -> Any:
        ctx = plugin_util.context(request.environ)
        experiment = plugin_util.experiment_id(request.environ)
        answer: Any = None
        if self._kept_scalars is not None:
            answer = self._answer(self._kept_scalars(ctx, experiment_id=experiment, plugin_name=metadata.PLUGIN_NAME))
        if answer is None:
            answer = self.index_impl(ctx, experiment=experiment)
        return http_util.Respond(request, answer, "application/json")

    def _answer(self, listings: Dict[str, Tuple[Any, int, Dict[str, Any]]]) -> Optional[str]:
        """The JSON of `index_impl`'s answer, from each run's kept listing, as Respond dumps it
        (ensure_ascii, json's default separators); None where a tag's data is of a version this
        TensorBoard does not know (index_impl leaves it out, and warns)."""
        parts, fresh = [], {}
        for run, listing in listings.items():
            if not listing[2]:
                # A run without scalars is not in the answer (nor in list_scalars').
                continue
            part = self._parts.get(run)
            if part is None or part[0] is not listing:
                tags = _tags(listing[2])
                if tags is None:
                    return None
                part = (listing, "%s: %s" % (json.dumps(run), json.dumps(tags)))
            fresh[run] = part
            parts.append(part[1])
        self._parts = fresh
        return "{%s}" % ", ".join(parts)


def _tags(tag_to_content: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """One run's part of `index_impl`'s answer, made as it makes it; None where a tag's data is of
    a version that it leaves out."""
    tags = {}
    for tag, metadatum in tag_to_content.items():
        if not 0 <= metadata.parse_plugin_metadata(metadatum.plugin_content).version <= metadata.PROTO_VERSION:
            return None
        tags[tag] = {"displayName": metadatum.display_name,
                     "description": plugin_util.markdown_to_safe_html(metadatum.description)}
    return tags
