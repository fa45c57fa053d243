"""Accept calls written for tensorboardX and torch.utils.tensorboard as they are.

Their keyword names are taken beside mxboard 0.1.0's, and their positional order where the
arguments' types tell the two orders apart. Where the orders cannot be told apart, mxboard
0.1.0's order holds. A value that this order cannot mean is read in tensorboardX's and torch's
order, with a warning that names both readings, and more positional values than their order has
are a TypeError (docs/compat.md). torch.utils.tensorboard took its names and orders from
tensorboardX, so the names below say tensorboardX for both.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, TypeVar

import numpy as np

__all__ = ["accepts_tensorboardx", "audio_in_tensorboardx_order", "pr_curve_in_tensorboardx_order",
           "scalar_of_tensorboardx_keywords", "AUDIO_RATES"]


F = TypeVar("F", bound=Callable[..., Any])


def accepts_tensorboardx(aliases: Optional[Dict[str, str]] = None, order: Optional[Sequence[str]] = None,
                         in_order: Optional[Callable[[Any], bool]] = None) -> Callable[[F], F]:
    """A method decorator that accepts tensorboardX's and torch's names and order.

    Args:
        aliases: maps their keyword names to ours.
        order: the names of the positional arguments, in their order.
        in_order: when it returns True for the positional arguments, they are bound by the names
            in `order` (their names allowed) instead of by position.
    """
    aliases = dict(aliases or {})
    names = tuple(order or ())

    def decorate(method: F) -> F:
        name = method.__name__
        positions = [p.name for p in list(inspect.signature(method).parameters.values())[1:]
                     if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]

        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if in_order is not None and args and in_order(args):
                if len(args) > len(names):
                    raise TypeError("%s() takes at most %d positional arguments in tensorboardX's order; got %d"
                                    % (name, len(names), len(args)))
                for key, value in zip(names, args):
                    if key in kwargs:
                        raise TypeError("%s() got multiple values for argument %r" % (name, key))
                    kwargs[key] = value
                args = ()
            for theirs, ours in aliases.items():
                if theirs in kwargs:
                    # tensorboardX's default, which means not given.
                    if kwargs[theirs] is None:
                        del kwargs[theirs]
                        continue
                    if ours in kwargs or ours in positions[:len(args)]:
                        raise TypeError("%s() got both %r and %r (tensorboardX's name for it)" % (name, ours, theirs))
                    kwargs[ours] = kwargs.pop(theirs)
            return method(self, *args, **kwargs)

        # help() and IDEs read it.
        setattr(call, "__signature__", _signature_with(method, aliases))  # noqa: B010
        # The same signature, with tensorboardX's names added.
        return call  # type: ignore[return-value]

    return decorate


def _signature_with(method: Callable[..., Any], aliases: Dict[str, str]) -> inspect.Signature:
    """The method's signature with tensorboardX's and torch's names appended as keyword-only
    parameters, for help() and IDEs."""
    signature = inspect.signature(method)
    params = list(signature.parameters.values())
    extra = [inspect.Parameter(theirs, inspect.Parameter.KEYWORD_ONLY, default=None)
             for theirs in aliases if theirs not in signature.parameters]
    tail = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    head = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    return signature.replace(parameters=head + extra + tail)


# -- the calls whose positional order differs from tensorboardX's and torch's, and the keywords
# -- of theirs that add_scalar takes
AUDIO_RATES = {8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000, 176400, 192000}


def audio_in_tensorboardx_order(args: Sequence[Any]) -> bool:
    """Whether add_audio(tag, audio, N[, M]) is in tensorboardX's and torch's order.

    mxboard 0.1.0 took (sample_rate, global_step) there, and tensorboardX and torch take
    (global_step, sample_rate). N is a sample rate if it is one of the usual audio rates (8 kHz to
    192 kHz). Otherwise it is their step (tensorboardX's demo passes the step third), with a
    warning where it could be a rate (1 kHz or more)."""
    if len(args) < 3 or isinstance(args[2], bool) or not isinstance(args[2], (int, float, np.number)):
        return False
    if args[2] in AUDIO_RATES:
        return False
    if args[2] >= 1000:
        warnings.warn("add_audio: a third positional argument that is no usual audio rate is read as "
                      "global_step (tensorboardX's and torch's order); pass sample_rate= and global_step= by keyword",
                      UserWarning, stacklevel=3)
    return True


def pr_curve_in_tensorboardx_order(args: Sequence[Any]) -> bool:
    """Whether add_pr_curve(tag, labels, predictions, N[, M]) is in tensorboardX's and torch's
    order.

    mxboard 0.1.0 took (num_thresholds, global_step) there, and tensorboardX and torch take
    (global_step, num_thresholds). A lone N is the step, as their code passes it (tensorboardX's
    own demo does; mxboard 0.1.0's examples pass num_thresholds by keyword). With M too, 0.1.0's
    order holds, unless N is below 2 and so cannot be num_thresholds. A warning says which reading
    was taken; by keyword, nothing is guessed."""
    if len(args) < 4:
        return False
    lone = len(args) == 4
    theirs = lone or (isinstance(args[3], (int, float, np.integer)) and args[3] < 2)
    if lone:
        message = "a lone fourth positional argument is read as global_step (tensorboardX's and torch's order)"
    elif theirs:
        message = "positional (global_step, num_thresholds): the fourth, below 2, is no num_thresholds"
    else:
        message = "positional (num_thresholds, global_step), mxboard 0.1.0's order"
    warnings.warn("add_pr_curve: %s; pass num_thresholds= and global_step= by keyword" % message, UserWarning,
                  stacklevel=3)
    return bool(theirs)


_SCALAR_KEYWORDS = {"scalar_value", "new_style", "double_precision", "display_name", "summary_description"}


def scalar_of_tensorboardx_keywords(value: Any, keywords: Dict[str, Any]) -> Tuple[Any, Optional[Tuple[str, str]]]:
    """The (value, (display_name, description) or None) of an add_scalar call with tensorboardX's
    or torch's keywords: `scalar_value=`, tensorboardX's `display_name` and `summary_description`
    (which make a summary of its own), and torch's `new_style` and `double_precision` (accepted
    and ignored, as the values are float32 either way)."""
    unknown = sorted(set(keywords) - _SCALAR_KEYWORDS)
    if unknown:
        raise TypeError("SummaryWriter.add_scalar() got an unexpected keyword argument %r" % unknown[0])
    scalar_value = keywords.get("scalar_value")
    if scalar_value is not None:
        if value is not None:
            raise TypeError("add_scalar() got both 'value' and 'scalar_value' (tensorboardX's name for it)")
        value = scalar_value
    display_name, description = keywords.get("display_name") or "", keywords.get("summary_description") or ""
    return value, (display_name, description) if display_name or description else None
