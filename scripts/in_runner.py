# SPDX-License-Identifier: MIT
"""A benchmark that needs a hardware KVM (Debian's stock kernel does not run
on kvm_pvm) runs itself again inside tests/nested/lull-nested, a standard
KVM under QEMU's emulation, where this host has none: its own command line
plus `--nested never --out OUT --_inner`, under flock on
/tmp/lull-nested.lock (one emulated machine at a time), OUT writable
there. bench/latency/cyclictest.py and bench/hostile/hostile.py do so.
"""

import argparse
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "tests", "nested", "lull-nested")
LOCK = "/tmp/lull-nested.lock"


def rerun_inside(script, argv, out, mem, timeout, log):
    """Runs `script argv` inside the runner as above; returns its exit
    status and the command, one shell-quoted string."""
    inner = [sys.executable, os.path.abspath(script)] + \
        [a for a in argv if a != "--_inner"] + ["--nested", "never", "--out", out, "--_inner"]
    cmd = ["flock", LOCK, RUNNER, "--timeout", str(int(timeout)), "--mem", mem,
           "--writable", out, "--"] + inner
    line = " ".join(shlex.quote(a) for a in cmd)
    log("no hardware KVM here: running inside the nested runner (a standard KVM "
        "under QEMU's emulation):")
    log("  " + line)
    t0 = time.monotonic()
    rc = subprocess.call(cmd)
    log(f"the nested run took {time.monotonic() - t0:.0f} s (exit status {rc})")
    return rc, line


def add_options(ap, runner_mem):
    """--nested, --runner-mem and the inner run's hidden --_inner."""
    ap.add_argument("--nested", choices=("auto", "always", "never"), default="auto",
                    help="inside tests/nested/lull-nested: auto = where /dev/kvm is missing "
                         "or has no hardware virtualization (kvm_pvm)")
    ap.add_argument("--runner-mem", default=runner_mem, metavar="SIZE",
                    help=f"the nested runner's RAM (default {runner_mem})")
    ap.add_argument("--_inner", action="store_true", help=argparse.SUPPRESS)
