"""NaN and infinities through relu, clamp, hardtanh, maximum, minimum, hardsigmoid and
hardswish on a real GPU, where ``tl.maximum`` / ``tl.minimum`` without ``propagate_nan`` return
the number beside a NaN (the interpreter's keep it either way): the elementwise template's
default candidate must put NaN, inf and -inf where torch does; so must the reductions', pooling's,
arg-reductions' and scans' (tests/synth/offline/nan_reductions.py), where a plain ``tl.max``
drops the NaN. Marked ``gpu``: run with
``python -m pytest -m gpu tests/gpu``."""

from __future__ import annotations

import pytest
import torch

from tests.synth.offline import test_offline_nan_reductions as reductions
from tests.synth.offline.test_offline_nan import check_ops, run_ops

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_nan_and_infinities_reach_the_output_as_in_torch(tmp_path):
    check_ops(run_ops(tmp_path, "cuda"))


def test_reductions_pools_and_scans_keep_nan_and_infinities():
    reductions.check(reductions.run_script("cuda"))
