"""Fake torchrun: torch.distributed.elastic's process model without torch.

Checks the arguments gpurent passes (--standalone --nnodes=1 --nproc_per_node=N --tee 3
[--role NAME] SCRIPT ARGS...), then starts SCRIPT with this interpreter once per rank as
torch/distributed/elastic/multiprocessing/subprocess_handler does: each rank in its own session
(start_new_session=True), with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ROLE_NAME; the rest inherited), its output teed
with the prefix "[{role}{local_rank}]:" (role "default" unless --role).

On SIGTERM / SIGINT / SIGHUP the agent forwards the same signal to each rank's process group
(os.killpg), waits up to FAKE_TORCHRUN_KILL_TIMEOUT seconds (30, torchrun's `_close` timeout),
then SIGKILLs the groups still alive, and exits (like the real one, with the signal's code).
A rank that fails makes it print the ChildFailedError summary on stderr and exit 1; the other
ranks are then closed the same way.
"""
import os
import signal
import subprocess
import sys
import threading
import time

TIMEOUT = float(os.environ.get("FAKE_TORCHRUN_KILL_TIMEOUT", "30"))


def usage(msg):
    sys.stderr.write("torchrun: error: %s\n" % msg)
    sys.exit(2)


args = sys.argv[1:]
n = None
standalone = False
tee = None
role = "default"
while args and args[0].startswith("-"):
    a = args.pop(0)
    if a == "--standalone":
        standalone = True
    elif a == "--nnodes=1":
        pass
    elif a.startswith("--nproc_per_node="):
        n = int(a.split("=", 1)[1])
    elif a == "--tee" and args:
        tee = args.pop(0)
    elif a == "--role" and args:
        role = args.pop(0)
    else:
        usage("unrecognized arguments: %s" % a)
if n is None or not standalone or tee != "3" or not args:
    usage("the following arguments are required: training_script")
if not os.path.isfile(args[0]):
    sys.stderr.write("%s: No such file\n" % args[0])
    sys.exit(2)

out_lock = threading.Lock()
procs = []
for r in range(n):
    env = dict(os.environ)
    env.update(
        RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
        GROUP_RANK="0", ROLE_NAME=role, MASTER_ADDR="127.0.0.1", MASTER_PORT="29500",
        PYTHONUNBUFFERED="1", TORCHELASTIC_RUN_ID="none",
    )
    p = subprocess.Popen(
        [sys.executable] + args, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    procs.append(p)


def tee_rank(r, p):
    prefix = ("[%s%d]:" % (role, r)).encode()
    for line in iter(p.stdout.readline, b""):
        with out_lock:
            sys.stdout.buffer.write(prefix + line)
            sys.stdout.buffer.flush()


threads = [threading.Thread(target=tee_rank, args=(r, p), daemon=True) for r, p in enumerate(procs)]
for t in threads:
    t.start()


def close(sig):
    for p in procs:
        if p.poll() is None:
            sys.stderr.write("W0000 torch/distributed/elastic/multiprocessing/api.py:897] Sending process %d closing signal %s\n" % (p.pid, signal.Signals(sig).name))
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
    end = time.monotonic() + TIMEOUT
    for p in procs:
        left = end - time.monotonic()
        if left <= 0:
            break
        try:
            p.wait(left)
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.poll() is None:
            sys.stderr.write("W0000 torch/distributed/elastic/multiprocessing/api.py:915] Unable to shutdown process %d via %s, forcefully exiting via SIGKILL\n" % (p.pid, signal.Signals(sig).name))
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


class SignalException(Exception):
    def __init__(self, sig):
        self.sig = sig


def on_signal(sig, _frame):
    raise SignalException(sig)


for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, on_signal)

try:
    failed = None
    while True:
        codes = [p.poll() for p in procs]
        bad = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
        if bad:
            failed = bad[0]
            break
        if all(c == 0 for c in codes):
            break
        time.sleep(0.1)
    if failed is None:
        for t in threads:
            t.join(5)
        sys.exit(0)
    close(signal.SIGTERM)
    for t in threads:
        t.join(5)
    r, code = failed
    pid = procs[r].pid
    sys.stderr.write("""E0000 00:00:00.000000 %d torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: %d) local_rank: %d (pid: %d) of binary: %s
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 892, in main
    run(args)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
%s FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : %d (local_rank: %d)
  exitcode  : %d (pid: %d)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
""" % (os.getpid(), code, r, pid, sys.executable, args[0], r, r, code, pid))
    sys.exit(1)
except SignalException as e:
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    sys.stderr.write("W0000 torch/distributed/elastic/agent/server/api.py:704] Received %s death signal, shutting down workers\n" % signal.Signals(e.sig).name)
    close(e.sig)
    sys.exit(128 + e.sig)
