"""Hyper-parameters for the HParams dashboard, as TensorBoard's hparams plugin reads them: an
experiment (which hparams and metrics exist), a session start (this run's values) and a session
end."""
import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from ..proto import Message, Summary
from ..proto import hparams as hp
from ._common import metadata, summary, tensor

__all__ = ["hparam_value", "hparams_summary"]

PLUGIN = "hparams"
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"
_NULL_TENSOR = np.zeros((0,), dtype=np.float32)


# An hparam's value, as hparam_value returns it.
HParam = Union[bool, float, str]


def hparam_value(value: Any, name: str) -> HParam:
    """An hparam's value as a Python bool, float or str. Numpy scalars and 0-d arrays are unwrapped."""
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return value
    raise TypeError("hparam %r must be a bool, number or str; got %s" % (name, type(value).__name__))


def _protobuf_value(value: HParam) -> Message:
    out = hp.Value()
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, float):
        out.number_value = value
    else:
        out.string_value = value
    return out


def _data_type(value: HParam) -> int:
    if isinstance(value, bool):
        return int(hp.DataType.DATA_TYPE_BOOL)
    if isinstance(value, float):
        return int(hp.DataType.DATA_TYPE_FLOAT64)
    return int(hp.DataType.DATA_TYPE_STRING)


def _metric_info(metric: Union[str, Tuple[str, str, str]]) -> Message:
    """The MetricInfo of a metric tag, or of (tag, group, display name): a tag of the sub-run
    `group`, shown by its display name (TensorBoard would show it as `group.tag`)."""
    if isinstance(metric, tuple):
        tag, group, display_name = metric
        return hp.MetricInfo(name=hp.MetricName(tag=tag, group=group), display_name=display_name)
    return hp.MetricInfo(name=hp.MetricName(tag=metric))


def _value(tag: str, plugin_data: Dict[str, Message]) -> Message:
    content = hp.HParamsPluginData(version=0, **plugin_data).SerializeToString()
    return summary(tag, metadata(PLUGIN, content), tensor=tensor(_NULL_TENSOR)).value[0]


def hparams_summary(hparams: Mapping[str, HParam], metric_tags: Iterable[Union[str, Tuple[str, str, str]]],
                    start_time: float, end_time: float,
                    domains: Optional[Mapping[str, List[HParam]]] = None) -> Message:
    """One session as a Summary of three values: the experiment (which hparams and metrics
    exist), the session's start (its values) and its end.

    Args:
        hparams: name -> value, as `hparam_value` returns it.
        metric_tags: the scalar tags to show as metrics. Each is a tag of the run, or (tag, group,
            display name) for a tag of the sub-run `group` (a path below the run, as TensorBoard
            names runs), shown by that name.
        start_time, end_time: the session's start and end, in seconds since the epoch.
        domains: optionally, name -> the list of values the hparam takes across runs.
    """
    infos = []
    for name, value in hparams.items():
        info = hp.HParamInfo(name=name, type=_data_type(value))
        if domains and name in domains:
            info.domain_discrete.CopyFrom(hp.ListValue(values=[_protobuf_value(v) for v in domains[name]]))
        infos.append(info)
    experiment = hp.Experiment(
        hparam_infos=infos, metric_infos=[_metric_info(t) for t in metric_tags])
    start = hp.SessionStartInfo(start_time_secs=start_time)
    for name, value in hparams.items():
        start.hparams[name].CopyFrom(_protobuf_value(value))
    end = hp.SessionEndInfo(status=hp.Status.STATUS_SUCCESS, end_time_secs=end_time)
    return Summary(value=[
        _value(EXPERIMENT_TAG, {"experiment": experiment}),
        _value(SESSION_START_INFO_TAG, {"session_start_info": start}),
        _value(SESSION_END_INFO_TAG, {"session_end_info": end}),
    ])
