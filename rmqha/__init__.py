"""rmqha: a verification kit for Apache RocketMQ 5 controller-mode high availability.

Layers (each a subpackage mapped from a top-level folder): ``rmqha.impl`` (reference implementation and
deterministic simulator), ``rmqha.models`` (executable model), ``rmqha.spark_fuzz`` (campaigns). The
invariant catalogue is ``rmqha.impl.catalogue``; the trace format is ``rmqha.impl.trace``.
"""

__version__ = "0.1.0"
