"""Benchmarks: tapegrad measured side by side with a node-graph reference (``python -m benchmarks.memory``)."""
