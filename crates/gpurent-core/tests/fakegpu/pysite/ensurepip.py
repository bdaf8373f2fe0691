"""Shadows the real ensurepip so a scenario can lack the venv module (Debian without python3-venv)."""
import os

if os.environ.get("FAKE_PY_NO_VENV"):
    raise ImportError("No module named 'ensurepip'")
