"""Networks as TensorBoard graphs: an `mx.sym.Symbol` or a Gluon `HybridBlock` to a `GraphDef`
that the Graphs dashboard draws, with name scopes from MXNet's names
(`hybridsequential0_conv0_weight` -> `hybridsequential0/conv0/weight`), op types, attributes,
and, given input shapes, tensor shapes on the edges. A torch module's graph is the one torch's
own tracer gives (what torch's writer and tensorboardX draw); ONNX models' nodes as they are."""
import json
import re
import sys
from typing import Any, Collection, Dict, List, Mapping, Optional, Set, Tuple, Union

from ..proto import AttrValue, Event, GraphDef, Message, NodeDef, TensorShapeProto, VersionDef

__all__ = ["graph_def", "graph_event", "is_torch_module", "onnx_graph_def", "symbol_of", "torch_graph_def"]

# An MXNet block or op instance name: conv0, dense1, fc1.
_BLOCK = re.compile(r"^[A-Za-z]+\d+$")


# the frameworks' objects (MXNet symbols and blocks, ONNX models, torch modules) are Any here:
# they ship no types, and are imported only when a user passes one
def symbol_of(net: Any) -> Tuple[Any, List[str]]:
    """(symbol, input names) of a Symbol or HybridBlock. A HybridBlock gives the graph it cached
    when it was hybridized and run forward; else it is traced with a symbolic input."""
    kind = type(net).__name__
    # This is an mx.sym.Symbol.
    if hasattr(net, "tojson") and hasattr(net, "list_arguments"):
        arguments = net.list_arguments()
        data = [n for n in arguments if n == "data" or n.endswith("_data") or re.match(r"data\d+$", n)]
        labels = [n for n in arguments if n == "label" or n.endswith("_label")]
        return net, (data or arguments[:1]) + labels
    # This is a gluon.HybridBlock.
    if hasattr(net, "hybrid_forward") or hasattr(net, "_cached_graph"):
        cached = getattr(net, "_cached_graph", None)
        if cached:
            inputs, symbol = cached
            return symbol, [i.name for i in inputs]
        import mxnet as mx

        try:
            return net(mx.sym.var("data")), ["data"]
        except Exception as exc:
            raise ValueError("add_graph: could not trace %s with one input 'data' (%s). Call "
                             "net.hybridize() and run one forward pass first, then log it."
                             % (kind, exc)) from exc
    if hasattr(net, "collect_params"):
        raise TypeError("add_graph needs a HybridBlock (a plain gluon.Block has no graph: it runs "
                        "Python code); got %s" % kind)
    raise TypeError("add_graph takes an mx.sym.Symbol or a gluon.HybridBlock; got %s" % kind)


def _block_prefixes(net: Any) -> Set[str]:
    """The name prefixes of a Gluon block and of all its children (`digits_`, `digits_conv0_`)."""
    prefixes: Set[str] = set()
    stack = [net]
    while stack:
        block = stack.pop()
        if getattr(block, "prefix", None):
            prefixes.add(block.prefix)
        stack.extend(getattr(block, "_children", {}).values())
    return prefixes


def _scoped(name: str, prefixes: Collection[str] = ()) -> str:
    """A node's name with its scopes: a Gluon name's block prefixes (`digits_conv0_relu_fwd` ->
    `digits/conv0/relu_fwd`), or for bare Symbols the leading instance names (`fc1_weight` ->
    `fc1/weight`)."""
    scopes: List[str] = []
    consumed = ""
    while True:
        inner = [p for p in prefixes if len(p) > len(consumed) and p.startswith(consumed)
                 and name.startswith(p) and len(name) > len(p)]
        if not inner:
            break
        step = min(inner, key=len)
        scopes.append(step[len(consumed):].rstrip("_"))
        consumed = step
    if scopes:
        return "/".join(scopes + [name[len(consumed):]])
    tokens = name.split("_")
    depth = 0
    while depth < len(tokens) - 1 and _BLOCK.match(tokens[depth]):
        depth += 1
    return "/".join(tokens[:depth] + ["_".join(tokens[depth:])])


def _shapes(symbol: Any, input_shape: Optional[Union[Mapping[str, Any], Any]],
            input_names: List[str]) -> Dict[str, Tuple[int, ...]]:
    """Output shapes of every node by name, inferred from the input shapes (or {})."""
    if input_shape is None:
        return {}
    if not isinstance(input_shape, dict):
        input_shape = {input_names[0]: tuple(input_shape)}
    internals = symbol.get_internals()
    try:
        arg_shapes, out_shapes, aux_shapes = internals.infer_shape_partial(**input_shape)
    except Exception as exc:
        raise ValueError("add_graph: input shapes %s do not fit the network: %s" % (input_shape, exc)) from exc
    shapes: Dict[str, Tuple[int, ...]] = {}
    for names, found in ((internals.list_arguments(), arg_shapes), (internals.list_outputs(), out_shapes),
                         (internals.list_auxiliary_states(), aux_shapes)):
        for name, shape in zip(names, found or []):
            if shape:
                shapes[re.sub(r"_output\d*$", "", name)] = shape
    return shapes


def _shape_attr(shape: Any) -> Message:
    dims = [TensorShapeProto.Dim(size=int(n) if n else -1) for n in shape]
    return AttrValue(list=AttrValue.ListValue(shape=[TensorShapeProto(dim=dims)]))


def graph_def(net: Any, input_shape: Optional[Any] = None) -> Message:
    """The GraphDef of `net`; `input_shape`: a tuple for the (first) input, or a dict of input
    name -> shape, to put tensor shapes on the edges."""
    symbol, input_names = symbol_of(net)
    graph = json.loads(symbol.tojson())
    nodes = graph["nodes"]
    shapes = _shapes(symbol, input_shape, input_names)
    prefixes = _block_prefixes(net) if hasattr(net, "collect_params") else ()
    names = [_scoped(node["name"], prefixes) for node in nodes]
    scopes = {name.rsplit("/", 1)[0] for name in names if "/" in name}
    # a node whose name is also a scope (op `fc1` beside `fc1/weight`) moves into it
    names = [name + "/" + name.rsplit("/", 1)[-1] if name in scopes else name for name in names]
    out = GraphDef(versions=VersionDef(producer=22))
    for node, name in zip(nodes, names):
        op = node["op"]
        if op == "null":
            op = "Placeholder" if node["name"] in input_names else "Variable"
        proto = NodeDef(name=name, op=op)
        for source, index, _ in node["inputs"]:
            proto.input.append(names[source] + (":%d" % index if index else ""))
        for key, value in sorted((node.get("attrs") or node.get("attr") or {}).items()):
            proto.attr[key].CopyFrom(AttrValue(s=str(value).encode("utf-8")))
        if node["name"] in shapes:
            proto.attr["_output_shapes"].CopyFrom(_shape_attr(shapes[node["name"]]))
        out.node.append(proto)
    return out


def onnx_graph_def(model: Any) -> Message:
    """The GraphDef of an ONNX model (a file path, or a loaded `onnx.ModelProto`): a node per
    operator (named after its first output; attributes as text), graph inputs as Placeholder,
    weights as Variable, with the shapes the model declares (tensorboardX's add_onnx_graph)."""
    import os

    try:
        import onnx
    except ImportError:
        raise ImportError("add_onnx_graph needs the onnx package: pip install onnx") from None
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model))
    if not isinstance(model, onnx.ModelProto):
        raise TypeError("onnx_model_file must be a path or an onnx.ModelProto; got %s" % type(model).__name__)
    graph = model.graph
    weights = {init.name: list(init.dims) for init in graph.initializer}
    # Tensor name -> the graph's name of what produces it (node[:output index]).
    source: Dict[str, str] = {}
    out = GraphDef(versions=VersionDef(producer=22))
    for value in graph.input:
        source[value.name] = value.name
        proto = NodeDef(name=value.name, op="Variable" if value.name in weights else "Placeholder")
        dims = value.type.tensor_type.shape.dim
        if dims:
            proto.attr["_output_shapes"].CopyFrom(_shape_attr([d.dim_value or None for d in dims]))
        out.node.append(proto)
    for name, shape in weights.items():
        if name not in source:
            source[name] = name
            out.node.append(NodeDef(name=name, op="Variable", attr={"_output_shapes": _shape_attr(shape)}))
    for i, node in enumerate(graph.node):
        name = (node.output[0] if node.output else node.name) or "%s_%d" % (node.op_type, i)
        for index, output in enumerate(node.output):
            source[output] = name + (":%d" % index if index else "")
    for i, node in enumerate(graph.node):
        name = (node.output[0] if node.output else node.name) or "%s_%d" % (node.op_type, i)
        proto = NodeDef(name=name, op=node.op_type, input=[source.get(t, t) for t in node.input if t])
        for attribute in node.attribute:
            value = onnx.helper.get_attribute_value(attribute)
            proto.attr[attribute.name].CopyFrom(AttrValue(s=str(value).encode("utf-8")))
        out.node.append(proto)
    return out


def is_torch_module(net: Any) -> bool:
    """Whether `net` is a torch.nn.Module (torch not imported for it)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(net, torch.nn.Module)


def torch_graph_def(module: Any, example_input: Any, verbose: bool = False, use_strict_trace: bool = True) -> bytes:
    """The serialized GraphDef of a torch module, traced with `example_input` by torch's own
    tracer (torch.utils.tensorboard's, as torch's writer and tensorboardX use it)."""
    if example_input is None:
        raise ValueError("add_graph of a torch module needs input_to_model, an example input to trace it with")
    from torch.utils.tensorboard._pytorch_graph import graph

    graph_def, _ = graph(module, example_input, verbose, use_strict_trace)
    serialized: bytes = graph_def.SerializeToString()
    return serialized


def graph_event(serialized: bytes) -> Message:
    """The Event that carries a serialized GraphDef (built on the writer thread)."""
    return Event(graph_def=serialized)
