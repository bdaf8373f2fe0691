"""Just enough tensor API for the wizard's verify script (verify.py) to run on the fake host:
matmuls and copies are counted, not computed, and CUDA events turn the count into the time a card
doing FAKE_VERIFY_TFLOPS (dense bf16/fp16) and FAKE_VERIFY_GBPS (device copy) would take."""
import os

_work = {"flops": 0.0, "bytes": 0.0}


class dtype:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__


bfloat16 = dtype("bfloat16", 2)
float16 = dtype("float16", 2)
uint8 = dtype("uint8", 1)


class device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index


class Tensor:
    def __init__(self, shape, dt):
        self.shape, self.dtype = tuple(shape), dt

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def copy_(self, other):
        _work["bytes"] += 2.0 * other.numel() * other.dtype.itemsize
        return self


def randn(*shape, device=None, dtype=None):
    return Tensor(shape, dtype or float16)


def empty(*shape, device=None, dtype=None):
    return Tensor(shape, dtype or uint8)


def empty_like(t):
    return Tensor(t.shape, t.dtype)


def matmul(a, b):
    n, k = a.shape
    _work["flops"] += 2.0 * n * k * b.shape[1]
    return Tensor((n, b.shape[1]), a.dtype)


def _rate(name, default):
    return float(os.environ.get(name) or default)


class Event:
    def __init__(self, enable_timing=False):
        self.at = None

    def record(self):
        self.at = dict(_work)

    def elapsed_time(self, end):
        flops = end.at["flops"] - self.at["flops"]
        moved = end.at["bytes"] - self.at["bytes"]
        s = flops / (_rate("FAKE_VERIFY_TFLOPS", 100) * 1e12) + moved / (_rate("FAKE_VERIFY_GBPS", 500) * 1e9)
        return s * 1000.0
