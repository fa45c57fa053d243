"""Where one writer's device scalars wait for the writer thread: MXNet NDArrays in
mxnet_capture's rings, torch CUDA tensors in device_capture's pinned rings (each made on its
first use), any other device array captured alone. The caller's thread queues a copy; the
writer thread reads a batch in call order."""
import sys
from typing import Any, List, Sequence, Tuple

import numpy as np

from . import device_capture
from .mxnet_capture import ScalarSlots
from .pending import Pending

__all__ = ["Slots"]


class Slots:
    """`hold` a one-element device array at the call; `read` the values of what was held."""

    def __init__(self, size: int = 1024) -> None:
        # both made now (cheap: their rings grow at their first use), never by a call: two threads'
        # first calls would each make one, and a slot of the one dropped read from the other's rings
        self._mxnet = ScalarSlots(size)
        self._torch = device_capture.TorchScalarSlots(size)

    def hold(self, array: Any, shape: Tuple[int, ...], alone: bool = False) -> Any:
        """`array` (one element, its `shape` checked already) as of now, without waiting: a slot
        of a ring, or with `alone` (a described scalar's Record resolves it itself) a Pending."""
        mx = sys.modules.get("mxnet")
        if mx is not None and isinstance(array, mx.nd.NDArray):
            return self._mxnet.hold(array, shape, alone)
        if not alone and device_capture.is_torch_cuda(array):
            return self._torch.hold(array)
        return device_capture.snapshot(array)

    def read(self, captured: Sequence[Any]) -> List[float]:
        """On the writer thread: the float values of `captured`, in order, once each device has
        them; their slots are then free again."""
        kinds = [type(item) for item in captured]
        mxnet = iter(self._mxnet.read([c for c, k in zip(captured, kinds) if k is tuple]) if tuple in kinds else ())
        torch = iter(self._torch.read([c for c, k in zip(captured, kinds) if k is device_capture.TorchSlot])
                     if device_capture.TorchSlot in kinds else ())
        values = []
        for item, kind in zip(captured, kinds):
            if kind is tuple:
                values.append(next(mxnet))
            elif kind is device_capture.TorchSlot:
                values.append(next(torch))
            else:
                values.append(float(np.asarray(item.result() if isinstance(item, Pending) else item).reshape(())))
        return values
