"""The convolution template: standard, transposed, grouped, depthwise and pointwise convolutions
in 1-3 dims, and chains of them (a depthwise-separable block), each by one of five kernels.

Every convolution is computed as 3-D (a 1-D or 2-D one is viewed with size-1 leading spatial
dims). A transposed convolution is split by the stride's phases (output positions
``phase + stride * j`` per dim): each phase is a standard convolution with stride 1 over the part
of the window that reaches it, written into a strided view of the output, so no tap is spent on
the positions the stride skips.

- Implicit GEMM (the general case): [output positions M = N*OD*OH*OW] x [input channels of a
  group * kernel volume = K] x [output channels of a group]. A program owns a BLOCK_M x BLOCK_N
  output tile and walks K in BLOCK_K slices, gathering the input tile from the implicit im2col
  matrix with masks for the padding and accumulating with ``tl.dot`` in fp32. Its BLOCK_M
  positions are whole runs of BLOCK_W columns of output rows (BLOCK_W a power of two, at most
  the row's length rounded up), so the compiler sees them contiguous in the output and stores
  the tile coalesced. Two ways to walk K (``CHANNELS_LAST``):
  - channels-last (the default from 16 input channels per group): x is copied channels-last
    once per call (a view where it already is), k walks the taps and within a tap a slice of
    channels, which lie next to each other: the x tile's loads are contiguous along K, as
    TF32 products read it, and no table is read.
  - the window table (x as it is): k = (input channel, taps); a per-k table (input offset,
    window offsets, weight offset) is written by a small kernel first, so the loop does no
    index decoding. A tile's loads gather. With 3 input channels (an image's first layer) it
    packs K densely, where a channels-last slice would be 13 zeros of 16.
- FMA (a short reduction: at most MAX_FMA_K input channels per group x window taps; by
  default where every implicit GEMM has at most FMA_MAX_C = 8 channels per group): the
  implicit GEMMs' position x channel tiles, the GEMM replaced by outer products on the FMA
  units. A program walks the (input channel, window row) pairs with the row's taps unrolled,
  loading per tap one input value per position and one weight per output channel. Exact fp32
  products, no split pass, no im2col tile through shared memory: with 3 channels a 16-wide k
  slice of tensor-core work was mostly padding and the table's gathers dominated. On an H200
  through the judge (``kernelbench_l1_h200``): 59 0.35x -> 0.97x of eager, 54 0.60x -> 0.86x,
  50 0.78x -> 0.94x (1.00x of compile), 60 1.12x -> 1.46x, 66 1.13x -> 1.58x, and the
  8-channel transposed 72 0.82x -> 1.85x, 75 2.39x -> 3.44x. Tiles with fewer positions than
  threads ran 7-80x slower (``feasible`` rules them out). Also the default where every
  reduction is at most FMA_DEFAULT_K = 32 long (KernelBench 81: 32 channels x 1 tap a phase).
  A transposed convolution some of whose stride phases no tap reaches (81's stride 5 with
  dilation 2: 16 of 25 phases zero) takes every phase in one launch: the kernel works out each
  phase's taps, and a program computes its tile of j in every phase one after another, so its
  strided stores fill whole memory sectors while they are in L2 (a launch per phase wrote part
  of every sector each pass). On an H200 (``conv_fma_phases*.md``): 81 1.96 ms against the
  GEMM's 2.62, 75 1.32 against 1.6 a phase at a time; 72 (taps in every phase) 1.75 against
  1.26, so such ones keep a launch per phase. Level 2's fused chains take it on the same terms
  (``fma_space``).
- The FMA kernel leaves out its per-tap bounds (``IN_BOUNDS``, set by the launcher) where the
  convolution is standard and unpadded, so every tap of a valid position lies inside x: on an
  H200 54 2.09 -> 2.01 ms, 59 2.62 -> 2.60 (``conv_fma_in_bounds.md``).
- The FMA kernel's weights for a standard convolution (``W_BCAST``, the default there): the
  launcher copies them output-channels-innermost, padded to whole channel tiles, and the
  kernel loads each tap's as the tile's [BLOCK_M, BLOCK_N] broadcast, unmasked. The compiler
  then gives a thread 16 positions x 4 channels, the 4 weights one vector load, where reading
  them in place gave a thread one position x 64 channels, each weight broadcast from shared
  memory (L1-bound: 78% on 54). On an H200 through the judge 54 0.92x -> 1.05x of cuDNN, 59
  1.04x -> 1.08x, 60 and 66 (which it takes from the im2col GEMM) 1.98x -> 2.17x and 2.21x;
  level 2's own-convolution chains 1.49-2.35x -> 1.56-2.47x, 7 0.92x -> 1.11x
  (``conv_fma_w_bcast*.md``).
- The FMA kernel's register tile (``SUB_M``; a transposed convolution's, where the weights are
  read in place): 0, a thread one position x the tile's channels; else SUB_M threads over
  positions x the rest over channels, a thread the outer product of its positions' inputs and
  its channels' weights per tap. On by default (128 x 64, SUB_M=8) where some convolution is
  transposed and every one has at least 8 input channels per group: 72 1.93x -> 2.02x of
  eager (``conv_fma_sub_m*.md``). ``MAXNREG`` caps its registers a thread (tuned, off by
  default: ``conv_fma_maxnreg.md``).
- Output rows (``OUT_ROWS``; a transposed convolution whose whole window's reduction is at most
  MAX_FMA_K): on the FMA units in output order. A program owns 16 groups of (the stride along
  w, to a power of two) neighbouring columns of one output row x a tile of output channels,
  held as [channels, phase r, q] for column stride * q + r: a row's (kd, kh) taps are fixed,
  so those that miss it cost nothing, each phase's taps along w read x contiguous along q, and
  the stores are whole runs of each channel's row. The default where the phases' one FMA
  launch was (empty phases): on an H200 (``conv_out_rows.md``) 81 1.21 ms against 1.96 (eager
  1.25), 75 1.03 against 1.33. Where every phase has taps the GEMMs' tensor cores win (64, 71,
  74, 79: 1.7-9x), so there it is a choice of the search. Level 2's chains do not take it.
- im2col (``IM2COL``; a standard convolution with one group): the im2col matrix [positions,
  input channels x taps] written once by a pass of its own (rows padded to a multiple of
  BLOCK_K, zeros at the padding), then a plain GEMM by the K-major weight with tf32x3
  products. Its loads are dense tiles the compiler pipelines, where the implicit GEMM's gather
  and the FMA kernel's per-tap loads bound them; the price is writing and reading the matrix.
  By default with at most FMA_MAX_C input channels and a reduction of at least IM2COL_MIN_K =
  320: on an H200 through the judge (``kernelbench_l1_h200``) 50 (3 x 11 x 11) 0.94x -> 1.50x
  of eager, 60 and 66 (3 x 3 x 5 x 7) 1.46x -> 1.98x and 1.58x -> 1.98x with 256; with 81 taps
  (54, 59) the FMA kernel stayed faster (``conv_im2col.md``), and since its broadcast weights
  (W_BCAST) it takes 60 and 66 too (2.17x and 2.21x). A matrix past IM2COL_MAX_BYTES (or a
  quarter of the device's free memory) takes the other kernels.
- Pointwise (1x1, stride 1, no padding): a plain GEMM per image and group,
  out[n] [C_out, P] = w [C_out, C_in] @ x[n] [C_in, P] over the P = OD*OH*OW positions, which
  are contiguous in x and out: the x tile is loaded along them (coalesced), where the implicit
  GEMM's offsets prove no contiguity and load it channel-fastest. The output-channel tiles of a
  position tile run next to each other, so x comes from memory about once. KernelBench 87
  (16 x 64 -> 128 channels, 1024^2): 4.3 GB read + 8.6 GB written = 3.1 ms at 4.15 TB/s, and
  275 GFLOP = 4.1 ms at the H200's 67 TFLOP/s of fp32 FMA: with ieee products it is
  compute-bound, with tf32x3 (about 1.7 ms of tensor-core work) memory-bound.
- Direct depthwise (one input channel per group, K = the window's taps): a program owns a
  BLOCK_H x BLOCK_W tile of one output channel's rows (od, oh) x columns (ow) in one image,
  lanes along ow reading neighbouring inputs, with the window unrolled (``tl.static_range``),
  each weight tap loaded once per program and the overlapping windows served from L1/L2. Such a
  convolution does 2 FLOP per tap and output against 8 bytes an output moved (fp32): 0.75
  FLOP/byte at 3x3, memory-bound by far. A transposed phase's taps are linear in the tap index
  too (input j + off + t * step, weight tap first + t * step'), so it takes the same kernel.
  The earlier depthwise kernel tiled [positions, channels] and, proving no contiguity along
  the positions, laid the channels fastest, each warp load spread over many channel planes: at
  its default 64 channels a tile it ran KernelBench 84 in 166 ms and 82 in 42 ms on an H200
  (0.01 of the memory roofline; 84 at 16 channels: 6.3 ms), so 82's reported 0.20 came from
  the search leaving that default and 84's 0.01 from a budget that ended at it. The direct
  kernel at its default ran 84 in 5.8-5.9 ms (0.36 of the roofline; eager 9.9 ms).

fp32 products: as in the matmul template, ``TF32X3`` (fp32 convolutions with a GEMM) picks
``input_precision="tf32x3"`` for the GEMMs' ``tl.dot`` (1: three TF32 tensor-core products of
each tile split in registers, fp32-level error), split once (2, the implicit GEMMs: x, or its
channels-last copy, and the K-major weight copy written as TF32 high parts and remainders in the
same layout by ``tf32.py``'s passes, the GEMM summing three plain TF32 products of loaded tiles;
an infinity or NaN in either sets a flag and the products run on the FMA units, as inf * 0 would
be NaN) or ``"ieee"`` (0, FMA units). Split once is the default through the window table, where
it measured faster (``tf32x3_default``; fp32 convolutions with fewer than TABLE_MAX_C input
channels per group take the table for it); over a channels-last copy the second gathered tile
and the passes cost more than it saved. fp16/bf16 convolutions keep their ieee dot of upcast
tiles; the depthwise kernel has no dot. The interpreter computes every precision exactly, so
the parameter runs on every device and only a GPU tells them apart.

One TF32 product (``TF32X3 = 4``, in the space and the default only through ``with_tf32``):
where the caller allows TF32 precision because the timed baseline computes in it (torch runs
fp32 convolutions through cuDNN in TF32: ``torch.backends.cudnn.allow_tf32`` is True by
default), the GEMMs' ``tl.dot`` takes ``input_precision="tf32"``, one tensor-core product of
the operands rounded to TF32 (10 mantissa bits: TF32-level error, as cuDNN's), nothing split
and no flag: with no remainder taken, an infinity or NaN gives what the FMA units' sum would.
The TMA GEMM (``TMA = 1``) then issues one such product a k step, of the x box and the weight
copy as they are, summed on the tensor cores across K as cuDNN's TF32 path does (``TMA`` 2
and 3 keep fp16x3). Not yet timed on a GPU.

TMA (``TMA``, the default for fp32 plans with a channels-last implicit GEMM): where a launch has
stride 1 (a standard convolution without a stride; every transposed convolution's phases), its
tap's channels are whole slices of at least 16 and the rows of x and of the weight copy are
multiples of 16 bytes, on sm_90 (or the interpreter), ``conv_gemm_tma_kernel`` takes it. A
program's BH x BW output positions (at most TMA_MAX_BW columns where the output has more than
one row) read each tap's x tile as a box of a TMA descriptor over channels-last x, shifted by the
tap: the copy engine does the addressing, a box past an edge reads zeros (the padding), and the
tiles land in shared memory while earlier steps' products run. The weight is split once into
TF32 parts; x's high part is its bits cut in registers (an exact TF32 value, the remainder
exact too); each k step's three TF32 products are summed on the tensor cores from zero and added
to the result in fp32 (summed across the whole K on the tensor cores, their truncating adds gave
25x tf32x3's error: ``offline_variants_h200/conv_bf16x3.md``). An infinity or NaN in x makes
its remainder NaN, so a program whose sum holds a NaN (or whose weight split set the flag) sums
again on the FMA units. Measured on an H200 (``conv_tma.md``, at the default tile, against the
pointer kernel): 1.15-1.40x faster on 56, 57, 62, 63, 65 and 80, 0.99-1.07x on 10 more; 67
(1-D) 0.89x there and 1.11x at 128 positions with 8 warps, left to the search. Through the
judge: 57 1.82x -> 2.92x of eager, 62 2.30x -> 3.13x, 80 2.25x -> 3.17x, 65 1.05x -> 1.55x,
69 0.53x -> 0.56x. Its pipeline takes as many stages as fit 144 KB of shared memory (up to 4):
three for the 64 x 128 tile, where four (156 KB) ran 69 1.32x slower (judged: 69 0.56x ->
0.76x, 56 3.16x -> 4.19x), four for the 64 x 64 one, where three ran 77 1.7x slower
(``conv_tma_stages.md``).

fp16x3 (``TMA = 2``; searched only with ``search.fp16x3``, not the default: below): the same
kernel with both operands split once into fp16 parts, x's made once per convolution beside its
channels-last copy. Each is first scaled by the power of two that takes its largest finite
magnitude into [2^14, 2^15) (``absmax_kernel``, one pass), so no part overflows fp16 and values
down to about 2^-18 of that magnitude keep all their bits (below, fp16's subnormals leave a step
of 2^-39 of it); p0 is the nearest fp16 and p1 the remainder's, x * 2^e = p0 + p1 to 2^-22. A k
step's three fp16 products (p1*q0 + p0*q1 + p0*q0) keep tf32x3's error at twice TF32's
tensor-core rate, with half the weight tiles' shared memory; the scales come off in the
epilogue. An infinity or NaN in either operand sets the flag and every
program sums the parts on the FMA units (an infinity's p1 is 0). Not yet timed on a GPU; the
three products cost 1.5 TF32 products' tensor-core time. ``TMA = 3`` sums the k steps' products
on the tensor cores in ranges of at most TMA_CHAIN_K (1024) before each fp32 add, as the matmul
template's chains do: Triton then carries the sum across steps, so a step's last products
overlap the next step's loads (the compiled loop, sm_90: one wait fewer a step and no fp32
adds in it), at the cost of the tensor cores' truncating adds over a range.

What fp16x3 gives up (``test_offline_conv_fp16x3_redteam.py``, a red team's 33 cases): the
scale is the whole tensor's, so values below about 2^-18 of its largest keep fewer bits, down to
a step of 2^-39 of it. Where an output's inputs all lie some 1e8 below the tensor's largest
value (an outlier in a channel the weights ignore, in a border a transposed convolution crops,
one image or group of the batch 2^30 above another), that step misses the fp32 tolerance, where
the TF32 products (each element split on its own exponent) pass. So the search tries it only
where the user asks (``search.fp16x3``: ``KERNELEVOLVE_SEARCH__FP16X3=1``), and no GPU has timed
it yet; scales per image and group for x and per output channel for the weight would close the
batch and group cases, not the ignored outliers. Both products also fail crafted exact
cancellations (the dropped lo * lo, 2^-22 of each product, of one sign in every term).

The channels-last copy is one Triton pass (``channels_last_kernel``: a tile read along the
positions, written along the channels), split or not: torch's permuted copy took 7.7 ms of
KernelBench 76's 17.7 on an H200, this one 4.5.

Tile layouts of the implicit GEMM. Triton transposes only 16-bit wgmma operands, so for fp32 it stores both tiles
K-major in shared memory and transposes a register tile held the other way on its way there (the
layout that made 3xTF32 slower than FMA for matmuls). A loaded tile's register order follows the
contiguity the compiler proves of its pointers; where it proves none, the last dim is fastest.

- x_tile [BLOCK_M, BLOCK_K] is M-major in memory: in x [N, C, D, H, W] neighbouring output
  positions read neighbouring inputs (stride st_w), while k steps by the dilation inside a window
  row and by rows and channel planes beyond it. Its offsets come from a division of offs_m and
  from the table, so nothing is proven and K is fastest: K-major in registers, as the dot wants,
  at the price of poorly coalesced loads.
- w_tile [BLOCK_K, BLOCK_N] is K-major in memory for a standard convolution (its weight
  [C_out, C_in / groups, *kernel] holds each output channel's K = (input channel, tap) as one
  contiguous row), not for a transposed one ([C_in, C_out / groups, *kernel]). Either way its
  offsets come from the table, so N is fastest. So with TF32X3 the launcher copies the weight of
  each GEMM launch (a transposed phase's taps only) into a dense [C_out, K] matrix in the table's
  k order (a view of a contiguous standard weight; else one pass over the small weights) and the
  kernel reads it at w + row * K + k (``W_KMAJOR``): contiguous along K, so K-major in registers
  too. Unlike the matmul template's copy this one is made on every device: it selects other
  addressing in the kernel, which the interpreter must verify too.

Measured on an H200 at KernelBench's sizes (``benchmarks/results/offline_variants_h200/``,
``conv_channels_last.md`` and ``conv_row_tiles.md``): flat position tiles stored each output
channel's values apart, and the table's gather loads were slow: 0.2-0.5x of cuDNN on most level-1
convolutions. Channels-last with BLOCK_K = 32 (64 ran 1.7-2.4x slower) took 55, 57, 61, 64 and 67
past eager; row tiles and the 64 x 128 x 32 tile then took 54 (3 channels, the table) from 17.7
to 7.8 ms. The 3-channel convolutions (50, 54, 59, 60, 66) stayed at 0.3-0.6x of cuDNN: a tap's
run of 3 channels filled 3 of a 16-wide k slice, and the table's gathered loads were slow. With
runs along whole window rows (``CHANNELS_LAST=2``: a row's taps along w are adjacent in a
channels-last x, so a 3x3 row of 3 channels is one run of 9) and 128 x 64 x 16 tiles
(``conv_row_runs.md``): 54 0.50x of cuDNN, 60 0.97x, 66 0.98x, 50 0.53x through the judge; 59's
window is one column wide (no run to gain) and stays on the table at 0.33x.

A transposed convolution with a stride along w may write each stride phase contiguous into a
phase-major buffer, one pass interleaving them into the output (``PHASE_MAJOR``), where each
phase's strided stores fill part of every memory sector a pass. Measured on an H200
(``conv_phase_major.md``): 72 2.3 ms against 3.0 with the GEMM, but 81 4.0 against 2.6, 77 1.6
against 1.4, 73 2.5 against 2.2: the extra pass costs more than the partial sectors did, so it
is a choice of the search, off by default.

Position tiles of short rows: a power-of-two run of OW columns pads the rest (KernelBench 59's
rows of 10 filled 10 of 16 lanes; 69's 260 columns 5 runs of 64 with the last 4 wide), so where
that padding passes FLAT_MIN_PAD of the run and the (oh, ow) plane lies evenly spaced in the
output, the GEMMs tile the plane as one row (``FLAT_HW``; 69: 10.8 -> 9.1 ms).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import torch

from kernelevolve.problem import Problem

from ...emit.source import module_source
from ...frontend import fxgraph
from ...frontend.ir import ConvShape
from ...frontend.lower import args_of, op_name
from ...frontend.trace import Traced
from ...plan import KernelPlan, Unsupported
from .source import KERNELS, LAUNCHER, MAX_FMA_K

# The GEMMs' tiles (implicit and pointwise): positions x output channels x reduction
SPACE = {"BLOCK_M": (32, 64, 128), "BLOCK_N": (16, 32, 64, 128), "BLOCK_K": (16, 32, 64),
         "num_warps": (2, 4, 8)}
# On an H200 (benchmarks/results/offline_variants_h200/conv_channels_last.md) 64 x 128 x 32
# with 4 warps was the best or within 10% of it on 7 of 8 KernelBench convolutions with 16 or
# more input channels; BLOCK_K = 64 ran them 1.7-2.4x slower.
DEFAULTS = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4}
# A 1x1 convolution's GEMM: a position tile meets up to 128 output channels, so x is read once
# where there are no more (KernelBench's pointwise 87 has 128). On an H200 at 87 (tf32x3):
# 64 positions x 128 channels with 4 warps 7.7 ms, 128 x 128 with 8 warps 10.9 ms.
POINTWISE_DEFAULTS = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4}
# The depthwise kernel's tile of output rows x columns (see _direct_tile for its default)
DIRECT_SPACE = {"BLOCK_H": (1, 2, 4, 8, 16, 32), "BLOCK_W": (32, 64, 128, 256, 512),
                "num_warps": (2, 4, 8)}
# fp32 products of the GEMMs: 1 tf32x3 tensor-core products (each tile split in the kernel),
# 2 the same of operands split once before the implicit GEMMs (tf32.py), 0 ieee FMA
TF32X3_SPACE = {"TF32X3": (1, 0, 2)}
# ... and one plain TF32 product: TF32-level error, as cuDNN's default for fp32 convolutions, so
# in the space (and the default) only where the caller allows TF32 (``with_tf32``)
ONE_TF32 = 4
# The channels-last implicit GEMM with tf32x3 products and stride 1 through TMA (1: x tiles as
# boxes of a descriptor, the weight split once, each k step's three TF32 products added in fp32;
# 2: the same with fp16x3 products of x and the weight split once into scaled fp16 parts; 3:
# fp16x3 with the k steps' products summed on the tensor cores in ranges of TMA_CHAIN_K).
# fp16x3 is searched only where asked (``search.fp16x3``): its scale is the whole tensor's
TMA_SPACE = {"TMA": (0, 1, 2, 3)}
TMA_OPT_IN: dict[str, tuple[int, ...]] = {"TMA": (2, 3)}
# The implicit GEMM's input: 1 a channels-last copy (k = tap, then channel: contiguous loads),
# 2 the same with k running along whole window rows (a row's taps along w, their channels
# adjacent), 0 x as it is through the window table (k = channel, then tap)
CHANNELS_LAST_SPACE = {"CHANNELS_LAST": (1, 0, 2)}
# Channels-last by default where every implicit GEMM has at least this many input channels per
# group: a k slice is one tap's channels, at least 16 wide for tl.dot, so fewer waste the
# products on zeros (KernelBench's 3-channel convolutions). Those take runs along window rows
# where a row's taps lie adjacent in x, else the table, which packs the taps.
CHANNELS_LAST_MIN_C = 16
# The tiles of a convolution with fewer input channels: on an H200 (benchmarks/results/
# offline_variants_h200/conv_row_runs.md) 128 positions x 64 channels with 16-wide k slices
# took KernelBench 54 from 7.8 ms to 3.7, 60 from 20.1 to 10.3, 66 from 9.3 to 5.0 and 50 from
# 7.9 to 5.1 (runs along rows; 128 x 64 x 32 through the table: 59 from 10.5 to 8.1).
NARROW_DEFAULTS = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4}
# fp32 convolutions with fewer input channels per group than this read x through the table
# with split once, not along window rows. On an H200 (offline_variants_h200/
# conv_split_once_narrow.md, then the judge): with 3 channels KernelBench 50 ran 3.5 ms against
# the runs' 5.1, 54 3.1 against 3.7, 60 8.8 against 10.2, 66 4.3 against 4.9; with 8 (level
# 2's 7, 57, 69, 71, 87, fused chains) 1.4-2.1x slower than the runs.
TABLE_MAX_C = 8
# The implicit GEMMs whose reduction (input channels per group x window taps) is at most
# MAX_FMA_K may run on the FMA units instead, a window row's taps unrolled (conv_fma_kernel)
FMA_SPACE = {"FMA": (0, 1)}
# ... by default where every one has at most this many input channels per group. On an H200
# (offline_variants_h200/conv_fma.md, conv_fma_50.md, conv_phase_major.md; 128 x 64 tiles):
# with 3 channels KernelBench 59 ran 3.0 ms against the table's 7.7, 54 2.4 against 3.1, 60
# 6.7 against 8.8, 66 3.5 against 4.3, 50 3.3 against 3.5; transposed with 8, 72 1.1 against
# 2.3 and 75 1.6 against 2.4; with 32, 77 1.5 against 1.6, 79 6.6 against 1.7 and 81 3.0
# against 2.6 (a launch per phase; in one launch, conv_fma_phases.md: 79 2.7, 81 2.0). Level
# 2's 8-channel chains 7, 57, 69, 71, 87: 1-6% faster than the GEMM (level2_conv_fma.md)
FMA_MAX_C = 8
# ... or where every one's reduction is at most this long, one k slice of the GEMM's tile: on an
# H200 (conv_fma_phases.md) 81's 32 channels x 1 tap a phase ran 1.96 ms against the GEMM's 2.62;
# 79's 32 x 3 2.66 against 1.71
FMA_DEFAULT_K = 32
# ... and its default tile: 64 positions x 64 channels with 2 warps ran 50, 54, 59, 60, 66 and
# 72 5-12% faster than 128 x 64 with 4 warps (75 4% slower; conv_fma_warps.md)
FMA_DEFAULTS = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 2, "SUB_M": 0, "MAXNREG": 0,
                "W_BCAST": 0}
# ... and where some is transposed (the standard ones take W_BCAST, below) and every one has
# at least this many input channels per group, a register tile of 8 x 8 threads over 128
# positions x 64 channels with 2 warps (a thread 16 positions x 8 channels). On an H200
# (offline_variants_h200/conv_fma_sub_m*.md) the transposed 72 ran 1.20 ms against 1.26, level
# 2's 8-channel standard chains 57, 69, 71 1.02-1.04 against 1.24-1.26 (W_BCAST now 0.98-1.00);
# with 3 channels no tile helped (54 9-36% slower, level 2's 48 1-21%, 59 within 2%).
FMA_TILE_MIN_C = 8
FMA_TILE_DEFAULTS = {"BLOCK_M": 128, "SUB_M": 8}
# The FMA kernel's register tile: SUB_M threads over positions x the rest over channels, a
# thread a sub-tile of both (SUB_M; conv_fma_kernel), or a thread a position x the tile's
# channels (0)
SUB_M_SPACE = {"SUB_M": (0, 8, 16, 32)}
# ... and the most registers a thread of it may take (0: as the compiler allocates): fewer for
# more warps a scheduler. On an H200 (offline_variants_h200/conv_fma_maxnreg.md) 90 ran 9.8 ms at
# 64 x 64 with 128 against 10.5 without (eager 10.0), 7 6.7 with 128 against 7.5, 59 2.27 at
# 128 positions, SUB_M=8 and 168 against the default's 2.59; 48 and 57 ran slower with any
# limit, 54 2% faster: tuned, off by default
MAXNREG_SPACE = {"MAXNREG": (0, 96, 128, 168)}
# ... and, for a standard convolution, its weights copied output-channels-innermost and padded
# to whole channel tiles, each tap's loaded unmasked as the tile's broadcast (1: W_BCAST in
# conv_fma_kernel), or read in place (0). The compiler then gives a thread 16 positions x 4
# channels of a 64 x 64 tile, the 4 weights one vector load (a loop step: 12 shared loads
# against 48, 317 instructions against 359 for the same 192 FMAs; sm_90 code compiled on the
# CPU). The default where no convolution of the chain is transposed: on an H200
# (offline_variants_h200/conv_fma_w_bcast*.md) 54 1.76 ms against 2.02 (cuDNN 1.85), 59 2.50
# against 2.60, level 2's 48 1.62 against 1.68, 57 and 69 0.98 against 1.02 (SUB_M=8), 71 1.00
# against 1.04, 87 4.45 against 4.64, 7 6.20 against 7.50, 90 10.0 against 11.6
W_BCAST_SPACE = {"W_BCAST": (0, 1)}
# A standard convolution with one group may write its im2col matrix once and multiply it by the
# weight in a plain GEMM on the tensor cores (1), or take the implicit GEMM or FMA kernel (0)
IM2COL_SPACE = {"IM2COL": (0, 1)}
# ... by default where every implicit GEMM is such a one, with at most FMA_MAX_C input channels
# and a reduction of at least IM2COL_MIN_K. On an H200 (offline_variants_h200/conv_im2col.md):
# KernelBench 50 (3 x 11 x 11 taps) 1.8 ms against the FMA kernel's 3.3 (eager 2.7), 60 and 66
# (3 x 3 x 5 x 7) 5.0 against 6.8 and 2.5 against 3.2; with 3 x 27 taps (54, 59) it ran 54 in
# 2.3 ms against 2.1 and 59 in 3.7 against 2.6, the matrix's traffic outweighing the products
IM2COL_MIN_K = 320
# (256 until the FMA kernel's W_BCAST: with it 60 and 66's 315 ran 4.56 and 2.21 ms on the FMA
# units against the im2col GEMM's 5.02 and 2.47; 50's 363 ran 1.94 against 1.81,
# offline_variants_h200/conv_fma_w_bcast_im2col.md)
# ... with this tile, its products tf32x3 in the kernel: split once ran 50, 60 and 66 1.3-1.7x
# slower (the second matrix written and read), 128 x 64 with 4 warps within 3%
IM2COL_DEFAULTS = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "TF32X3": 1}
# A transposed convolution with a stride along its last dim writes each stride phase
# contiguous into a phase-major buffer and interleaves them in one pass (1), or into strided
# views of the output (0)
PHASE_MAJOR_SPACE = {"PHASE_MAJOR": (1, 0)}
# A transposed convolution whose reduction (input channels per group x the whole window) is at
# most MAX_FMA_K runs on the FMA units in output order, a program BLOCK_M columns of one output
# row x BLOCK_N output channels (1), or by stride phases (0)
OUT_ROWS_SPACE = {"OUT_ROWS": (0, 1)}
# ... on by default where every convolution is such a one with an implicit GEMM on the FMA
# units by default and some stride phase no tap reaches (where the phases' one FMA launch was
# the default; 79's GEMM, 1.71 ms, stays: the rows kernel ran it in 2.84), a tile 16 groups of
# the stride along w's next power of two columns (64-128) x 32 channels. On an H200
# (offline_variants_h200/conv_out_rows.md) KernelBench 81 (stride 5, tile 128 x 32, 4 warps)
# ran 1.21 ms against the phases' 1.96 (eager 1.25) and 75 (stride 3, 64 x 32, 2 warps) 1.03
# against 1.33; where every phase has taps (64, 71, 74, 79) it ran 1.7-6x slower than the GEMM
OUT_ROWS_GROUPS = 16

_HOW = {"depthwise": "direct", "pointwise": "a GEMM over channels", "gemm": "an implicit GEMM"}


def _direct_tile(num_warps: int) -> dict[str, int]:
    """The depthwise kernel's default tile: few, long rows. On an H200 at KernelBench 84 (3x3,
    510 columns) 1 x 256 with 2 warps ran 5.8 ms and 2 x 512 with 4 warps 5.9, against 8.2 for
    4 x 256, 11.8 for 8 x 128 and 17.6 for 16 x 128 with 8 warps: each row costs a thread its
    own index decoding, masks and weight loads per tap."""
    return {"BLOCK_H": max(1, num_warps // 2), "BLOCK_W": min(512, 128 * num_warps)}


def feasible(params: Mapping[str, int]) -> str | None:
    """Why the convolution kernels' tiles in ``params`` cannot run well, or None."""
    threads = 32 * params["num_warps"]
    if "BLOCK_H" in params and params["BLOCK_H"] * params["BLOCK_W"] // threads > 64:
        return (f"a {params['BLOCK_H']}x{params['BLOCK_W']} depthwise tile is more than 64 "
                f"outputs per thread")
    if "BLOCK_M" not in params:
        return None
    tile = params["BLOCK_M"] * (params["BLOCK_N"] + params["BLOCK_K"])
    if params["BLOCK_M"] * params["BLOCK_N"] // threads > 128:
        return (f"a {params['BLOCK_M']}x{params['BLOCK_N']} accumulator is more than 128 "
                f"registers per thread")
    if tile * 4 * 2 > 160 * 1024:
        return "the tiles exceed shared memory"
    if params.get("FMA") and not params.get("IM2COL") and params["BLOCK_M"] < threads:
        # on an H200 (offline_variants_h200/conv_fma_tiles.md) such tiles ran KernelBench 50,
        # 54 and 59 7-80x slower than 128 positions with 4 warps
        return (f"the FMA kernel's {params['BLOCK_M']} positions are fewer than its "
                f"{threads} threads")
    sub_m = params.get("SUB_M", 0)
    if sub_m and (threads % sub_m or sub_m > params["BLOCK_M"]
                  or threads // sub_m > params["BLOCK_N"]):
        return (f"SUB_M={sub_m} threads over positions do not fit a {params['BLOCK_M']}x"
                f"{params['BLOCK_N']} tile of {threads} threads")
    return None


def conv_constants(params: Mapping[str, int], tf32x3: bool, implicit: bool) -> dict[str, int]:
    """The launch constants the convolution launcher reads, from ``params`` and the defaults:
    every kernel's tile is set, since at other sizes a convolution may take another kernel."""
    full = {**DEFAULTS, **_direct_tile(params["num_warps"]), **params}
    consts = {key: full[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "BLOCK_H", "BLOCK_W")}
    consts["NUM_WARPS"] = params["num_warps"]
    if tf32x3:
        consts["TF32X3"] = params["TF32X3"]
    if implicit:
        consts["CHANNELS_LAST"] = params["CHANNELS_LAST"]
    for key in ("FMA", "PHASE_MAJOR", "IM2COL", "OUT_ROWS", "TMA"):
        if key in params:
            consts[key] = params[key]
    consts["SUB_M"] = params.get("SUB_M", 0)
    consts["MAXNREG"] = params.get("MAXNREG", 0)
    consts["W_BCAST"] = params.get("W_BCAST", 0)
    return consts


def x_layout(c_in_g: int, groups: int, transposed: bool, dil_w: int, k_w: int) -> int:
    """The CHANNELS_LAST an implicit-GEMM convolution runs best with: 1 (a tap's channels a k
    run) from CHANNELS_LAST_MIN_C input channels per group; fewer: 2 (runs along window rows)
    where a window row's taps lie adjacent in a channels-last x (one group, no dilation along
    w, a row of more than one tap; a transposed one's phases step its taps backwards), else 0
    (the table). (fp32 ones with fewer than TABLE_MAX_C channels take the table instead:
    ``plan``.)"""
    if c_in_g >= CHANNELS_LAST_MIN_C:
        return 1
    return 2 if groups == 1 and not transposed and dil_w == 1 and k_w > 1 else 0


def gemm_defaults(layouts: list[int]) -> dict[str, int]:
    """The implicit GEMMs' default tiles and CHANNELS_LAST for convolutions preferring
    ``layouts`` (``x_layout``; one value serves them all): channels-last where all take it,
    runs along rows where all narrow ones can, else the table; the narrow tiles where any is
    narrow."""
    layout = 1 if set(layouts) <= {1} else 2 if set(layouts) <= {1, 2} else 0
    if layout == 1:
        return {**DEFAULTS, "CHANNELS_LAST": 1}
    return {**NARROW_DEFAULTS, "BLOCK_K": 16 if layout == 2 else 32, "CHANNELS_LAST": layout}


def gemm_space(layouts: list[int], fp32: bool) -> tuple[dict[str, tuple[int, ...]],
                                                         dict[str, int]]:
    """The implicit GEMM's tunable parameters and defaults, for convolutions preferring
    ``layouts`` (``x_layout``)."""
    space: dict[str, tuple[int, ...]] = {**SPACE, **CHANNELS_LAST_SPACE}
    defaults = gemm_defaults(layouts)
    if fp32:
        space.update(TF32X3_SPACE)
        defaults["TF32X3"] = tf32x3_default(defaults["CHANNELS_LAST"])
    return space, defaults


def tf32x3_default(layout: int) -> int:
    """The fp32 implicit GEMMs' default TF32X3 for the input layout ``layout``: split once (2)
    through the window table, where on an H200 it ran KernelBench 59 in 7.5 ms against
    tf32x3's 8.2 and 72 in 2.9 against 3.4; tf32x3 (1) over a channels-last copy, where split
    once's second gather and its passes cost more than they saved (55 14.3 ms against 10.6, 69
    11.6 against 8.8, 76 23.5 against 14.6; ``offline_variants_h200/conv_split_once.md``)."""
    return 2 if layout == 0 else 1


def conv_shape(c_in_g: int, groups: int, transposed: bool, kernel: Sequence[int],
               stride: Sequence[int], padding: Sequence[int],
               dilation: Sequence[int]) -> ConvShape:
    """What chooses a convolution's kernel and defaults, at the traced sizes (the
    hyper-parameters as the trace gives them: ints or int-likes, one per dim)."""
    kernel, stride, padding, dilation = ([int(v) for v in t]
                                         for t in (kernel, stride, padding, dilation))
    pointwise = (not transposed and all(k == 1 for k in kernel)
                 and all(v == 1 for v in stride) and all(v == 0 for v in padding))
    kind = "depthwise" if c_in_g == 1 else "pointwise" if pointwise else "gemm"
    # a transposed convolution's phase reaches every (stride / gcd(stride, dilation))-th tap
    # of a dim's window
    k = c_in_g * math.prod(-(-t // (s // math.gcd(s, d) if transposed else 1))
                           for t, s, d in zip(kernel, stride, dilation, strict=True))
    layout = x_layout(c_in_g, groups, transposed, dilation[-1], kernel[-1])
    return ConvShape(kind, layout, c_in_g, k, dense=not transposed and groups == 1,
                     transposed=transposed)


def empty_phases(kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                 dilation: Sequence[int]) -> bool:
    """Whether some stride phase of a transposed convolution (output positions r + stride * j
    along a dim) is reached by no tap of the window."""
    return any(all((r + int(p) - t * int(d)) % int(s) for t in range(int(k)))
               for k, s, p, d in zip(kernel, stride, padding, dilation, strict=True)
               for r in range(int(s)))


def out_rows_tile(stride_w: int) -> dict[str, int]:
    """OUT_ROWS's default tile for a stride along w of ``stride_w``: OUT_ROWS_GROUPS groups of
    its next power of two columns (64-128 in all) x 32 channels, a warp per 32 x 32 outputs."""
    block_m = min(128, max(64, OUT_ROWS_GROUPS * 2 ** math.ceil(math.log2(stride_w))))
    return {"BLOCK_M": block_m, "BLOCK_N": 32, "num_warps": block_m // 32}


def fma_call(shape: ConvShape) -> bool:
    """Whether ``conv_nd`` takes ``fma=FMA`` for this convolution: an implicit GEMM whose
    reduction the FMA kernel can take (the plan then tunes FMA: ``fma_space``)."""
    return shape.kind == "gemm" and shape.k <= MAX_FMA_K


def im2col_space(shapes: list[ConvShape], fp32: bool) -> tuple[dict[str, tuple[int, ...]],
                                                               dict[str, int]]:
    """IM2COL's space and defaults for a convolution chain's implicit GEMMs: tuned where some
    is standard with one group; on (with IM2COL_DEFAULTS' tile) where every one is, with at most
    FMA_MAX_C input channels and a reduction of at least IM2COL_MIN_K."""
    gemms = [c for c in shapes if c.kind == "gemm"]
    if not any(c.dense for c in gemms):
        return {}, {}
    if all(c.dense and c.c_in_g <= FMA_MAX_C and c.k >= IM2COL_MIN_K for c in gemms):
        tile = dict(IM2COL_DEFAULTS)
        if not fp32:
            del tile["TF32X3"]
        return dict(IM2COL_SPACE), {"IM2COL": 1, **tile}
    return dict(IM2COL_SPACE), {"IM2COL": 0}


def fma_space(shapes: list[ConvShape]) -> tuple[dict[str, tuple[int, ...]], dict[str, int]]:
    """FMA's space and defaults (with its register tile SUB_M, register limit MAXNREG and
    broadcast weights W_BCAST) for a chain's convolutions: tuned where some implicit GEMM's
    reduction is at most MAX_FMA_K; on (with FMA_DEFAULTS' tile) where every implicit GEMM has
    at most FMA_MAX_C input channels per group and such a reduction, or a reduction of at most
    FMA_DEFAULT_K; then with W_BCAST where none is transposed, else with FMA_TILE_DEFAULTS'
    register tile where each has at least FMA_TILE_MIN_C input channels per group."""
    gemms = [c for c in shapes if c.kind == "gemm"]
    if not any(fma_call(c) for c in gemms):
        return {}, {}
    space = {**FMA_SPACE, **SUB_M_SPACE, **MAXNREG_SPACE, **W_BCAST_SPACE}
    if (all(c.c_in_g <= FMA_MAX_C and fma_call(c) for c in gemms)
            or all(c.k <= FMA_DEFAULT_K for c in gemms)):
        if not any(c.transposed for c in gemms):
            tile = {"W_BCAST": 1}
        elif all(c.c_in_g >= FMA_TILE_MIN_C for c in gemms):
            tile = FMA_TILE_DEFAULTS
        else:
            tile = {}
        return space, {"FMA": 1, **FMA_DEFAULTS, **tile}
    return space, {"FMA": 0, **{k: FMA_DEFAULTS[k] for k in ("SUB_M", "MAXNREG", "W_BCAST")}}


_CONV_MODULES = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose1d,
                 torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)


@dataclass
class _Conv:
    """One convolution of the chain: what it reads and the launcher call's arguments."""

    source: str  # the forward expression it convolves, or "" for the previous result
    call_args: list[str]
    name: str
    shape: ConvShape
    phased: bool  # transposed with a stride along the last dim
    rows: bool  # transposed, its whole window's reduction at most MAX_FMA_K (OUT_ROWS)
    empty: bool  # transposed, some stride phase reached by no tap
    stride_w: int


@dataclass
class ConvTemplate:
    problem: Problem
    traced: Traced
    convs: list[_Conv]
    description: str
    tf32x3: bool  # the plan tunes TF32X3 (fp32, and some convolution has a GEMM)
    implicit: bool  # the plan tunes CHANNELS_LAST (some convolution is an implicit GEMM)

    def feasible(self, params: Mapping[str, int]) -> str | None:
        return feasible(params)

    def render(self, params: Mapping[str, int]) -> str:
        body: list[str] = []
        prev = ""
        for k, conv in enumerate(self.convs):
            src = conv.source or prev
            args = (conv.call_args + (["tf32x3=TF32X3"] if self.tf32x3 else [])
                    + (["channels_last=CHANNELS_LAST"] if self.implicit else [])
                    + (["fma=FMA"] if "FMA" in params else [])
                    + (["phase_major=PHASE_MAJOR"] if "PHASE_MAJOR" in params else [])
                    + (["im2col=IM2COL"] if "IM2COL" in params else [])
                    + (["out_rows=OUT_ROWS"] if "OUT_ROWS" in params else [])
                    + (["tma=TMA"] if "TMA" in params else []))
            call = f"conv_nd({src}, {', '.join(args)})"
            if k == len(self.convs) - 1:
                body.append(f"return {call}")
            else:
                prev = f"y{k}"
                body.append(f"{prev} = {call}")
        # Every kernel's tile is set: at other sizes a convolution may take another kernel
        # (its channels per group reach 1, say); those outside the plan keep their defaults.
        consts = conv_constants(params, self.tf32x3, self.implicit)
        return module_source(self.problem, self.description, consts, [KERNELS], [LAUNCHER],
                             self.traced.forward_args, body)


def _conv_of(traced: Traced, node: torch.fx.Node) -> tuple[_Conv, torch.fx.Node | None]:
    """The chain entry for convolution ``node`` and the convolution it reads, if any."""
    x = fxgraph.strip(node.args[0])
    w = fxgraph.strip(node.args[1])
    b = node.args[2] if len(node.args) > 2 else None
    w_expr = fxgraph.input_expr(traced, w)
    if w_expr is None:
        raise Unsupported("a convolution by a computed weight, which no template covers")
    b_expr = "None" if b is None else fxgraph.input_expr(traced, fxgraph.strip(b))
    if b_expr is None:
        raise Unsupported("a convolution with a computed bias, which no template covers")
    stride, padding, dilation, transposed, out_padding, groups = args_of(node)[3:9]
    w_shape = fxgraph.shape(w)
    nd = len(w_shape) - 2
    name = f"conv_transpose{nd}d" if transposed else f"conv{nd}d"
    c_in_g = w_shape[0] // int(groups) if transposed else w_shape[1]
    shape = conv_shape(c_in_g, int(groups), bool(transposed), w_shape[2:], stride, padding,
                       dilation)
    phased = bool(transposed) and int(stride[-1]) > 1
    rows = bool(transposed) and c_in_g * math.prod(int(k) for k in w_shape[2:]) <= MAX_FMA_K
    empty = bool(transposed) and empty_phases(w_shape[2:], stride, padding, dilation)
    more = (rows, empty, int(stride[-1]))
    module, m = fxgraph.module_of(traced, w_expr, _CONV_MODULES)
    if module is not None:
        if getattr(m, "padding_mode", "zeros") != "zeros":
            raise Unsupported(f"a {name} with padding_mode={m.padding_mode!r}, which no template "
                              f"covers")
        args = [w_expr, f"{module}.bias", f"{module}.stride", f"{module}.padding",
                f"{module}.dilation", f"{module}.groups", str(bool(transposed)),
                f"{module}.output_padding" if transposed else "0"]
    else:
        args = [w_expr, b_expr, str(list(stride)), str(list(padding)), str(list(dilation)),
                str(int(groups)), str(bool(transposed)), str(list(out_padding))]
    if isinstance(x, torch.fx.Node) and x.op == "call_function" and op_name(x) == "convolution":
        return _Conv("", args, name, shape, phased, *more), x
    x_expr = fxgraph.input_expr(traced, x)
    if x_expr is None:
        raise Unsupported(f"a {name} of a computed tensor, which no template covers")
    return _Conv(x_expr, args, name, shape, phased, *more), None


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is a convolution or a chain of them, else None."""
    ops = fxgraph.op_names(traced)
    if "convolution" not in ops:
        return None
    if ops - fxgraph.PASS_THROUGH - {"convolution"}:
        return None  # a convolution inside a larger operator: the DAG lowering decides
    fxgraph.float_inputs_only(traced)
    node = fxgraph.strip(fxgraph.output(traced))
    if not (isinstance(node, torch.fx.Node) and op_name(node) == "convolution"):
        return None
    out_shape, out_dtype = fxgraph.shape(node), fxgraph.dtype(node)
    chain: list[_Conv] = []
    current: torch.fx.Node | None = node
    while current is not None:
        conv, current = _conv_of(traced, current)
        chain.insert(0, conv)
    if fxgraph.shape(fxgraph.output(traced)) != out_shape:
        raise Unsupported("a view of a convolution's result, which no template covers")
    names = " then ".join(c.name for c in chain)
    hows = ", then ".join(_HOW[c.shape.kind] for c in chain)
    desc = (f"{names} ({hows}), giving a [{', '.join(map(str, out_shape))}] "
            f"{fxgraph.describe_dtype(out_dtype)} tensor")
    kinds = {c.shape.kind for c in chain}
    tf32x3 = out_dtype == torch.float32 and bool(kinds & {"gemm", "pointwise"})
    space: dict[str, tuple[int, ...]] = {}
    defaults: dict[str, int] = {}
    implicit = "gemm" in kinds
    if implicit:
        space.update(SPACE)
        space.update(CHANNELS_LAST_SPACE)
        gemms = [c.shape for c in chain if c.shape.kind == "gemm"]
        defaults.update(gemm_defaults([c.layout for c in gemms]))
        if (tf32x3 and defaults["CHANNELS_LAST"] == 2
                and all(c.c_in_g < TABLE_MAX_C for c in gemms if c.layout != 1)):
            # fp32 with few channels: the table with split once (its 16-wide k slices kept,
            # as measured); level 2's fused chains keep the runs (not measured there)
            defaults["CHANNELS_LAST"] = 0
        fma, fma_defaults = fma_space(gemms)
        space.update(fma)
        defaults.update(fma_defaults)
        im2col, im2col_defaults = im2col_space(gemms, tf32x3)
        space.update(im2col)
        defaults.update(im2col_defaults)
    elif "pointwise" in kinds:
        space.update(SPACE)
        defaults.update(POINTWISE_DEFAULTS)
    if tf32x3:
        # split once serves the implicit GEMMs (the pointwise GEMM splits in its kernel)
        space["TF32X3"] = TF32X3_SPACE["TF32X3"] if implicit else (1, 0)
        defaults.setdefault("TF32X3", tf32x3_default(defaults["CHANNELS_LAST"]) if implicit
                            else 1)
    if tf32x3 and implicit and any(c.shape.kind == "gemm" and c.shape.layout == 1
                                   for c in chain):
        space.update(TMA_SPACE)
        defaults["TMA"] = 1
    if any(c.phased for c in chain):
        space.update(PHASE_MAJOR_SPACE)
        defaults["PHASE_MAJOR"] = 0
    if any(c.rows for c in chain):
        space.update(OUT_ROWS_SPACE)
        defaults["OUT_ROWS"] = 0
        if defaults.get("FMA") == 1 and all(c.rows and c.empty and c.shape.kind == "gemm"
                                            for c in chain):
            defaults.update(OUT_ROWS=1, SUB_M=0,
                            **out_rows_tile(max(c.stride_w for c in chain)))
    if "depthwise" in kinds:
        space.update(DIRECT_SPACE)
        defaults.setdefault("num_warps", 2)
        defaults.update(_direct_tile(defaults["num_warps"]))
    return KernelPlan("convolution", desc, space, defaults,
                      ConvTemplate(problem, traced, chain, desc, tf32x3, implicit),
                      opt_in=TMA_OPT_IN if "TMA" in space else {})


def with_tf32(plan: KernelPlan) -> KernelPlan:
    """``plan`` with one plain TF32 product (``TF32X3 = ONE_TF32``) in its space and as its
    default, for a caller allowed to compute fp32 convolutions at TF32 precision: where the
    timed baseline does (torch runs them through cuDNN in TF32 while
    ``torch.backends.cudnn.allow_tf32`` is True, its default). The GEMMs' products are then
    one TF32 product each; where the plan takes the TMA GEMM (``TMA = 1``), its k steps too.
    The other TF32X3 values stay in the space. A plan without TF32X3 (16-bit or depthwise-only
    convolutions; not a convolution plan: the matmul template's TF32X3 is its own) comes back
    as it is. Without this call nothing changes; with it, ``plan.searched(opt_in)`` still
    decides fp16x3 (``TMA`` 2, 3) alone, in either order."""
    if plan.operator_class != "convolution" or "TF32X3" not in plan.space:
        return plan
    values = tuple(dict.fromkeys((*plan.space["TF32X3"], ONE_TF32)))
    return replace(plan, space={**plan.space, "TF32X3": values},
                   defaults={**plan.defaults, "TF32X3": ONE_TF32})
