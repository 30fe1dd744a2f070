"""The device profiler's account of who launched each kernel (device_kernels.py), on Chrome
traces shaped as Kineto writes them: ops on the host thread, launch calls with CUPTI's
correlation ids, kernels on a stream. The GPU half (a real profiler) is tests/gpu/
test_device_kernels_gpu.py."""

from __future__ import annotations

from kernelevolve.tools.harness.device_kernels import (
    is_own,
    launched_by,
    own_kernel_names,
    refusal,
)
from kernelevolve.tools.harness.guard import ALLOWED_ATEN_OPS


def _trace(*events: tuple) -> dict:
    """Events as (kind, name, ts, dur, correlation): op and launch on thread 1, kernel on 7."""
    out = []
    for kind, name, ts, dur, corr in events:
        if kind == "op":
            out.append({"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur,
                        "tid": 1, "args": {"External id": corr}})
        elif kind == "launch":
            out.append({"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": dur,
                        "tid": 1, "args": {"correlation": corr}})
        else:
            out.append({"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur,
                        "tid": 7, "args": {"correlation": corr}})
    return {"traceEvents": out}


def test_kernel_belongs_to_the_innermost_op_around_its_launch():
    trace = _trace(
        ("op", "aten::zeros", 0, 50, 1), ("op", "aten::zero_", 10, 30, 2),
        ("op", "aten::fill_", 12, 20, 3), ("launch", "cudaLaunchKernel", 15, 5, 100),
        ("kernel", "vectorized_elementwise_kernel<FillFunctor>", 40, 3, 100),
        ("launch", "cuLaunchKernelEx", 60, 5, 101), ("kernel", "relu_kernel", 70, 9, 101),
        ("op", "aten::mm", 80, 30, 4), ("launch", "cudaLaunchKernel", 90, 4, 102),
        ("kernel", "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", 95, 40, 102),
    )
    assert launched_by(trace) == [
        ("vectorized_elementwise_kernel<FillFunctor>", "aten::fill_"),
        ("relu_kernel", None),
        ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", "aten::mm"),
    ]


def test_a_kernel_whose_launch_is_missing_has_no_op():
    trace = _trace(("op", "aten::mm", 0, 30, 4), ("kernel", "gemm", 5, 10, 999))
    assert launched_by(trace) == [("gemm", None)]


def test_refusal_names_torch_doing_the_work():
    kernels = [("relu_kernel", None), ("sm90_xmma_gemm_f32f32", "aten::mm")]
    why = refusal(kernels, {"relu_kernel"}, set(ALLOWED_ATEN_OPS))
    assert why is not None and "aten::mm ran sm90_xmma_gemm_f32f32" in why
    assert refusal(kernels, {"relu_kernel"}, set(ALLOWED_ATEN_OPS) | {"mm"}) is None


def test_refusal_allows_copies_and_fills_beside_own_kernels():
    kernels = [("vectorized_elementwise_kernel<FillFunctor>", "aten::fill_"),
               ("direct_copy_kernel_cuda", "aten::copy_"), ("relu_kernel", None)]
    assert refusal(kernels, {"relu_kernel"}, set(ALLOWED_ATEN_OPS)) is None


def test_refusal_of_a_stray_library_kernel_and_of_no_own_kernel():
    stray = refusal([("relu_kernel", None), ("ampere_sgemm_128x64_nn", None)], {"relu_kernel"},
                    set(ALLOWED_ATEN_OPS))
    assert stray is not None and "ampere_sgemm_128x64_nn" in stray
    none_own = refusal([("direct_copy_kernel_cuda", "aten::copy_")], {"relu_kernel"},
                       set(ALLOWED_ATEN_OPS))
    assert none_own is not None and "none of the kernels" in none_own


def test_own_names_from_triton_and_cuda_source():
    source = '''
import triton
import triton.language as tl

@triton.autotune(configs=[], key=["n"])
@triton.jit
def scaled_kernel(x_ptr, n):
    pass

@triton.jit(do_not_specialize=["n"])
def other_kernel(x_ptr, n):
    pass

def body(x_ptr):
    pass

late_kernel = triton.jit(body)

cuda_src = """
__global__ void relu_fwd(const float* x, float* y, long n) {}
template <typename T> __global__ void __launch_bounds__(256) scale_fwd(T* y) {}
"""
'''
    assert own_kernel_names(source) >= {"scaled_kernel", "other_kernel", "body", "relu_fwd",
                                        "scale_fwd"}


def test_own_kernel_name_forms_and_no_prefix_claims():
    assert is_own("relu_kernel", {"relu_kernel"})
    assert is_own("void relu_fwd<float>(float*, long)", {"relu_fwd"})
    assert is_own("relu_fwd(float const*, float*, long)", {"relu_fwd"})
    assert is_own("_Z8relu_fwdPKfPfl", {"relu_fwd"})
    # a function named like the start of a library kernel does not claim it
    assert not is_own("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", {"sm90"})
    assert not is_own("relu_kernel_fast", {"relu_kernel"})
