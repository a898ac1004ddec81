"""Finding and loading models: which names mean which weights (``registry``), how a model
directory, GGUF file or adapter becomes a loaded model (``loading``, ``lora``, ``split_zip``),
what identifies loaded weights (``fingerprint``), and the process's shared encoders (``cache``).
"""
