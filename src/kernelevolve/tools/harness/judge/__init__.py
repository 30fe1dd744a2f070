"""The judge: one candidate against one problem, stage by stage (``worker.Evaluation`` composes
them; worker.py keeps the process around it).

- ``state``: the evaluation's shared state and what the worker keeps between jobs;
- ``inputs``: problem instances (built, perturbed) and input sets, here and in the candidate's
  process;
- ``running``: one forward on each side, the candidate's judged by the runtime rules;
- ``precision``: the comparison, the float64 truth and the precision contract;
- ``correctness``: the input sets, other shapes, real sizes, autotune turns, many calls;
- ``variants``: input values ``get_inputs()`` never draws, NaN and infinities;
- ``compiles``: the interpreter targets' kernels compiled for a GPU;
- ``timing``: timing on a GPU and the checks on what the candidate reports; ``simulated``: the
  MTIA simulator's;
- ``memory``: whether an evaluation fits the GPU, and what it held; ``locks``: one GPU shared by
  several workers;
- ``reply``: the verdict and the reply sent back to the worker.
"""
