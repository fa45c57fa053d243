"""Calls written for tensorboardX and torch.utils.tensorboard, taken as they are: their keyword
names beside mxboard 0.1.0's, and their positional order where the arguments' types tell the two
orders apart. Where they cannot be told apart, mxboard 0.1.0's order holds, and a value that
cannot mean what that order says is refused with both readings named (README: "Coming from
tensorboardX or torch").
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Dict, Optional, Sequence, TypeVar

__all__ = ["peer_names"]


F = TypeVar("F", bound=Callable[..., Any])


def peer_names(aliases: Optional[Dict[str, str]] = None, peer_order: Optional[Sequence[str]] = None,
               is_peer_order: Optional[Callable[[Any], bool]] = None) -> Callable[[F], F]:
    """A method decorator. `aliases` maps a peer's keyword name to ours. When
    `is_peer_order(args)` holds for the positional arguments, they are bound by the names in
    `peer_order` (peer names allowed) instead of by position."""
    aliases = dict(aliases or {})
    order = tuple(peer_order or ())

    def decorate(method: F) -> F:
        name = method.__name__
        positions = [p.name for p in list(inspect.signature(method).parameters.values())[1:]
                     if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]

        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if is_peer_order is not None and args and is_peer_order(args):
                if len(args) > len(order):
                    raise TypeError("%s() takes at most %d positional arguments in tensorboardX's order; got %d"
                                    % (name, len(order), len(args)))
                for key, value in zip(order, args):
                    if key in kwargs:
                        raise TypeError("%s() got multiple values for argument %r" % (name, key))
                    kwargs[key] = value
                args = ()
            for peer, ours in aliases.items():
                if peer in kwargs:
                    if kwargs[peer] is None:  # the peers' default: not given
                        del kwargs[peer]
                        continue
                    if ours in kwargs or ours in positions[:len(args)]:
                        raise TypeError("%s() got both %r and %r (tensorboardX's name for it)" % (name, ours, peer))
                    kwargs[ours] = kwargs.pop(peer)
            return method(self, *args, **kwargs)

        setattr(call, "__signature__", _signature_with(method, aliases))  # noqa: B010 - help() and IDEs read it
        return call  # type: ignore[return-value]  # the same signature, peers' names added

    return decorate


def _signature_with(method: Callable[..., Any], aliases: Dict[str, str]) -> inspect.Signature:
    """The method's signature, its peer names appended as keyword-only (for help() and IDEs)."""
    signature = inspect.signature(method)
    params = list(signature.parameters.values())
    extra = [inspect.Parameter(peer, inspect.Parameter.KEYWORD_ONLY, default=None)
             for peer in aliases if peer not in signature.parameters]
    tail = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
    head = [p for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD]
    return signature.replace(parameters=head + extra + tail)
