"""``rmqha cluster``: the sans-IO core over real TCP on loopback (a local cluster of processes, real faults)."""
