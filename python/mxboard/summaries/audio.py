"""Audio as 16-bit PCM WAV, in the `audio` plugin's tensor form `[[wav, label]]`, with the WAV
encoding in its metadata. The legacy `Summary.Audio` value is not used: TensorBoard's fast data
server loses its encoding and serves it as application/octet-stream instead of audio/wav."""
import io
import wave
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from ..proto import AudioPluginData, Message
from ._common import metadata, summary, tensor

__all__ = ["as_frames", "audio_summary", "encode_wav", "frames_layout"]

PLUGIN = "audio"


def frames_layout(shape: Sequence[int], name: str = "audio") -> str:
    """How an audio array of `shape` is laid out: 'mono', 'frames-channels' or 'channels-frames'.

    (L,) is mono. (L, C) and (C, L) have 1 or 2 channels on the shorter axis. Any other axes must
    have length 1, as mxboard has always taken arrays that squeeze to 1-D."""
    squeezed = tuple(n for n in shape if n != 1) if len(shape) > 2 else tuple(shape)
    if len(squeezed) == 1 or (len(squeezed) == 0 and shape):
        return "mono"
    if len(squeezed) == 2 and 0 not in squeezed:
        if squeezed[1] in (1, 2) and squeezed[0] >= squeezed[1]:
            return "frames-channels"
        if squeezed[0] in (1, 2):
            return "channels-frames"
    raise ValueError("%s must be (frames,) or (frames, channels) with 1 or 2 channels; got shape %s"
                     % (name, tuple(shape)))


def as_frames(array: NDArray[Any]) -> NDArray[Any]:
    """Audio as a (frames, channels) array."""
    layout = frames_layout(array.shape)
    if layout == "mono":
        return array.reshape(-1, 1)
    array = array.reshape([n for n in array.shape if n != 1] if array.ndim > 2 else array.shape)
    return array if layout == "frames-channels" else array.T


def encode_wav(frames: NDArray[Any], sample_rate: int) -> bytes:
    """(frames, channels) samples as a 16-bit WAV file, converted in one vectorized step. Floats
    are taken as [-1, 1] and clipped; integers are taken as int16."""
    if frames.dtype.kind == "f":
        pcm = (np.clip(np.nan_to_num(frames), -1.0, 1.0) * 32767.0).round().astype("<i2")
    else:
        pcm = frames.astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(pcm.shape[1])
        wav.setsampwidth(2)
        wav.setframerate(int(sample_rate))
        wav.writeframes(np.ascontiguousarray(pcm).tobytes())
    return out.getvalue()


def audio_summary(tag: str, audio: Any, sample_rate: int) -> Message:
    """A Summary of `audio`, samples laid out as `frames_layout` accepts them: floats in [-1, 1]
    (clipped) or int16."""
    frames = as_frames(np.asarray(audio))
    content = AudioPluginData(version=0, encoding=AudioPluginData.WAV).SerializeToString()
    # Without a data_class, TensorBoard leaves out the labels.
    meta = metadata(PLUGIN, content)
    data = np.array([[encode_wav(frames, sample_rate), b""]], dtype=object)
    return summary(tag, meta, tensor=tensor(data))
