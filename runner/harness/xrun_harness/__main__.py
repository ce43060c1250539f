"""python3 -m xrun_harness: a worker (PROTOCOL.md)."""
from .worker import main

main()
