"""Audio: 16-bit PCM WAV in the `audio` plugin's tensor form, `[[wav, label]]`, with the WAV
encoding in its metadata. (The legacy `Summary.Audio` value loses its encoding in TensorBoard's
fast data server, which then serves it as application/octet-stream instead of audio/wav.)"""
import io
import wave

import numpy as np

from ..proto import AudioPluginData
from ._common import metadata, summary, tensor

__all__ = ["as_frames", "audio_summary", "encode_wav"]

PLUGIN = "audio"


def as_frames(array, name="audio"):
    """Audio as (frames, channels): (L,) is mono; (L, C) or (C, L) with 1 or 2 channels, the
    channels being the short axis."""
    if array.ndim == 1:
        return array[:, None]
    if array.ndim == 2:
        if array.shape[1] in (1, 2) and array.shape[0] >= array.shape[1]:
            return array
        if array.shape[0] in (1, 2):
            return array.T
    raise ValueError("%s must be (frames,) or (frames, channels) with 1 or 2 channels; got shape %s"
                     % (name, array.shape))


def encode_wav(frames, sample_rate):
    """(frames, channels) samples (float in [-1, 1], clipped; or int16) as a 16-bit WAV file,
    converted in one vectorized step."""
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


def audio_summary(tag, frames, sample_rate):
    content = AudioPluginData(version=0, encoding=AudioPluginData.WAV).SerializeToString()
    meta = metadata(PLUGIN, content)  # no data_class: TensorBoard then projects out the labels
    data = np.array([[encode_wav(frames, sample_rate), b""]], dtype=object)
    return summary(tag, meta, tensor=tensor(data))
