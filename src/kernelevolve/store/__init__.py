"""The shared data foundation: every run and candidate (code, lineage, results, profiles) in one
store, for listings (``kernelevolve runs``), inspection (``trace``, ``show``), exchange
(``export``/``import``) and warm starts (``RunStore.best_known``). Skills stay in the knowledge
base (kb/).

    with open_store(settings.store) as store:
        sync_from_state(store, session.spec, session.values(), session.run_dir)
        store.best_known(problem_digest=..., target="mtia-sim:2i", limit=3)
"""

from kernelevolve.store.models import (
    CandidateRecord,
    EventRecord,
    ExportFile,
    KnownCandidate,
    RunExport,
    RunRecord,
)
from kernelevolve.store.sqlite import SCHEMA_VERSION, RunStore, open_store
from kernelevolve.store.sync import (
    ScanReport,
    locate_run,
    read_run_dir,
    records_from_state,
    scan_runs,
    sync_from_state,
    sync_run_dir,
)

__all__ = [
    "SCHEMA_VERSION",
    "CandidateRecord",
    "EventRecord",
    "ExportFile",
    "KnownCandidate",
    "RunExport",
    "RunRecord",
    "RunStore",
    "ScanReport",
    "locate_run",
    "open_store",
    "read_run_dir",
    "records_from_state",
    "scan_runs",
    "sync_from_state",
    "sync_run_dir",
]
