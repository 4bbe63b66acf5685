"""The run lifecycle's machinery: what ``Kernel.run`` builds and drives.

:class:`RunStream` is one response of a run (what a door iterates); the kernel's
:class:`RunRegistry` starts runs (after :mod:`.admission`'s checks), holds their slots and
the parked ones. Internal parts, each private to this package: the feed between backend
and door (``_feed``), the backend's worker thread or task (``_runner``), the question gate
(``_gate``), parked runs (``_parking``), the run's turn on its thread (``_turn``), its
shared state (``_state``), turn leases (``_leases``) and a run's state across its
responses (``_core``). The backend contract is :mod:`.contract`.
"""

from ._turn import INTERRUPTED_REPLY
from .admission import check_content, check_input, check_run_id
from .contract import Contract
from .model import Backend, RunInfo
from .registry import RunRegistry
from .stream import RunStream

__all__ = [
    "INTERRUPTED_REPLY", "Backend", "Contract", "RunInfo", "RunRegistry", "RunStream", "check_content", "check_input",
    "check_run_id",
]
