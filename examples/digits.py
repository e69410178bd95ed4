"""Train a small CNN on scikit-learn's handwritten digits (the same as ``python -m rustgrad digits``).

The program is ``rustgrad/_digits.py``, which the package installs so that the demo entry can run it:
``python examples/digits.py --epochs 20 --plot digits.png``. Needs ``pip install 'rustgrad[examples]'``.
"""

import sys

from rustgrad._digits import main

if __name__ == "__main__":
    sys.exit(main())
