"""The Custom Scalars dashboard's layout: charts that group scalar tags by regular expressions."""
from typing import Any

import numpy as np

from ..proto import Category, Chart, Layout, MarginChartContent, Message, MultilineChartContent
from ._common import metadata, summary, tensor

__all__ = ["layout_proto", "custom_scalars_summary"]

PLUGIN = "custom_scalars"
CONFIG_TAG = "custom_scalars__config__"


def layout_proto(layout: Any) -> Message:
    """tensorboardX's layout dict as a Layout message.

    The dict is `{category: {chart title: ["Multiline", [tag regexes]] or ["Margin", [value,
    lower, upper]]}}`. Its shape is checked, and an error names the chart that is wrong."""
    if not isinstance(layout, dict) or not layout:
        raise TypeError("layout must be a non-empty dict of category -> {chart title: [kind, tags]}")
    categories = []
    for title, charts in layout.items():
        if not isinstance(title, str) or not isinstance(charts, dict):
            raise TypeError("layout[%r] must map a str category to a dict of charts" % (title,))
        protos = []
        for chart_title, spec in charts.items():
            if not isinstance(spec, (list, tuple)) or len(spec) != 2 or not isinstance(spec[1], (list, tuple)):
                raise ValueError("layout[%r][%r] must be [\"Multiline\" or \"Margin\", [tags]]; got %r"
                                 % (title, chart_title, spec))
            kind, tags = spec
            if not all(isinstance(t, str) for t in tags):
                raise TypeError("layout[%r][%r]: tags must be str" % (title, chart_title))
            if kind == "Multiline":
                protos.append(Chart(title=chart_title, multiline=MultilineChartContent(tag=list(tags))))
            elif kind == "Margin" and len(tags) == 3:
                series = MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                protos.append(Chart(title=chart_title, margin=MarginChartContent(series=[series])))
            else:
                raise ValueError("layout[%r][%r]: kind must be \"Multiline\" or \"Margin\" (with 3 tags: "
                                 "value, lower, upper); got %r" % (title, chart_title, spec))
        categories.append(Category(title=title, chart=protos))
    return Layout(category=categories)


def custom_scalars_summary(layout: Message) -> Message:
    """A Summary of the Layout message, under the tag the plugin reads."""
    data = np.array(layout.SerializeToString(), dtype=object)
    return summary(CONFIG_TAG, metadata(PLUGIN), tensor=tensor(data))
