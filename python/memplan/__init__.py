"""memplan's Python side.

Holds the PyTorch model exporter (``memplan.export``: torchvision models to
``memplan-graph/1`` JSON plus usage records CSV) and the pure-Python graph
helpers it uses (``memplan.records``: lifetimes and records derived from a
graph; no torch needed).  Run with Debian's interpreter and the repository's
``python`` directory on the path::

    PYTHONPATH=python /usr/bin/python3 -m memplan.export --list

See docs/graph-format.md.
"""

__version__ = "0.1.0"
GRAPH_FORMAT = "memplan-graph/1"
