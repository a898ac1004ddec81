"""Process settings for fast, steady CPU encoding: OpenMP's wait policy (``omp``), glibc's
mmap threshold (``malloc``), concurrent batches (``parallel``), the producer thread that
prepares the next group (``prefetch``), bf16 document windows
(``precision``) and opt-in int8 weights (``quantize``).

Nothing here imports torch at module level where it must run before torch loads (``omp``).
"""
