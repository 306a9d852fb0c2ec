"""`kubeledger bench`: the benchmarks run as their own program, `python -m bench`, so the pipelines package never
imports them. The dependency goes one way: bench -> pipelines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from pipelines import PROJECT_ROOT


def main(argv: list[str]) -> int:
    """Run `python -m bench <argv>` with this interpreter; its exit status is the command's."""
    # the bench package installed (or checked out) beside this pipelines package, whatever the working directory
    path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "bench", *argv], env={**os.environ, "PYTHONPATH": path})
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: proc.send_signal(signum))
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                continue  # Ctrl-C reached the benchmark too (same process group): it stops its stages and exits
    finally:
        signal.signal(signal.SIGTERM, previous)
