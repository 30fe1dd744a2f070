"""The source the convolution template emits (``template.py`` plans it and says why it is shaped
so): the Triton kernels (the window table, the implicit GEMMs, the FMA kernel, the pointwise
GEMM, the direct depthwise kernel and the phase interleaving pass) and the launcher that picks
one per convolution and phase, each after ``emit/tf32.py``'s split kernels and launchers. Both
are real files in ``kernels/``, read by the one loader."""

import re

from ...emit.templates import load
from ...emit.tf32 import SPLIT_DENSE_KERNEL, SPLIT_DENSE_LAUNCHER

KERNELS = SPLIT_DENSE_KERNEL + "\n\n\n" + load("conv", "conv_kernels")
LAUNCHER = SPLIT_DENSE_LAUNCHER + load("conv", "conv_launcher")

# The longest reduction (input channels per group x window taps) the FMA kernel takes: it does
# C_out FMAs per output and tap where the GEMMs' tensor cores do the long ones. The launcher
# holds the number; the template plans by the same one.
MAX_FMA_K = int(re.search(r"^MAX_FMA_K = (\d+)$", LAUNCHER, re.M)[1])  # type: ignore[index]
