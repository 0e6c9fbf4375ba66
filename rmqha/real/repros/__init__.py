"""The reproductions of the kit's findings on real RocketMQ, one module per finding (or family).

Importing this package registers every reproduction in ``rmqha.real.repro.REPROS``; ``rmqha real repro`` lists
and runs them. A new module is added to the import list below.
"""

from ..repro import REPROS
from . import (
    confirm_offset,  # noqa: F401
    dledger_validation,  # noqa: F401
    epoch_entry,  # noqa: F401
    epoch_restart,  # noqa: F401
    ha_epoch,  # noqa: F401
    local_shrink,  # noqa: F401
    proposal_after_restart,  # noqa: F401
    proposal_restart,  # noqa: F401
    slave_follows,  # noqa: F401
    slave_sync,  # noqa: F401
    sss_proposals,  # noqa: F401
    truncated_tail,  # noqa: F401  (registers)
)

__all__ = ["REPROS"]
