# SPDX-License-Identifier: MIT
"""Host faults for the soak: something goes wrong on the host, mid-run.

Each fault is applied to the running VMs for a while and then undone, on a
thread of its own, while the soak waits for the VMs; what it did (and when,
on the harness's clock) goes into results.json. The VMs must come through
it with every timer accounted for, as without it.

  stop      every VM stopped (SIGSTOP) and then continued: lull's threads
            do not run at all, and every timer due meanwhile is late
  fifo-hog  one SCHED_FIFO busy loop per CPU of the harness: lull's
            threads get only what the kernel keeps back from real-time
            tasks (sched_rt_runtime_us, or its fair server)
  ksm       KSM on (run=1, at the kernel's scan rate), then every merged
            page unmerged (run=2), then as it was: guest RAM shared and
            copied again under running VMs
  memcap    the VMs' memory cgroup (one the soak makes, below its own,
            before it starts them) capped at what they use at that moment:
            whatever they fault in meanwhile must first be reclaimed from
            them (lull's own text, which the kernel can read back)
"""

import os
import signal
import subprocess
import sys
import threading
import time

KINDS = ("stop", "fifo-hog", "ksm", "memcap")
KSM_RUN = "/sys/kernel/mm/ksm/run"
CGROUP = "/sys/fs/cgroup"

HOG = """
import os, sys, time
cpu, until = int(sys.argv[1]), float(sys.argv[2])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
while time.monotonic() < until:
    pass
"""


def check(kind):
    """None if this host lets the harness apply the fault, else why not."""
    if kind == "stop":
        return None
    if os.geteuid() != 0:
        return f"--fault {kind} needs root"
    if kind == "ksm" and not os.path.exists(KSM_RUN):
        return f"--fault ksm: {KSM_RUN} is missing (a kernel without KSM)"
    if kind == "memcap" and not MemoryCgroup.own():
        return "--fault memcap: no memory cgroup controller (v1 or v2) mounted here"
    return None


class MemoryCgroup:
    """A memory cgroup below the harness's own; cgroup v2 or v1."""

    @staticmethod
    def own():
        """(folder of this process's memory cgroup, v2?) or None."""
        with open("/proc/self/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
        for _, ctrls, path in lines:
            if "memory" in ctrls.split(",") and os.path.isdir(f"{CGROUP}/memory"):
                return f"{CGROUP}/memory{path}", False
        for _, ctrls, path in lines:
            if ctrls == "" and os.path.exists(f"{CGROUP}{path}/memory.max"):
                return f"{CGROUP}{path}", True
        return None

    def __init__(self):
        self.parent, self.v2 = self.own()
        self.path = f"{self.parent}/lull-soak-{os.getpid()}"
        os.mkdir(self.path)
        self._write("cgroup.procs", str(os.getpid()))

    def _write(self, name, value):
        with open(f"{self.path}/{name}", "w") as f:
            f.write(value)

    def _read(self, name):
        with open(f"{self.path}/{name}") as f:
            return f.read()

    def usage(self):
        return int(self._read("memory.current" if self.v2 else "memory.usage_in_bytes"))

    def limit(self, n):
        """Caps at n bytes; None lifts the cap."""
        if self.v2:
            self._write("memory.max", "max" if n is None else str(n))
        else:
            self._write("memory.limit_in_bytes", "-1" if n is None else str(n))

    def pressure(self):
        """How often the cap was hit, and OOM kills, so far."""
        if self.v2:
            ev = dict(line.split() for line in self._read("memory.events").splitlines())
            return int(ev.get("max", 0)), int(ev.get("oom_kill", 0))
        oom = dict(line.split() for line in self._read("memory.oom_control").splitlines())
        return int(self._read("memory.failcnt")), int(oom.get("oom_kill", 0))

    def leave(self):
        """The harness back where it was, and the cgroup gone once empty."""
        with open(f"{self.parent}/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _stop(pids, seconds):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass
    time.sleep(seconds)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    return f"{len(pids)} VMs stopped for {seconds} s"


def _fifo_hog(pids, seconds):
    cpus = sorted(os.sched_getaffinity(0))
    # each hog ends on its own clock: the harness may not run meanwhile
    until = time.monotonic() + seconds
    hogs = [subprocess.Popen([sys.executable, "-c", HOG, str(cpu), repr(until)])
            for cpu in cpus]
    bad = [h.wait() for h in hogs]
    if any(bad):
        raise OSError(f"a SCHED_FIFO hog failed (exit statuses {bad})")
    with open("/proc/sys/kernel/sched_rt_runtime_us") as f:
        rt = f.read().strip()
    return (f"SCHED_FIFO priority 1 busy loop on CPUs {cpus} for {seconds} s "
            f"(sched_rt_runtime_us {rt})")


def _ksm(pids, seconds):
    with open(KSM_RUN) as f:
        before = f.read().strip()

    def set_run(v):
        with open(KSM_RUN, "w") as f:
            f.write(v)

    def shared():
        with open("/sys/kernel/mm/ksm/pages_sharing") as f:
            return int(f.read())

    try:
        set_run("1")
        time.sleep(seconds / 2)
        merged = shared()
        set_run("2")
        time.sleep(seconds / 2)
    finally:
        set_run(before)
    return (f"KSM on for {seconds / 2:g} s ({merged} pages sharing), then unmerged "
            f"for {seconds / 2:g} s, then run={before} again")


def _memcap(cg, seconds):
    hits0, ooms0 = cg.pressure()
    cap = cg.usage()
    try:
        cg.limit(cap)
        time.sleep(seconds)
        low = cg.usage()
    finally:
        cg.limit(None)
    hits, ooms = cg.pressure()
    return (f"capped at {cap >> 10} KiB for {seconds} s (usage then {low >> 10} KiB); "
            f"cap hit {hits - hits0} times, {ooms - ooms0} OOM kills")


APPLY = {"stop": _stop, "fifo-hog": _fifo_hog, "ksm": _ksm,
         "memcap": lambda fault, s: _memcap(fault.cgroup, s)}


class Fault(threading.Thread):
    """Applies `kind` to the VMs `at` seconds after start() for `seconds`."""

    def __init__(self, kind, at, seconds, log):
        super().__init__(daemon=True)
        self.kind, self.at, self.seconds, self.log = kind, at, seconds, log
        self.pids = []
        # the VMs must start in the cgroup: made now, before any of them
        self.cgroup = MemoryCgroup() if kind == "memcap" else None
        self.record = {"kind": kind, "at_s": at, "seconds": seconds,
                       "done": False, "what": None, "error": None}

    def run(self):
        time.sleep(self.at)
        t0 = time.monotonic()
        self.log(f"fault {self.kind}: applying for {self.seconds} s")
        try:
            arg = self if self.kind == "memcap" else self.pids
            self.record["what"] = APPLY[self.kind](arg, self.seconds)
            self.record["done"] = True
        except OSError as e:
            self.record["error"] = str(e)
        self.record["took_s"] = round(time.monotonic() - t0, 2)
        self.log(f"fault {self.kind}: {self.record['what'] or self.record['error']}")

    def finish(self):
        """After every VM ended."""
        self.join()
        if self.cgroup:
            self.cgroup.leave()
