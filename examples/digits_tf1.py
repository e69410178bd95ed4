"""Train the digits CNN with the TF1-shaped static API (the same as ``python -m rustgrad digits --mode static``).

The program is ``rustgrad/_digits_tf1.py``, which the package installs so that the demo entry can run it:
``python examples/digits_tf1.py --epochs 20 --checkpoint-dir ckpt --logdir logs``.
Needs ``pip install 'rustgrad[examples]'`` (and ``rustgrad[tensorboard]`` for ``--logdir``).
"""

import sys

from rustgrad._digits_tf1 import main

if __name__ == "__main__":
    sys.exit(main())
