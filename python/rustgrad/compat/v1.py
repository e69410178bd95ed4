"""``import rustgrad.compat.v1 as tf`` — the TF1 API names, served by rustgrad.static."""

from rustgrad.static import *  # noqa: F401,F403
from rustgrad.static import __all__, errors, losses, nn, train  # noqa: F401
