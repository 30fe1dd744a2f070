"""Kernels built in this process (test_diagnosis) run in Triton's interpreter, which is read when
triton is first imported, and in-process tests can import it early (torch._dynamo does):
set it before any of them. Workers and the GPU-compile process set their own."""

import os

os.environ["TRITON_INTERPRET"] = "1"
