"""System metrics beside the training curves, asked for with `SummaryWriter(...,
system_metrics=True)`. A daemon thread samples the process and the machine every `interval`
seconds and logs them as scalars under `system/`. The step is the seconds since the writer began.

- `system/cpu/process_percent` (of one core, so 200 means two busy cores) and
  `system/cpu/machine_percent` (of all cores);
- `system/memory/process_rss_mb` and `system/memory/available_mb`;
- `system/disk/read_mb_per_s`, `system/disk/write_mb_per_s`, `system/network/sent_mb_per_s` and
  `system/network/received_mb_per_s`, the machine's rates since the last sample;
- `system/gpu<i>/utilization_percent` and `system/gpu<i>/memory_used_mb` for each NVIDIA GPU,
  where nvidia-ml-py (`pynvml`) and a driver are installed.

It needs psutil (`pip install 'mxboard[system]'`). A sample costs about a millisecond of CPU, so
one every 10 s (the default) takes well under 0.5% of a core (`make bench` measures it).
"""
from __future__ import annotations

import threading
import time
import weakref
from typing import Any, Dict, List

__all__ = ["SystemMetrics", "psutil_module"]

_MB = float(1 << 20)


def psutil_module() -> Any:
    """psutil, or an ImportError that names the extra which installs it."""
    try:
        import psutil
    except ImportError:
        raise ImportError("system_metrics needs psutil: pip install 'mxboard[system]'") from None
    return psutil


class SystemMetrics:
    """Logs system metrics into `writer` every `interval` seconds until `stop()`."""

    def __init__(self, writer: Any, interval: float = 10.0) -> None:
        psutil = psutil_module()
        # a weak reference, so that a writer left unclosed is still collected (and closed by the reaper)
        self._psutil, self._writer, self.interval = psutil, weakref.ref(writer), interval
        self._process = psutil.Process()
        # psutil's first call only starts counting (it returns 0).
        self._process.cpu_percent(None)
        psutil.cpu_percent(None)
        self._start = self._last = time.monotonic()
        self._io = self._counters()
        self._gpus = _gpus()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="mxboard system metrics", daemon=True)
        self._thread.start()

    def _counters(self) -> List[float]:
        disk, net = self._psutil.disk_io_counters(), self._psutil.net_io_counters()
        return [disk.read_bytes if disk else 0, disk.write_bytes if disk else 0,
                net.bytes_sent if net else 0, net.bytes_recv if net else 0]

    def sample(self) -> Dict[str, float]:
        """The metrics now: {tag: value}."""
        psutil, now = self._psutil, time.monotonic()
        io, elapsed = self._counters(), max(now - self._last, 1e-9)
        rates = [(new - old) / elapsed / _MB for new, old in zip(io, self._io)]
        self._io, self._last = io, now
        values = {
            "system/cpu/process_percent": self._process.cpu_percent(None),
            "system/cpu/machine_percent": psutil.cpu_percent(None),
            "system/memory/process_rss_mb": self._process.memory_info().rss / _MB,
            "system/memory/available_mb": psutil.virtual_memory().available / _MB,
            "system/disk/read_mb_per_s": rates[0], "system/disk/write_mb_per_s": rates[1],
            "system/network/sent_mb_per_s": rates[2], "system/network/received_mb_per_s": rates[3],
        }
        for i, (nvml, handle) in enumerate(self._gpus):
            try:
                values["system/gpu%d/utilization_percent" % i] = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                values["system/gpu%d/memory_used_mb" % i] = nvml.nvmlDeviceGetMemoryInfo(handle).used / _MB
            # A GPU that has gone, or a driver error: its values are skipped.
            except Exception:  # noqa: BLE001
                pass
        return values

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            step, writer = int(time.monotonic() - self._start), self._writer()
            if writer is None:
                return
            try:
                for tag, value in self.sample().items():
                    writer.add_scalar(tag, value, step)
            # The writer failed, and its own calls raise that error.
            except Exception:  # noqa: BLE001
                return
            del writer

    def stop(self) -> None:
        """Stop sampling, and wait up to 5 s for the thread to end (unless called from it)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(5)


def _gpus() -> List[Any]:
    """[(pynvml, handle)] of the NVIDIA GPUs, where nvidia-ml-py and a driver are installed."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return [(pynvml, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(pynvml.nvmlDeviceGetCount())]
    # Without the package, a driver or a GPU, there are no GPU metrics.
    except Exception:  # noqa: BLE001
        return []

