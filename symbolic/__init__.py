"""Inductive checks of the controller with z3 (``rmqha prove``, docs/proofs.md).

Modules, in the order a proof uses them:

* ``state``: the symbolic controller state of one broker set, the state invariants and the strengthening.
* ``transitions``: one step (validate + apply) of each controller operation, mirroring ``impl/controller``.
* ``properties``: the obligations (catalogue ids and strengthening) and their documented exceptions.
* ``prover``: the z3 queries; verdicts proved / CTI / documented exception, with concrete witnesses.
* ``concrete``: witnesses as ids, epochs, sets and liveness.
* ``replay``: a witness replayed on the executable model and on the implementation.
* ``report``: the table and the text of ``rmqha prove``.
"""
