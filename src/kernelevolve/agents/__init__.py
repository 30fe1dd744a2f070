"""The agents: one node function per module; graph/build.py wires them."""
