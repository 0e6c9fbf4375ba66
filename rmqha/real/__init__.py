"""``rmqha real``: real RocketMQ (from Maven Central) under the kit: start, fault, observe, check.

``maven`` resolves the jars and compiles the Java tool; ``spec`` is a run's layout and properties; ``netns`` the
network namespaces every node runs in; ``supervisor`` the process that owns the JVMs; ``proxy`` and ``remoting``
the protocol-aware proxy in front of every listener; ``files`` the parsers of the real on-disk files; ``check``
the verdict against the catalogue, ``report`` the run's outputs, ``conform`` its controller log against the model;
``lab``, ``repro`` and ``repros`` the reproductions of the findings. The subcommands are ``rmqha/cli/real.py``.
"""
