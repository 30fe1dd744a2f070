"""benchmarks/probes/ptxas_report.py's reading of a kernel's SASS: where its spills lie against the
main loop (the span a backward branch after the last tensor-core instruction closes). On sm_90
the TMA convolution GEMM spills 1-4 KB, all of it in its NaN fallback and epilogue, none in the
loop (``benchmarks/results/ptxas_conv_tma_sm90.md``); a spill moved into the loop must show."""

from __future__ import annotations

from tests.benchmark_script import load

# nvdisasm's shape, cut from the TMA kernel's SASS: a prologue spill, the loop (its label, a
# barrier wait's forward branch, the products, the backward branch), a fallback spill
SASS = """
        /*00a0*/                   STL [R1+0x10], R4 ;
        /*23a0*/              @!P1 BRA `(.L_x_7) ;
.L_x_12:
        /*27c0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR8+0x20040], R24 ;
        /*2810*/              @!P1 BRA `(.L_x_8) ;
.L_x_39:
        /*2820*/                   LDSM.16.M88.4 R88, [R166+UR7+0x18000] ;
        /*2ab0*/                   WARPGROUP.ARRIVE ;
        /*2ad0*/                   HGMMA.64x128x16.F32 R24, R104, gdesc[UR4], RZ, !UPT ;
        /*2b00*/                   HGMMA.64x128x16.F32 R24, R116, gdesc[UR32], R24, gsb0 ;
        /*2b10*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*3650*/                   FADD R4, R86, R4 ;
LOOP_SPILL
        /*3b80*/               @P1 BRA `(.L_x_12) ;
.L_x_7:
        /*4000*/                   LDL R5, [R1+0x10] ;
"""


def test_spills_outside_the_loop_are_told_apart_from_spills_in_it():
    read = load("probes/ptxas_report").spills_in_main_loop
    outside = read(SASS.replace("LOOP_SPILL\n", ""))
    assert "2 spill instructions, 0 in the main loop" in outside, outside
    inside = read(SASS.replace("LOOP_SPILL", "        /*3660*/                   STL [R1+0x20], R6 ;"))
    assert "3 spill instructions, 1 in the main loop" in inside, inside
    assert "2 tensor-core instructions" in inside


def test_no_loop_or_no_products_is_said():
    read = load("probes/ptxas_report").spills_in_main_loop
    assert "no loop" in read(SASS.replace("@P1 BRA `(.L_x_12)", "@P1 BRA `(.L_x_7)"))
    assert "no tensor-core instructions" in read("        /*00a0*/   STL [R1+0x10], R4 ;\n")
