"""xrun harness: runs one implementation of an experiment for the runner.

The runner starts one worker process per implementation. Commands arrive as
JSON lines on fd 3 and events leave as JSON lines on fd 4 (XRUN_CMD_FD and
XRUN_EVENT_FD override them); stdout and stderr belong to the experiment's
code, which may print freely. PROTOCOL.md beside this package documents
every command and event.

Requires Python >= 3.9 and numpy; torch (CPU or CUDA) and triton are optional.

    protocol     typed commands and events, their defaults and encoding
    errors       error kinds and the stage that failed
    backend      numpy and torch as a worker holds them, the device
    loader       the experiment's module:callable references and calls
    tensors      copies, bitwise equality, dtypes, hashes, poisoning
    correctness  the check command
    timing       the time command: inputs, warm-up, stopping rule, host samples
    gpu/         the GPU samples: flush, hold and spin kernels, kernel clock
    worker       the command loop
    cachecopy    harness.py --cache-copy: fresh compile caches into the volume's
"""
