"""AutoSwitch HA: frames, client (slave), connection (master), service."""
