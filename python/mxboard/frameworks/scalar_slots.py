"""Where one writer's device scalars wait for the writer thread: an MXNet NDArray of shape (1,)
in MxnetScalarSlots' rings, a torch CUDA tensor in TorchScalarSlots' pinned rings, and any other
device scalar as the Pending that _api/convert.py captured at the call. The caller's thread
holds a scalar in the slots its kind names; what is held carries those slots to the writer thread,
which reads each kind's scalars in one batch, in call order, without asking what they are."""
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from .device_capture import TorchScalarSlots
from .mxnet_capture import MxnetScalarSlots
from .pending import Kind, Pending

__all__ = ["CapturedScalars", "DeviceScalarSlots", "Held"]


class CapturedScalars:
    """The slots of the scalars captured alone at the call (Pendings): holding one keeps it;
    reading waits for each."""

    def hold(self, pending: Pending) -> Pending:
        return pending

    def read(self, held: Sequence[Pending]) -> List[float]:
        return [float(np.asarray(pending.result()).reshape(())) for pending in held]


# A scalar held: the slots of its kind (which hold it), and its slot there.
Held = Tuple[Any, Any]


class DeviceScalarSlots:
    """The slots of one writer's device scalars, one set for each kind: at the call,
    `by_kind[kind].hold(array)` gives a slot, and the caller queues `(slots, slot)`, a `Held`; on
    the writer thread, `read`."""

    def __init__(self, size: int = 1024) -> None:
        # Every kind's slots are made now (cheap: each grows at its first use), never by a call:
        # two threads' first calls would each make them, and a slot of the ones dropped would be
        # read from the others.
        mxnet, torch = MxnetScalarSlots(size), TorchScalarSlots(size)
        self.by_kind: Dict[Kind, Any] = {Kind.MXNET: mxnet, Kind.TORCH_CUDA: torch, Kind.CAPTURED: CapturedScalars()}

    def read(self, held: Sequence[Held]) -> List[float]:
        """On the writer thread: the float values of `held`, in order, once each device has them;
        their slots are then free again."""
        by_slots: Dict[int, Tuple[Any, List[int]]] = {}
        for position, (slots, _) in enumerate(held):
            by_slots.setdefault(id(slots), (slots, []))[1].append(position)
        values = [0.0] * len(held)
        for slots, positions in by_slots.values():
            for position, value in zip(positions, slots.read([held[p][1] for p in positions])):
                values[position] = value
        return values
