"""How the encoder runs, apart from what it offers (``encode.encoder``).

Process settings for fast, steady CPU encoding: OpenMP's wait policy (``omp``), glibc's
mmap threshold (``malloc``), concurrent batches (``parallel``), bf16 document windows
(``precision``) and opt-in int8 weights (``quantize``). The two sides of an
``encode_documents`` call: the host's, documents made into groups of padded batches
(``planning``), prepared by the producer thread (``prefetch``) or in worker processes
(``process``, whose worker runs ``process_worker``); and the device's, batches launched,
recovered from failures and gathered into documents (``scheduler``). What the defaults
chose on a machine: ``describe``; the broadcast padding mask: ``padding``.

Nothing here imports ``encode.encoder``, and nothing imports torch at module level where it
must run before torch loads (``omp``).
"""
