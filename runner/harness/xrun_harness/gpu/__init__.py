"""What only a CUDA worker runs: the L2 flush, the hold and spin kernels,
the CUPTI kernel clock and the event-timed samples built on them."""
