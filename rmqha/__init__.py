"""rmqha: a verification kit for Apache RocketMQ 5 controller-mode high availability.

Layers (``docs/architecture.md``), each a subpackage; those in a top-level folder of the repository are mapped
into this package (``pyproject.toml``): ``rmqha.impl`` (the reference implementation; ``rmqha.impl.sim`` the
deterministic simulator, ``rmqha.impl.invariants`` the invariant catalogue), ``rmqha.models`` (the executable
model, trace conformance, cross-layer replay), ``rmqha.spec`` (the TLA+ spec and TLC), ``rmqha.symbolic`` (z3),
``rmqha.spark_fuzz`` (fuzz campaigns), ``rmqha.cluster`` (the core over real TCP), ``rmqha.real`` (Apache RocketMQ
itself under the kit) and ``rmqha.cli`` (the command line). The trace format is ``rmqha.impl.trace``.
"""

__version__ = "0.1.0"
