"""The TensorBoard server of the mxboard wheel: upstream TensorBoard, launched so that it works
wherever it was installed (venv, --user, --target, a zip), offline and without TensorFlow."""
