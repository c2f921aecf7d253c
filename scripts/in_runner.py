# SPDX-License-Identifier: MIT
"""A benchmark that needs a hardware KVM (Debian's stock kernel does not run
on kvm_pvm) runs itself again inside tests/nested/lull-nested, a standard
KVM under QEMU's emulation, where this host has none: its own command line
plus `--nested never --out OUT --_inner`, under flock on
/tmp/lull-nested.lock (one emulated machine at a time), OUT writable
there. bench/latency/cyclictest.py and bench/hostile/hostile.py do so.

Their runner boots with tsc=reliable unless told --runner-tsc held. Linux's
boot-time TSC sync check fails between two CPUs that QEMU emulates one after
the other on one thread, although both read the one host clock (a process
moved between them at every call saw its CLOCK_MONOTONIC never go back, 4,000
moves): it then runs on the HPET, where every clock read is a system call
and KVM holds the guest TSC while a vCPU is out, a host unlike the hardware
users run, which taxes each exit to user space (a VMM without KVM's APIC)
far more than in-kernel work. tsc=reliable gives the host users have: its TSC as
clocksource, KVM's master clock, the guest TSC at an offset.
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


def rerun_inside(script, argv, out, mem, timeout, log, tsc="stable"):
    """Runs `script argv` inside the runner as above; returns its exit
    status and the command, one shell-quoted string."""
    inner = [sys.executable, os.path.abspath(script)] + \
        [a for a in argv if a != "--_inner"] + ["--nested", "never", "--out", out, "--_inner"]
    tsc_arg = ["--kernel-arg", "tsc=reliable"] if tsc == "stable" else []
    cmd = ["flock", LOCK, RUNNER, "--timeout", str(int(timeout)), "--mem", mem,
           "--writable", out] + tsc_arg + ["--"] + inner
    line = " ".join(shlex.quote(a) for a in cmd)
    log("no hardware KVM here: running inside the nested runner (a standard KVM "
        "under QEMU's emulation):")
    log("  " + line)
    t0 = time.monotonic()
    rc = subprocess.call(cmd)
    log(f"the nested run took {time.monotonic() - t0:.0f} s (exit status {rc})")
    return rc, line


def host_clocksource():
    """This host's clocksource (tsc, hpet, ...), for a benchmark's results."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return None


def add_options(ap, runner_mem):
    """--nested, --runner-mem and the inner run's hidden --_inner."""
    ap.add_argument("--nested", choices=("auto", "always", "never"), default="auto",
                    help="inside tests/nested/lull-nested: auto = where /dev/kvm is missing "
                         "or has no hardware virtualization (kvm_pvm)")
    ap.add_argument("--runner-mem", default=runner_mem, metavar="SIZE",
                    help=f"the nested runner's RAM (default {runner_mem})")
    ap.add_argument("--runner-tsc", choices=("stable", "held"), default="stable",
                    help="the nested runner's TSC: stable = booted with tsc=reliable (its "
                         "TSC as clocksource, as on hardware; default), held = as it boots "
                         "by itself (HPET; KVM holds a vCPU's TSC while it is out)")
    ap.add_argument("--_inner", action="store_true", help=argparse.SUPPRESS)
