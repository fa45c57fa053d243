"""A scalar with a display name or a description (tensorboardX's add_scalar arguments), as a
Summary of its own. Plain scalars do not come here: they are encoded as batched rows
(_writer/encoding.py)."""
from typing import Any, Optional

import numpy as np

from ..proto import Message, SummaryMetadata
from ._common import summary

__all__ = ["described_scalar_summary"]


def described_scalar_summary(tag: str, value: Any, display_name: Optional[str],
                             description: Optional[str]) -> Message:
    """A `simple_value` with its metadata. TensorBoard moves both into its scalars plugin."""
    meta = SummaryMetadata(display_name=display_name or "", summary_description=description or "")
    return summary(tag, meta, simple_value=float(np.asarray(value).reshape(())))
