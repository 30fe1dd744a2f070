"""The MTIA simulator runs kernels in Triton's interpreter, selected before triton is imported."""

import os

os.environ["TRITON_INTERPRET"] = "1"
