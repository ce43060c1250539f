"""Starts an xrun harness worker: the xrun_harness package beside this file
(PROTOCOL.md). The runner writes both into a directory of its own and runs
`python3 -u harness.py` in the experiment's directory."""
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from xrun_harness.worker import main

    main()
