"""Makes the real interpreter report the scenario's Python: version, executable, venv."""
import os
import sys

_v = os.environ.get("FAKE_PY_VERSION")
if _v:
    sys.version = _v + " (fake) " + sys.version.split(" ", 1)[-1]
_prefix = os.environ.get("FAKE_VENV_PREFIX")
if _prefix:
    sys.prefix = _prefix
    sys.executable = os.path.join(_prefix, "bin", "python")
elif os.environ.get("FAKE_PY_EXECUTABLE"):
    sys.executable = os.environ["FAKE_PY_EXECUTABLE"]
