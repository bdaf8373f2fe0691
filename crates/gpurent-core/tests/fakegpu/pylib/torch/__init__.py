"""Fake torch for the wizard's scenario suite: answers like the real one for the scenario's FAKE_*
variables. Availability follows the real rules unless FAKE_TORCH_AVAILABLE says otherwise: no
driver -> "Found no NVIDIA driver"; wheel CUDA major newer than the driver's -> "driver too old"."""
import os
import warnings

__version__ = os.environ.get("FAKE_TORCH_VERSION", "2.3.0+cpu")


class _Version:
    cuda = os.environ.get("FAKE_TORCH_CUDA") or None


version = _Version()

from . import backends, cuda  # noqa: E402,F401
from ._compute import Tensor, bfloat16, device, dtype, empty, empty_like, float16, matmul, randn, uint8  # noqa: E402,F401
