# gpurent GPU check (the user guides' check_gpu.py, done right). Run with the interpreter the fix
# installed into: `python - < verify.py`. Prints key=value lines parsed by wizard/verify.rs:
#   verify_version, torch, torch_cuda, available, device=INDEX|NAME|MAJOR.MINOR|TOTAL_BYTES,
#   matmul=INDEX|DTYPE|N|ITERS|SECONDS|TFLOPS, copy=INDEX|BYTES_MOVED|SECONDS|GBPS, error=...
import sys


def out(k, v):
    print("%s=%s" % (k, str(v).replace("\n", " ")))
    sys.stdout.flush()


out("verify_version", 1)
try:
    import torch
except Exception as e:
    out("error", "import torch: %s: %s" % (type(e).__name__, e))
    sys.exit(3)
out("torch", torch.__version__)
out("torch_cuda", torch.version.cuda)
ok = torch.cuda.is_available()
out("available", ok)
if not ok:
    sys.exit(4)
for i in range(torch.cuda.device_count()):
    try:
        p = torch.cuda.get_device_properties(i)
        cc = torch.cuda.get_device_capability(i)
        out("device", "%d|%s|%d.%d|%d" % (i, torch.cuda.get_device_name(i), cc[0], cc[1], p.total_memory))
        dev = torch.device("cuda", i)
        # Tensor-core matmul: bf16 from Ampere (8.0) on, fp16 before.
        dtype = torch.bfloat16 if cc >= (8, 0) else torch.float16
        n = 8192 if p.total_memory >= 8 << 30 else 4096
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        for _ in range(3):
            torch.matmul(a, b)
        torch.cuda.synchronize(dev)
        iters = 20
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize(dev)
        s = start.elapsed_time(end) / 1000.0
        out("matmul", "%d|%s|%d|%d|%.6f|%.2f" % (i, str(dtype).replace("torch.", ""), n, iters, s, 2.0 * n ** 3 * iters / s / 1e12))
        del a, b
        # Device-to-device copy: every byte is read once and written once.
        nbytes = min(1 << 30, p.total_memory // 8)
        x = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        y = torch.empty_like(x)
        y.copy_(x)
        torch.cuda.synchronize(dev)
        start.record()
        for _ in range(iters):
            y.copy_(x)
        end.record()
        torch.cuda.synchronize(dev)
        s = start.elapsed_time(end) / 1000.0
        moved = 2 * nbytes * iters
        out("copy", "%d|%d|%.6f|%.1f" % (i, moved, s, moved / s / 1e9))
        del x, y
        torch.cuda.empty_cache()
    except Exception as e:
        out("error", "gpu %d: %s: %s" % (i, type(e).__name__, e))
