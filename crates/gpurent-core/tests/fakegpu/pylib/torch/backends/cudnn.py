import os


def version():
    if not os.environ.get("FAKE_TORCH_CUDA"):
        return None
    return int(os.environ.get("FAKE_TORCH_CUDNN") or 90100)
