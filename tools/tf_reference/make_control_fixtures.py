"""Writes ``tests/fixtures/tf1/control_dependencies.json``: the name, type and control inputs
TF1 gives each op of ``control_program.py``. Run OFFLINE with TF 2.x's ``tf.compat.v1`` in its
own virtualenv (see ``make_tf1_fixtures.py``; never a test dependency)::

    /work/venv-tfref/bin/python tools/tf_reference/make_control_fixtures.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from control_program import build  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_v2_behavior()
OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tf1" / "control_dependencies.json"


def main() -> None:
    with tf1.Graph().as_default():
        ops = build(tf1)
        record = {key: {"name": op.name, "type": op.type, "control_inputs": [c.name for c in op.control_inputs]}
                  for key, op in ops.items()}
    meta = {"tensorflow": tf.__version__, "python": sys.version.split()[0]}
    OUT.write_text(json.dumps({"versions": meta, "ops": record}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
