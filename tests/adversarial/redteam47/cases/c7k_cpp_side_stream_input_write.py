"""Class 7 (work on another stream), CUDA C++ (the cuda target only). Trick: the C++ allowlist
refuses cudaStreamCreate, torch.cuda.Stream and friends, but a launch's stream argument is an
expression: ``(cudaStream_t)2`` is cudaStreamPerThread's handle, a stream other than the
current one (PyTorch's legacy default stream), reachable with only the allowed type name. Both
kernels run there: relu(x) * y + 1 into the output, then a kernel that spins ~2^22 dependent
FMAs per thread and adds 1 to every element of the input ``x``. If the judge's synchronisation
or timing covered the current stream only, the input write would escape the inputs-after check
(and the work the timer). Expected refused: the per-thread default stream is a blocking stream
(it synchronises with the legacy default stream), and do_forward synchronises the whole device
before the judge reads the inputs through its IPC mapping."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused",
        "class": "7 other stream", "targets": ["cuda"]}

CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_mul_add_kernel(const float* x, const float* y, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        out[i] = (v > 0.f ? v : 0.f) * y[i] + 1.f;
    }
}

__global__ void spin_then_write_kernel(float* x, long n, long spins) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    float t = 1.f;
    for (long s = 0; s < spins; ++s) {
        t = t * 0.999999f + 1e-6f;
    }
    if (i < n && t > -1e30f) {
        x[i] = x[i] + 1.f;
    }
}

torch::Tensor relu_mul_add_side(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_contiguous() && y.is_contiguous(), "contiguous inputs");
    auto out = torch::empty_like(x);
    long n = x.numel();
    cudaStream_t side = (cudaStream_t)2;
    int blocks = (int)((n + 255) / 256);
    relu_mul_add_kernel<<<blocks, 256, 0, side>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                   out.data_ptr<float>(), n);
    spin_then_write_kernel<<<blocks, 256, 0, side>>>(x.data_ptr<float>(), n, 1L << 22);
    return out;
}
"""
CPP_SRC = "torch::Tensor relu_mul_add_side(torch::Tensor x, torch::Tensor y);"

ext = load_inline(name="redteam_c7k_side_stream", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                  functions=["relu_mul_add_side"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return ext.relu_mul_add_side(x.contiguous(), y.contiguous())
