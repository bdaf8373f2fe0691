import os
import warnings

from .._compute import Event  # noqa: F401


def _ver(s):
    try:
        a, b = s.split(".")[:2]
        return int(a), int(b)
    except Exception:
        return None


def _state():
    """(available, warning) following the real checks."""
    forced = os.environ.get("FAKE_TORCH_AVAILABLE", "")
    cuda = os.environ.get("FAKE_TORCH_CUDA") or None
    if cuda is None:
        return False, None
    smi = os.environ.get("FAKE_SMI", "ok")
    absent = os.environ.get("FAKE_ABSENT", "").split()
    if smi != "ok" or "nvidia-smi" in absent:
        return False, "CUDA initialization: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"
    if forced:
        return forced == "True", None
    t, d = _ver(cuda), _ver(os.environ.get("FAKE_DRIVER_CUDA", "12.4"))
    if t and d and (t[0] > d[0]):
        found = d[0] * 1000 + d[1] * 10
        return False, "CUDA initialization: The NVIDIA driver on your system is too old (found version %d). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver." % found
    return True, None


def is_available():
    ok, warn = _state()
    if warn:
        warnings.warn(warn)
    return ok


def device_count():
    return int(os.environ.get("FAKE_GPU_COUNT", "1")) if _state()[0] else 0


def _check(i):
    if not _state()[0]:
        raise RuntimeError("Found no NVIDIA driver on your system.")
    if i >= device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")


def get_device_name(i=0):
    _check(i)
    return os.environ.get("FAKE_GPU_NAME", "NVIDIA GeForce RTX 4090")


def get_device_capability(i=0):
    _check(i)
    a, b = os.environ.get("FAKE_GPU_CC", "8.9").split(".")
    return int(a), int(b)


class _Props:
    def __init__(self):
        self.total_memory = int(os.environ.get("FAKE_GPU_MEM_MIB", "24564")) * 1024 * 1024


def get_device_properties(i=0):
    _check(i)
    return _Props()


def current_device():
    _check(0)
    return 0


def get_arch_list():
    if not _state()[0]:
        return []
    return os.environ.get("FAKE_TORCH_ARCH", "").split()


def synchronize(device=None):
    _check(0)


def empty_cache():
    pass
