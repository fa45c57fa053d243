"""Text, as the `text` plugin's string tensor. TensorBoard renders a string as markdown, and a 1-D
or 2-D array of strings as a table."""
from typing import Any

import numpy as np

from ..proto import Message, TextPluginData
from ._common import metadata, summary, tensor

__all__ = ["text_summary"]

PLUGIN = "text"


def text_summary(tag: str, text: Any) -> Message:
    """A Summary of `text`: a str, or a numpy array of str (a 1-D one is a column, a 2-D one a table)."""
    meta = metadata(PLUGIN, TextPluginData(version=0).SerializeToString())
    return summary(tag, meta, tensor=tensor(np.asarray(text, dtype=object)))
