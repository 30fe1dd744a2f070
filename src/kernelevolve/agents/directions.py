"""Design directions: what each sibling expansion tries, so siblings differ.

Two short lists per operator family, as a performance engineer would draw them up:

- ``DESIGNS``: how to structure a kernel from scratch (fresh expansions of the root): the first
  fresh kernel takes the first design, the second the next one not yet taken, and so on;
- ``CHANGES``: one concrete change to a verified kernel, by its diagnosis (memory-, compute-,
  occupancy- or launch-bound; ``None``: no diagnosis), with a family's own changes first.

The Planner gives each expansion of a node the first direction of the list that no sibling
(earlier rounds, or earlier picks of this batch) has taken; the prompt names it and shows the
siblings already tried, so no two requests of a run are the same question.
"""

from __future__ import annotations

import re

from kernelevolve.graph.state import Direction

__all__ = ["CHANGES", "DESIGNS", "FAMILIES", "change_options", "design_options", "family_of",
           "pick"]

# operator class (the offline analysis's names) -> family
FAMILIES: dict[str, str] = {
    "elementwise": "elementwise", "library_epilogue": "elementwise",
    "softmax": "rows", "log_softmax": "rows", "layernorm": "rows", "rmsnorm": "rows",
    "l2norm": "rows", "rowwise": "rows", "normalization": "rows",
    "reduction": "reduction", "full_reduction": "reduction", "argreduce": "reduction",
    "loss": "reduction", "scan": "reduction",
    "matmul": "matmul", "convolution": "convolution", "pooling": "convolution",
    "attention": "attention",
}


def _d(name: str, how: str) -> Direction:
    return Direction(name=name, how=how)


_PERSISTENT = _d("persistent kernel", "launch about one program per core (SM or PE) and loop "
                 "over the work items inside it (a grid-stride loop), so per-program start-up "
                 "and the launch are paid once")

DESIGNS: dict[str, tuple[Direction, ...]] = {
    "elementwise": (
        _d("one fused pass", "one kernel over the flattened tensor: each program loads one "
           "contiguous block, applies the whole chain in fp32 registers and stores once"),
        _d("2D tiles", "keep the tensor's shape: each program owns a [BLOCK_M, BLOCK_N] tile "
           "(rows x columns, strides from the tensor), contiguous along the last dimension"),
        _PERSISTENT,
        _d("wide vectorised blocks", "few, fat programs: blocks of 4096 or more elements, "
           "several per thread, aligned contiguous loads and stores"),
    ),
    "rows": (
        _d("one row per program, one pass", "each program loads its whole row once "
           "(BLOCK_N >= the row length), computes the row's statistics in registers and "
           "writes the output: the input is read exactly once"),
        _d("online statistics over column tiles", "loop over the row in column tiles keeping "
           "running statistics (online max and sum for softmax, Welford mean and variance "
           "for norms), then write in a second loop: works for any row length"),
        _d("several rows per program", "a [ROWS, BLOCK_N] tile per program, reducing along "
           "axis 1: fewer programs, good for short rows"),
        _PERSISTENT,
        _d("split each row across programs", "for few, long rows: programs reduce chunks of "
           "a row, a second small kernel combines the partial statistics and normalises"),
    ),
    "reduction": (
        _d("one program per output, tiled loop", "each program owns one output and loops over "
           "its reduced elements in contiguous tiles, accumulating in fp32"),
        _d("several outputs per program", "a 2D tile of outputs x reduced elements per "
           "program, reducing along one axis: fewer programs, contiguous loads"),
        _d("split reduction", "programs reduce contiguous chunks into partial results, a "
           "second pass (or atomics) combines them: parallelism for long reductions"),
        _PERSISTENT,
    ),
    "matmul": (
        _d("tiled GEMM with grouped ordering", "[BLOCK_M, BLOCK_N] output tiles, a K loop of "
           "tl.dot accumulating in fp32, GROUP_M-swizzled program order for cache reuse, the "
           "epilogue fused before the store"),
        _d("tile shape for this problem", "pick tall, wide or square tiles from M, N and K, "
           "with more pipelining stages for the K loop"),
        _d("split-K", "split K across programs and combine the partial tiles (atomics or a "
           "second pass): for small M x N with a long K"),
        _d("persistent tile scheduler", "one program per core looping over output tiles in "
           "grouped order"),
    ),
    "convolution": (
        _d("implicit GEMM", "treat it as a GEMM of (N*OH*OW) x OC with K = C*KH*KW, gathering "
           "the input patches on the fly, tl.dot over K tiles"),
        _d("direct convolution with output tiles", "each program computes a tile of output "
           "pixels for a block of channels, looping over the window and input channels"),
        _d("fused epilogue", "keep the allowed library op and fuse everything after it into "
           "one pass over its output"),
        _PERSISTENT,
    ),
    "attention": (
        _d("flash attention", "one program per (batch*head, query block); loop over key/value "
           "blocks with tl.dot and an online softmax (running max and sum), never writing the "
           "score matrix"),
        _d("one program per (batch, head)", "each program keeps its head's queries and walks "
           "all keys; simple indexing, good for short sequences"),
        _d("split over keys", "programs handle key ranges of one query block and a second "
           "pass merges their partial softmax results (flash-decoding): for short query "
           "lengths"),
        _PERSISTENT,
    ),
    "general": (
        _d("one fused kernel", "the whole forward in one kernel: every input read once, every "
           "output written once, intermediates in registers"),
        _d("tiling and blocking", "choose what a program owns (a tile of the output) and loop "
           "over the rest in blocks sized to the on-chip memory"),
        _d("different parallelisation axis", "parallelise over another axis of the problem "
           "than the obvious one (rows, columns, batch, or a split of the reduced axis)"),
        _PERSISTENT,
        _d("vectorised loads", "contiguous, aligned, wide loads and stores; several elements "
           "per thread; no strided or gathered access in the inner loop"),
    ),
}

_BY_BOUND: dict[str | None, tuple[Direction, ...]] = {
    "memory-bound": (
        _d("fewer bytes moved", "read each input once and write each output once: fuse what "
           "is still a separate pass, keep intermediates in registers, drop extra copies"),
        _d("wider contiguous loads", "larger blocks with aligned, contiguous (vectorised) "
           "loads and stores; no strided or gathered access"),
        _d("different parallelisation axis", "change what one program owns (more rows per "
           "program, 2D tiles, or a split of long rows) so every load is contiguous and the "
           "cores stay evenly busy"),
        _PERSISTENT,
    ),
    "compute-bound": (
        _d("cheaper math", "fewer instructions per element: hoist constants, reuse computed "
           "values, multiply by a reciprocal instead of dividing, exp2 with a folded log2(e)"),
        _d("bigger tl.dot tiles", "matrix products on the tensor engine with larger tiles and "
           "more pipelining stages; accumulate in fp32"),
        _d("pipelining", "more num_stages and independent loads issued before their use, so "
           "math and memory overlap"),
        _d("different tile shape", "re-shape the work per program (tall, wide or square tiles) "
           "to the problem's sizes"),
    ),
    "occupancy-bound": (
        _d("smaller tiles, more programs", "smaller blocks per program so more programs run "
           "at once and hide latency"),
        _d("fewer live values", "fewer registers per program: shorter-lived intermediates, a "
           "loop instead of a wide tile"),
        _d("split the work", "split a long loop (split-K, split rows) across programs and "
           "combine the partial results"),
        _d("independent loads early", "issue the next tile's loads before the current tile's "
           "math (software pipelining) so no program waits idle"),
    ),
    "launch-bound": (
        _d("one launch", "fuse every kernel of the forward into a single launch"),
        _PERSISTENT,
        _d("no host work between launches", "no .contiguous() copies, torch ops or size "
           "computations between launches; compute everything the launch needs once"),
    ),
    None: (
        _d("block sizes and launch grid", "retune the block sizes and the grid to the "
           "problem's shapes"),
        _d("warps and stages", "change num_warps and num_stages"),
        _d("access pattern", "wider contiguous loads, fewer passes over the data"),
        _d("kernel structure", "change what the kernel fuses, its loop order, or make it a "
           "persistent kernel"),
    ),
}

# A family's own first changes for a bound (the generic ones follow).
_FAMILY_CHANGES: dict[tuple[str, str], tuple[Direction, ...]] = {
    ("rows", "memory-bound"): (
        _d("single pass with online statistics", "compute the row's statistics in the same "
           "pass that loads it (online max and sum of exp for softmax, Welford for norms) and "
           "keep the row in registers for the output: two memory passes become one"),
    ),
    ("matmul", "memory-bound"): (
        _d("grouped tile order", "GROUP_M-swizzle the program order so neighbouring programs "
           "share A and B tiles in the cache"),
    ),
    ("attention", "memory-bound"): (
        _d("never write the scores", "an online softmax over key blocks keeps the score "
           "matrix on chip (flash attention)"),
    ),
}

CHANGES = _BY_BOUND


def family_of(operator_class: str | None, problem_name: str = "",
              reference_source: str = "") -> str:
    """The family of an operator: from its class, else from the reference's words
    (attention has no offline class), else ``general``."""
    if operator_class in FAMILIES:
        return FAMILIES[operator_class]
    words = f"{problem_name} {reference_source}".lower()
    if "attention" in words or re.search(r"softmax\([^)]*\)\s*@|@\s*v\b", words):
        return "attention"
    if re.search(r"\bconv\d?d\b|\bconv_", words):
        return "convolution"
    if "matmul" in words or "gemm" in words:
        return "matmul"
    return "general"


def design_options(family: str) -> tuple[Direction, ...]:
    """How to structure a kernel from scratch, for a fresh expansion."""
    return DESIGNS.get(family, DESIGNS["general"])


def change_options(family: str, bound: str | None) -> tuple[Direction, ...]:
    """One change to a verified kernel with this diagnosis (``None``: none known)."""
    generic = _BY_BOUND.get(bound, _BY_BOUND[None])
    own = _FAMILY_CHANGES.get((family, bound or ""), ())
    return own + tuple(d for d in generic if d.name not in {o.name for o in own})


def pick(options: tuple[Direction, ...], taken: list[str]) -> Direction:
    """The first option no sibling has taken; once all are taken, they repeat in order (the
    prompt still shows what each sibling did)."""
    for option in options:
        if option.name not in taken:
            return option
    return options[len(taken) % len(options)]
