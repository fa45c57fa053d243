"""A stand-in for CUDA behind device_capture's seam, for machines without a GPU: host tensors play
the device's, and the stream is a queue that runs only when an event is waited on. A capture
that reads on the caller's thread, or reads before its copy, or copies after a later in-place
update, shows here as it would on a GPU. Which threads waited is recorded (the caller's must
never: torch's sync debug mode's check, without a GPU)."""
import threading

import numpy as np

from mxboard.frameworks import device_capture


class FakeStream:
    def __init__(self):
        self.queue = []  # what was queued, in order
        self.done = 0  # how much of it ran
        self.waiters = []  # the threads that waited on an event

    def enqueue(self, op):
        """Queue work the loop does after a log call (say an in-place update)."""
        self.queue.append(op)

    def run_to(self, position):
        while self.done < position:
            self.queue[self.done]()
            self.done += 1


class FakeEvent:
    def __init__(self, stream):
        self.stream = stream
        self.position = 0
        self.records = 0

    def synchronize(self):
        self.stream.waiters.append(threading.current_thread())
        self.stream.run_to(self.position)


class FakeCuda(device_capture.Cuda):
    def __init__(self):
        self.stream = FakeStream()
        self.buffers = 0  # pinned buffers made
        self.events = []  # every event made

    def pinned(self, shape, dtype):
        import torch

        self.buffers += 1
        return torch.empty(tuple(shape), dtype=dtype)

    def copy(self, target, source):
        self.stream.enqueue(lambda: target.copy_(source))

    def upload(self, array, device):
        import torch

        return torch.from_numpy(np.array(array))

    def record(self, event, device):
        if event is None:
            event = FakeEvent(self.stream)
            self.events.append(event)
        event.position = len(self.stream.queue)
        event.records += 1
        return event
