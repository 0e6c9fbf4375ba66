"""Controller: ReplicasInfoManager, DefaultElectPolicy, heartbeat manager, DLedger-flavoured node."""
