"""From the reference to what the templates read: the aten-level fx trace (``trace.py``), its
direct reading (``fxgraph.py``), and its lowering into the expression DAG (``ir.py``,
``lower.py``, ``compound.py``)."""
