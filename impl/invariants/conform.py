"""Conformance to the model (MODEL-CONFORM): stated here so that the catalogue lists it, checked above the core.

The core cannot run the model (``models/`` imports the simulator, not the reverse): ``rmqha.models.campaign``
validates each run of ``rmqha simulate`` and ``rmqha fuzz`` whose profile the model covers, step by step, with
``rmqha.models.conform.Validator``, and reports a step that leaves the model as this invariant's violation.
"""

from __future__ import annotations

from .context import Context
from .registry import Violated, invariant


@invariant("MODEL-CONFORM", layer="model", checked_by="models/campaign.py (models/conform.py's Validator)",
           source="the executable model of the TLA+ spec (models/controller_mode.py): ControllerElect, "
                  "ControllerAlter, Sync, Handshake, Transfer, SlaveAck, Crash, Restart and the documented "
                  "extensions (docs/conformance.md)",
           exceptions="runs the model does not cover (a fidelity part, an upstream or bug switch, a 4.x run: "
                      "models/conform.py's outside_model) and campaigns run with --no-conform")
def model_conform(ctx: Context) -> Violated | None:
    """Every step of a run is a transition of the executable model (the TLA+ spec's actions) or a stutter: the
    controller's elections and SyncStateSet changes, each broker's role, epochs, local SyncStateSet and epoch file,
    every transfer batch's epoch header, every truncation point and every expansion guard."""
    return None
