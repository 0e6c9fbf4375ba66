"""Executable state-machine model at the level of the TLA+ spec (see spec/)."""
