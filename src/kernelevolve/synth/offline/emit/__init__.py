"""What every template writes with: the candidate module around the kernels (``source.py``),
Triton expressions (``expr.py``), launcher arguments (``operands.py``), fixed-source templates
(``block.py``) and the TF32 split shared by the GEMMs (``tf32.py``)."""
