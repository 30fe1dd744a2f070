"""Class 4 (the interpreter is not the GPU). Trick: no Triton at all: a ``load_inline`` C++
function (plain host loops over ``data_ptr<float>()``, nothing on the C++ deny list) does the
work. Every call of an extension function counts as a "custom kernel launch", and on the cpu
target host code reading CPU tensors is indistinguishable from a kernel; on a GPU the same code
would dereference device pointers on the host. Nothing is compiled for the GPU either (the
GPU-compile stage only sees Triton launches)."""
import torch
import torch.nn as nn
import torch.utils.cpp_extension

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "4 interpreter != GPU",
        "targets": ["cpu"]}

CPP = r'''
#include <torch/extension.h>
void relu_mul_add(torch::Tensor x, torch::Tensor y, torch::Tensor out) {
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) {
        float r = a[i] > 0.0f ? a[i] : (a[i] != a[i] ? a[i] : 0.0f);
        o[i] = r * b[i] + 1.0f;
    }
}
'''

ext = torch.utils.cpp_extension.load_inline(name="rt47_host_loop", cpp_sources=[CPP],
                                            functions=["relu_mul_add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        ext.relu_mul_add(x, y, out)
        return out
