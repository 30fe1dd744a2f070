"""The HTML report of a run: header, search tree, speedup over time, every candidate's details
(code, diff to its parent, diagnosis, prompt and reply), knowledge and the event trace, in one
self-contained file.

    from kernelevolve.report import write_report
    path = write_report("runs/20250101-120000-04_row_softmax-ab12")   # <run dir>/report.html
"""

from kernelevolve.report.html import STATUS_COLOURS, build_report, report_view, write_report
from kernelevolve.report.layout import tree_layout
from kernelevolve.report.run import RunRecord, load_run

__all__ = [
    "STATUS_COLOURS", "RunRecord", "build_report", "load_run", "report_view", "tree_layout",
    "write_report",
]
