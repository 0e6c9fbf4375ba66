"""Broker: ReplicasManager and the broker node."""
