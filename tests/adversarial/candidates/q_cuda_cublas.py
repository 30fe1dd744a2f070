"""Trick (q): a CUDA C++ load_inline candidate whose "kernel" calls cublasSgemm."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cublas_v2.h>

__global__ void bias_relu_kernel(float* out, const float* b, int M, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M * N) { float v = out[i] + b[i % N]; out[i] = v > 0.f ? v : 0.f; }
}

torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    int M = x.size(0), K = x.size(1), N = w.size(0);
    auto out = torch::empty({M, N}, x.options());
    cublasHandle_t handle;
    cublasCreate(&handle);
    float alpha = 1.f, beta = 0.f;
    cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, w.data_ptr<float>(), K,
                x.data_ptr<float>(), K, &beta, out.data_ptr<float>(), N);
    bias_relu_kernel<<<(M * N + 255) / 256, 256>>>(out.data_ptr<float>(), b.data_ptr<float>(), M, N);
    return out;
}
"""
cpp_src = "torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

_ext = load_inline(name="linear_relu_cublas", cpp_sources=cpp_src, cuda_sources=cuda_src,
                   functions=["linear_relu"], extra_ldflags=["-lcublas"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return _ext.linear_relu(x, self.linear.weight, self.linear.bias)
