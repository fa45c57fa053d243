"""mxboard in the trainers people use, each a drop-in replacement for the trainer's own TensorBoard
class: `lightning.TensorBoardLogger` (PyTorch Lightning), `transformers.TensorBoardCallback` (the
Hugging Face Trainer), `accelerate.TensorBoardTracker` (Accelerate) and `keras.TensorBoard` (Keras
3 on any backend, without TensorFlow). Each module imports its framework, and this package
imports none. docs/integrations.md has an example of each."""
