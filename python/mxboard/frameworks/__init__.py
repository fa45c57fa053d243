"""What knows a framework: MXNet arrays captured without waiting for the engine
(mxnet_capture.py), and the Graphs dashboard's GraphDefs from MXNet, torch and ONNX models
(graph.py). None is imported until a value of it is met."""
