"""Deterministic simulator of a RocketMQ controller-mode cluster (sans-IO nodes, virtual clock)."""
