"""Reference implementation of RocketMQ 5.1.1+ controller mode, sans-IO (see docs/)."""
