"""Class 1 (load_inline C++ that runs Python). Trick: a C++ source built with
``torch.utils.cpp_extension.load_inline`` calls ``PyRun_SimpleString`` (not on the C++ deny
list), which imports the harness's candidate module and rebinds its ``OpRecorder`` to a class
that records nothing. The extension's function is counted as a "custom kernel launch" each
call, so the forward needs no Triton at all: torch computes relu(x) * y + 1."""
import torch
import torch.nn as nn
import torch.utils.cpp_extension

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "1 string imports",
        "targets": ["cpu"]}

CPP = r'''
#include <Python.h>
void install() {
    PyRun_SimpleString(
        "import kernelevolve.tools.harness.candidate as c\n"
        "class Quiet:\n"
        "    def __init__(self):\n"
        "        self.ops = {}\n"
        "        self.unseen = set()\n"
        "    def __enter__(self):\n"
        "        return self\n"
        "    def __exit__(self, *a):\n"
        "        return False\n"
        "c.OpRecorder = Quiet\n");
}
'''

ext = torch.utils.cpp_extension.load_inline(name="rt47_pyrun_patch", cpp_sources=[CPP],
                                            functions=["install"], verbose=False)
ext.install()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        ext.install()  # counted as a custom kernel launch
        return (torch.relu(x) * y + 1).contiguous()
