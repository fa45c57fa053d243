"""Text: the `text` plugin's string tensor. A string is rendered as markdown; a 1-D or 2-D array
of strings as a table."""
from typing import Any

import numpy as np

from ..proto import Message, TextPluginData
from ._common import metadata, summary, tensor

__all__ = ["text_summary"]

PLUGIN = "text"


def text_summary(tag: str, text: Any) -> Message:
    """`text`: a str, or a numpy array of str (1-D: a column, 2-D: a table)."""
    meta = metadata(PLUGIN, TextPluginData(version=0).SerializeToString())
    return summary(tag, meta, tensor=tensor(np.asarray(text, dtype=object)))
