"""The search loop: state, tree, wiring and runs (see graph/build.py for the edges)."""
