"""Starts an xrun harness worker: the xrun_harness package beside this file
(PROTOCOL.md). The runner writes both into a directory of its own and runs
`python3 -u harness.py` in the experiment's directory; with --zygote, the
zygote that forks the run's workers instead; with --cache-copy SRC DST, the
copy of an implementation's fresh compile caches into the volume's
(PROTOCOL.md, "Compile caches"); with --forget-autotune DIR, the removal
of the autotune results stored in Triton's cache DIR (xrun submit --retune)."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if sys.argv[1:] == ["--zygote"]:
        from xrun_harness.zygote import main
    elif sys.argv[1:2] == ["--cache-copy"]:
        from xrun_harness.cachecopy import main
    elif sys.argv[1:2] == ["--forget-autotune"]:
        from xrun_harness.autotune import main
    else:
        from xrun_harness.worker import main
    main()
