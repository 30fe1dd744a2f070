"""An ATen operator suite from PyTorch's OpInfo database: ``generate_suite`` writes one
KernelBench-format problem per (operator, sample), with a curated default list of operators
(``ops.CURATED``, by class) and the reasons others are left out (``ops.SKIPPED``)."""

from kernelevolve.aten.generate import Suite, generate_suite, load_op_db, read_suite
from kernelevolve.aten.ops import CLASSES, CURATED, SKIPPED

__all__ = ["CLASSES", "CURATED", "SKIPPED", "Suite", "generate_suite", "load_op_db",
           "read_suite"]
