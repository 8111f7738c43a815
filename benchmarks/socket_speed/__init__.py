"""One chat answer timed on its user's WebSocket, in a process of its own (benchmarks/socket_bench.py)."""
