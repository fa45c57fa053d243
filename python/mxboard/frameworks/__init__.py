"""What knows a framework: MXNet arrays captured without waiting for the engine (mxnet_capture.py),
GPU arrays captured without a device sync (device_capture.py), the device scalars' slots
(scalar_slots.py), and the Graphs dashboard's GraphDefs from MXNet, torch and ONNX models
(graph.py). The kind of an array is decided by _api/convert.py and given to these modules; none
is imported until a value of it is met."""
