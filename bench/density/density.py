#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lull consolidation-density benchmark.

Runs N concurrent VMs (one process each) of one guest for every N in a
list and every mode (lull-deferrable, lull-strict, qemu), and measures over
a window of S seconds that starts once every VM has printed its first
serial byte:

  host CPU      per-thread /proc/PID/task/TID/schedstat (ns on CPU), summed
                over every thread of every VM process; in % of ONE core
  wakeups/s     delta of voluntary_ctxt_switches over /proc/PID/task/*/status
  RSS, PSS      /proc/PID/smaps_rollup at the end of the window
  boot          spawn -> first byte on the VM's stdout pipe
  lateness      hard-timer lateness: lull's --stats hard_lateness_ns; under
                QEMU the guest's own late_p99_ns= summary line

and the number of VMs that failed (no first byte in time, died, a non-zero
exit other than the planned stop, a guest FAIL line).

Only the Python 3 standard library; gnuplot draws the plots if installed.
"""

import argparse
import atexit
import csv
import ctypes
import datetime
import errno
import json
import math
import os
import platform
import re
import resource
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import qemu_ref  # noqa: E402  (the QEMU/KVM reference's one command line)

MODES = ("lull-deferrable", "lull-strict", "qemu")
DEFAULT_VMS = (1, 8, 32, 128, 512)
NCPU = os.cpu_count() or 1
# Inside tests/nested/lull-nested the "host" is a machine QEMU emulates: its
# CPU figures compare modes with each other, not with real hardware, while
# wakeup counts carry over.
EMULATED = os.environ.get("LULL_NESTED_RUNNER") == "1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG = 1
TAIL = 16384

# Every VM process this benchmark started and has not reaped: pid -> Popen.
# The one table the cleanup paths (finally, signal handlers, atexit) use.
OWNED = {}


class Interrupted(Exception):
    """SIGINT, SIGTERM or SIGHUP reached the benchmark."""


# --------------------------------------------------------------------------
# progress line


class Progress:
    """One status line on stderr: redrawn in place on a TTY, plain otherwise."""

    def __init__(self, quiet=False):
        self.tty = sys.stderr.isatty()
        self.quiet = quiet
        self.last_key = None
        self.last_plain = 0.0
        self.drawn = False

    def update(self, key, text):
        if self.quiet:
            return
        now = time.monotonic()
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            sys.stderr.write("\r\x1b[K" + text[:width])
            sys.stderr.flush()
            self.drawn = True
        elif key != self.last_key or now - self.last_plain >= 5.0:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
            self.last_plain = now
        self.last_key = key

    def note(self, text):
        """A line that stays (warnings, per-point summaries)."""
        self.clear()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def clear(self):
        if self.tty and self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.drawn = False


# --------------------------------------------------------------------------
# /proc readers


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("ascii", "replace")


HAVE_SCHEDSTAT = os.path.exists("/proc/self/schedstat")


def host_idle_ns():
    """CPU time the whole machine has spent idle (idle and iowait), summed
    over CPUs, from /proc/stat. The kernel measures idle time exactly and
    samples the busy states by tick (which misses short wakes), so the
    window's busy time is its length times the CPUs less this: what the
    VMs cost beyond their own threads (KVM's and the kernel's work for
    them, ksmd, the harness) shows there."""
    fields = read_text("/proc/stat").split("\n", 1)[0].split()[1:]
    return (int(fields[3]) + int(fields[4])) * 1e9 / os.sysconf("SC_CLK_TCK")


def mem_available_kib():
    for line in read_text("/proc/meminfo").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return None


def ksmd_ns():
    """ksmd's CPU time so far (0 where there is none)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if read_text(f"/proc/{pid}/comm").strip() == "ksmd":
                return int(read_text(f"/proc/{pid}/schedstat").split()[0])
        except OSError:
            continue
    return 0


def snapshot(pid):
    """Per-thread CPU ns and context switches of one process, timestamped.

    Returns (t_ns, {tid: (name, cpu_ns, voluntary, nonvoluntary)}) or None
    if the process is gone."""
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return None
    t = time.monotonic_ns()
    out = {}
    for tid in tids:
        try:
            if HAVE_SCHEDSTAT:
                cpu = int(read_text(f"{base}/{tid}/schedstat").split()[0])
            else:
                st = read_text(f"{base}/{tid}/stat")
                fields = st[st.rindex(")") + 2:].split()
                cpu = (int(fields[11]) + int(fields[12])) * 1000000000 // CLK_TCK
            name, vol, nonvol = "?", 0, 0
            for line in read_text(f"{base}/{tid}/status").splitlines():
                if line.startswith("Name:"):
                    name = line[5:].strip() or "?"
                elif line.startswith("voluntary_ctxt_switches:"):
                    vol = int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    nonvol = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out[tid] = (name.strip(), cpu, vol, nonvol)
    return t, out


def window_usage(snap0, snap1, keep=lambda name: True):
    """(seconds, CPU ns, voluntary switches) between two snapshot()s of one
    process, over the threads whose name keep() takes."""
    (ta, a), (tb, b) = snap0, snap1
    cpu = vol = 0
    for tid, (name, c, v, _) in b.items():
        if keep(name):
            _, c0, v0, _ = a.get(tid, (name, 0, 0, 0))
            cpu += c - c0
            vol += v - v0
    return (tb - ta) / 1e9, cpu, vol


def smaps_rollup(pid):
    """(Rss kB, Pss kB) of a process, or (None, None)."""
    rss = pss = None
    try:
        for line in read_text(f"/proc/{pid}/smaps_rollup").splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return rss, pss


# --------------------------------------------------------------------------
# one VM


LATE_RE = re.compile(rb"late_p50_ns=(\d+) late_p99_ns=(\d+) late_max_ns=(\d+)")


class VM:
    def __init__(self, idx, mode):
        self.idx = idx
        self.mode = mode
        self.popen = None
        self.pid = None
        self.t_spawn = None
        self.t_first = None
        self.out = bytearray()
        self.err_path = None
        self.stats_path = None
        self.rc = None
        self.t_exit = None
        self.term_sent = False
        self.killed = False
        self.failure = None
        self.snap0 = None
        self.snap1 = None
        self.rss = self.pss = None
        self.stats = None
        self.phase_at_exit = None

    @property
    def lull(self):
        return self.mode.startswith("lull")

    @property
    def err(self):
        """The tail of what the VM wrote on stderr (a file, not a pipe: one
        descriptor per VM in the harness, not two, halves what N VMs need)."""
        try:
            with open(self.err_path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL))
                return bytearray(f.read())
        except (OSError, TypeError):
            return bytearray()

    def boot_ms(self):
        if self.t_first is None:
            return None
        return (self.t_first - self.t_spawn) / 1e6

    def last_line(self, buf):
        lines = [l for l in bytes(buf).decode("utf-8", "replace").splitlines() if l.strip()]
        return lines[-1].strip() if lines else ""

    def fail(self, why):
        if self.failure is None:
            self.failure = why


CHILD_NICE = None   # the niceness VMs run at when the harness raised its own priority


def set_pdeathsig():
    """In the child between fork and exec: die with the benchmark, and run at
    the niceness the benchmark started with."""
    try:
        if CHILD_NICE is not None:
            os.setpriority(os.PRIO_PROCESS, 0, CHILD_NICE)
    except OSError:
        pass
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


# --------------------------------------------------------------------------
# one point: N VMs of one mode


class Point:
    """Boots N VMs, measures a window, stops them all, accounts for each."""

    def __init__(self, cfg, mode, n, rep, progress, tmpdir):
        self.cfg = cfg
        self.mode = mode
        self.n = n
        self.rep = rep
        self.progress = progress
        self.tmpdir = tmpdir
        self.vms = []
        self.sel = selectors.DefaultSelector()
        self.phase = "spawn"
        self.label = f"[{mode} N={n} run {rep + 1}/{cfg.repeat}]"
        self.boot_timeout = cfg.boot_timeout if cfg.boot_timeout else 5.0 + 0.05 * n
        # The guest must outlive the window, which on a saturated host runs
        # past S by the time the harness takes to read N VMs' /proc at its
        # ends (85 s past a 20 s window at 1,000 tick VMs on two CPUs): a
        # VM that ended before it was stopped would count as failed.
        self.guest_seconds = math.ceil(self.boot_timeout + 2 * cfg.seconds + 3 + 0.1 * n)
        self.window = None
        self.stop_how = cfg.stop if cfg.stop != "auto" else ("term" if mode.startswith("lull") else "exit")

    # -- process plumbing

    def command(self, vm):
        cfg = self.cfg
        gargs = f"seconds={self.guest_seconds}"
        if cfg.guest_args:
            gargs += " " + cfg.guest_args
        if vm.lull:
            vm.stats_path = os.path.join(self.tmpdir, f"{self.mode}-{self.n}-{self.rep}-{vm.idx}.json")
            return [cfg.lull, "run", "--vcpus", str(cfg.vcpus),
                    "--timer-mode", self.mode.split("-", 1)[1],
                    "--cmdline", gargs,
                    "--timeout", str(self.guest_seconds + 30),
                    "--stats", vm.stats_path, cfg.elf]
        return qemu_ref.command(cfg.elf, cfg.qemu, cfg.vcpus, cfg.qemu_mem,
                                append=gargs)

    def spawn(self, vm):
        cmd = self.command(vm)
        vm.t_spawn = time.monotonic_ns()
        # No preexec_fn (no PR_SET_PDEATHSIG in the child): it makes Python
        # fork the whole harness instead of vfork, 4x the spawn cost at
        # thousands of VMs. A VM whose harness was killed still ends by
        # itself: lull at its --timeout, QEMU's guest at seconds=G.
        vm.err_path = os.path.join(self.tmpdir, f"{self.mode}-{self.n}-{self.rep}-{vm.idx}.err")
        try:
            with open(vm.err_path, "wb") as err:
                p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=err, start_new_session=True, close_fds=True)
        except OSError as e:
            vm.fail(f"could not start: {e}" + (
                " (the host's limit on tasks: kernel.pid_max, kernel.threads-max, ulimit -u)"
                if e.errno == errno.EAGAIN else ""))
            return
        if CHILD_NICE is not None:
            try:  # the VMs run at the niceness the benchmark started with
                os.setpriority(os.PRIO_PROCESS, p.pid, CHILD_NICE)
            except OSError:
                pass
        vm.popen = p
        vm.pid = p.pid
        OWNED[p.pid] = p
        os.set_blocking(p.stdout.fileno(), False)
        self.sel.register(p.stdout, selectors.EVENT_READ, (vm, "out"))

    def drain(self, timeout):
        """Read whatever the VMs wrote; stamp first stdout bytes."""
        try:
            events = self.sel.select(timeout)
        except InterruptedError:
            return
        now = time.monotonic_ns()
        for key, _ in events:
            vm, which = key.data
            try:
                data = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                self.sel.unregister(key.fileobj)
                key.fileobj.close()
                continue
            buf = vm.out
            if vm.t_first is None:
                vm.t_first = now
            buf += data
            if len(buf) > TAIL:
                del buf[:len(buf) - TAIL]

    def reap(self):
        """Notice VMs that exited; a VM may only exit when we stop it,
        or by itself during the exit-wait phase."""
        try:
            # one system call says whether any child has ended, instead of a
            # waitpid per VM: with thousands of VMs that loop was most of
            # what the harness did between spawns
            if os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                return
        except ChildProcessError:
            return
        for vm in self.vms:
            if vm.popen is None or vm.rc is not None:
                continue
            rc = vm.popen.poll()
            if rc is None:
                continue
            vm.rc = rc
            vm.t_exit = time.monotonic_ns()
            vm.phase_at_exit = self.phase
            OWNED.pop(vm.pid, None)
            if self.phase in ("spawn", "boot", "measure") and not vm.term_sent:
                self.drain(0)
                why = vm.last_line(vm.err) or vm.last_line(vm.out)
                vm.fail(f"exited with status {rc} during {self.phase}"
                        + (f": {why}" if why else ""))

    def live(self):
        return [vm for vm in self.vms if vm.popen is not None and vm.rc is None]

    def terminate(self, vms, grace):
        for vm in vms:
            if vm.rc is None and vm.popen is not None:
                try:
                    vm.popen.send_signal(signal.SIGTERM)
                    vm.term_sent = True
                except ProcessLookupError:
                    pass
        # grace runs from the last VM that stopped: thousands of VMs on a
        # slow host stop one after another, and only a stuck one is killed
        deadline = time.monotonic() + grace

        def left():
            return [vm for vm in vms if vm.popen is not None and vm.rc is None]
        remaining = len(left())
        while remaining and time.monotonic() < deadline:
            self.drain(0.05)
            self.reap()
            if len(left()) < remaining:
                remaining = len(left())
                deadline = time.monotonic() + grace
            self.show(f"stopping: {remaining} left")
        for vm in left():
            try:
                vm.popen.kill()
                vm.killed = True
            except ProcessLookupError:
                pass
        for vm in vms:
            if vm.popen is not None and vm.rc is None:
                try:
                    vm.rc = vm.popen.wait(5)
                except subprocess.TimeoutExpired:
                    vm.fail("survived SIGKILL for 5 s (unkillable?)")
                    continue
                vm.t_exit = time.monotonic_ns()
                OWNED.pop(vm.pid, None)
        # read what is left in their pipes, then close them
        self.drain(0)
        for key in list(self.sel.get_map().values()):
            if key.data[0] not in vms:
                continue
            try:
                while True:
                    data = os.read(key.fd, 65536)
                    if not data:
                        break
                    key.data[0].out.extend(data)
            except OSError:
                pass
            self.sel.unregister(key.fileobj)
            key.fileobj.close()

    def show(self, what):
        booted = sum(1 for vm in self.vms if vm.t_first is not None)
        self.progress.update((self.label, self.phase),
                             f"{self.label} {len(self.vms)}/{self.n} started, "
                             f"{booted} booted | {self.phase}: {what}")

    # -- the run

    def run(self):
        cfg = self.cfg
        try:
            # spawn every VM, harvesting first bytes between spawns
            self.phase = "spawn"
            self.mem0 = mem_available_kib()
            t0 = time.monotonic()
            for i in range(self.n):
                if time.monotonic() - t0 > self.boot_timeout:
                    self.not_started = (f"not started: spawning took longer than the boot "
                                        f"timeout {self.boot_timeout:.1f} s (host saturated)")
                    break
                vm = VM(i, self.mode)
                self.vms.append(vm)
                self.spawn(vm)
                self.drain(0)
                if i % 8 == 0:
                    self.reap()
                    self.show(f"starting VM {i + 1}")
            # wait for every first byte
            self.phase = "boot"
            deadline = t0 + self.boot_timeout
            while True:
                self.reap()
                pending = [vm for vm in self.live() if vm.t_first is None]
                if not pending or time.monotonic() >= deadline:
                    break
                self.drain(0.05)
                self.show(f"{len(pending)} not booted, timeout in {deadline - time.monotonic():.0f} s")
            for vm in self.live():
                if vm.t_first is None:
                    vm.fail(f"no serial output within {self.boot_timeout:.1f} s of the first spawn")
            self.terminate([vm for vm in self.live() if vm.t_first is None], cfg.grace)
            self.t_all_booted = time.monotonic()
            self.boot_phase_s = self.t_all_booted - t0

            # the measurement window
            self.phase = "measure"
            idle0, ksm0, wall0 = host_idle_ns(), ksmd_ns(), time.monotonic_ns()
            self_cpu0 = time.process_time_ns()
            for vm in self.live():
                vm.snap0 = snapshot(vm.pid)
            start = time.monotonic()
            end = start + cfg.seconds
            while True:
                now = time.monotonic()
                if now >= end:
                    break
                self.drain(min(0.25, end - now))
                self.reap()
                self.show(f"{end - time.monotonic():.0f} s left")
            for vm in self.live():
                vm.snap1 = snapshot(vm.pid)
            for vm in self.live():
                vm.rss, vm.pss = smaps_rollup(vm.pid)
            self.window = time.monotonic() - start
            self.mem1 = mem_available_kib()
            wall = time.monotonic_ns() - wall0
            # the whole machine's busy time less this harness's own
            self.harness_pct = (time.process_time_ns() - self_cpu0) / wall * 100
            self.host_pct = ((wall * NCPU - (host_idle_ns() - idle0)) / wall * 100
                             - self.harness_pct)
            self.ksmd_pct = (ksmd_ns() - ksm0) / self.window / 1e9 * 100

            # stop: SIGTERM now, or let the guests finish and report
            if self.stop_how == "exit":
                self.phase = "exit-wait"
                last_end = max((vm.t_first or vm.t_spawn) for vm in self.vms) / 1e9 \
                    + self.guest_seconds + 5
                while self.live() and time.monotonic() < last_end:
                    self.drain(0.25)
                    self.reap()
                    self.show(f"waiting for {len(self.live())} guests to finish "
                              f"(≤{last_end - time.monotonic():.0f} s)")
            self.phase = "stop"
            self.terminate(self.live(), cfg.grace)
        finally:
            # every path: no VM of ours outlives this point
            if self.live():
                self.phase = "stop"
                for vm in self.live():
                    try:
                        vm.popen.kill()
                        vm.killed = True
                    except ProcessLookupError:
                        pass
                for vm in self.live():
                    try:
                        vm.rc = vm.popen.wait(5)
                    except subprocess.TimeoutExpired:
                        pass
                    OWNED.pop(vm.pid, None)
            self.sel.close()
        return self.account()

    # -- accounting

    def account(self):
        for vm in self.vms:
            if vm.stats_path and os.path.exists(vm.stats_path):
                try:
                    with open(vm.stats_path) as f:
                        vm.stats = json.load(f)
                except (OSError, ValueError) as e:
                    vm.fail(f"unreadable --stats: {e}")
                os.unlink(vm.stats_path)
            if vm.failure or vm.popen is None:
                continue
            rc = vm.rc
            if b"FAIL" in vm.out:
                for line in bytes(vm.out).decode("utf-8", "replace").splitlines():
                    if "FAIL" in line:
                        vm.fail(f"guest (exit {rc}): " + line.strip())
                        break
            if vm.failure:
                continue
            if vm.killed:
                vm.fail(f"did not stop after SIGTERM while no VM stopped for "
                        f"{self.cfg.grace:g} s; SIGKILLed")
            elif vm.lull:
                if not (rc == 0 or (vm.term_sent and rc in (143, -15))):
                    vm.fail(f"lull exit status {rc}: {vm.last_line(vm.err)}")
            else:
                if not (rc == 1 or (vm.term_sent and rc in (0, -15))):
                    vm.fail(f"qemu exit status {rc}: {vm.last_line(vm.err) or vm.last_line(vm.out)}")

        m = {"mode": self.mode, "vms": self.n, "rep": self.rep,
             "window_s": round(self.window, 3) if self.window else None,
             "boot_phase_s": round(getattr(self, "boot_phase_s", 0.0), 3),
             "guest_seconds": self.guest_seconds, "stop": self.stop_how}
        # CPU and wakeups over the window, per VM over its own snapshot interval
        cpu_pct, wake, nonvol, threads = [], [], [], {}
        for vm in self.vms:
            if not (vm.snap0 and vm.snap1):
                continue
            (ta, a), (tb, b) = vm.snap0, vm.snap1
            dt = (tb - ta) / 1e9
            if dt <= 0:
                continue
            c = v = nv = 0
            for tid, (name, cpu, vol, nvol) in b.items():
                _, cpu0, vol0, nvol0 = a.get(tid, (name, 0, 0, 0))
                c += cpu - cpu0
                v += vol - vol0
                nv += nvol - nvol0
                th = threads.setdefault(re.sub(r"\d+$", "N", name) if name.startswith("vcpu") else name,
                                        [0.0, 0.0])
                th[0] += (cpu - cpu0) / dt / 1e9 * 100
                th[1] += (vol - vol0) / dt
            cpu_pct.append(c / dt / 1e9 * 100)
            wake.append(v / dt)
            nonvol.append(nv / dt)
        k = len(cpu_pct)
        m["vms_measured"] = k
        m["cpu_pct_total"] = sum(cpu_pct) if k else None
        m["cpu_pct_host"] = getattr(self, "host_pct", None)
        m["cpu_pct_ksmd"] = getattr(self, "ksmd_pct", None)
        m["cpu_pct_harness"] = getattr(self, "harness_pct", None)
        # the host's memory each VM took, the kernel's for it included (KVM's
        # vCPU, page tables, task stacks: none of it is in RSS)
        # (below 32 VMs the host's own drift of a few MiB swamps it)
        m["host_mib_per_vm"] = ((self.mem0 - self.mem1) / 1024 / k
                                if k >= 32 and self.mem0 and getattr(self, "mem1", None)
                                else None)
        m["cpu_pct_machine"] = sum(cpu_pct) / NCPU if k else None
        m["cpu_pct_per_vm"] = sum(cpu_pct) / k if k else None
        m["wakeups_per_s_per_vm"] = sum(wake) / k if k else None
        m["wakeups_per_s_total"] = sum(wake) if k else None
        m["involuntary_per_s_per_vm"] = sum(nonvol) / k if k else None
        m["threads"] = {name: {"cpu_pct_per_vm": round(c / k, 4), "wakeups_per_s_per_vm": round(w / k, 3)}
                        for name, (c, w) in sorted(threads.items())} if k else {}
        rss = [vm.rss for vm in self.vms if vm.rss is not None]
        pss = [vm.pss for vm in self.vms if vm.pss is not None]
        m["rss_mib_per_vm"] = statistics.mean(rss) / 1024 if rss else None
        m["pss_mib_per_vm"] = statistics.mean(pss) / 1024 if pss else None
        vmm = [vm.stats.get("vmm_rss_kib") for vm in self.vms if vm.stats and vm.stats.get("vmm_rss_kib") is not None]
        m["vmm_rss_mib_per_vm"] = statistics.mean(vmm) / 1024 if vmm else None
        boots = [vm.boot_ms() for vm in self.vms if vm.boot_ms() is not None]
        m["boot_ms_median"] = statistics.median(boots) if boots else None
        m["boot_ms_max"] = max(boots) if boots else None
        vfb = [vm.stats["first_byte_ns"] / 1e6 for vm in self.vms
               if vm.stats and vm.stats.get("first_byte_ns")]
        m["boot_ms_median_vmm"] = statistics.median(vfb) if vfb else None
        # hard-timer lateness: per VM p50/p99/max; the point reports the median
        # VM's p50, the worst VM's p99 and the worst max
        p50s, p99s, maxs, src = [], [], [], None
        gp50, gp99, gmax = [], [], []
        for vm in self.vms:
            if vm.stats:
                lat = [c.get("hard_lateness_ns", {}) for c in vm.stats.get("vcpus", [])]
                lat = [l for l in lat if l.get("count")]
                if lat:
                    p50s.append(max(l["p50"] for l in lat))
                    p99s.append(max(l["p99"] for l in lat))
                    maxs.append(max(l["max"] for l in lat))
            g = LATE_RE.findall(bytes(vm.out))
            if g:
                a, b, c = (int(x) for x in g[-1])
                gp50.append(a), gp99.append(b), gmax.append(c)
        if p99s:
            src = "vmm"
        elif gp99:
            src, p50s, p99s, maxs = "guest", gp50, gp99, gmax
        elif self.vms and all(vm.stats and vm.stats.get("vcpus") for vm in self.vms):
            src = "none"  # every VM's --stats: no hard timer fell due (an idle guest)
        m["lateness_source"] = src
        m["lateness_vms"] = len(p99s)
        m["p50_lateness_us"] = statistics.median(p50s) / 1e3 if p50s else None
        m["p99_lateness_us"] = max(p99s) / 1e3 if p99s else None
        m["p99_lateness_us_median_vm"] = statistics.median(p99s) / 1e3 if p99s else None
        m["max_lateness_us"] = max(maxs) / 1e3 if maxs else None
        m["guest_p99_lateness_us"] = max(gp99) / 1e3 if gp99 else None
        fails = [f"VM {vm.idx} (pid {vm.pid}): {vm.failure}" for vm in self.vms if vm.failure]
        if len(self.vms) < self.n:
            fails.append(f"VMs {len(self.vms)}..{self.n - 1} ({self.n - len(self.vms)}): "
                         + getattr(self, "not_started", "never started"))
        m["vms_started"] = len(self.vms)
        # spawned and printing, per second, from the first spawn to the last boot
        booted = sum(1 for vm in self.vms if vm.t_first is not None)
        bp = getattr(self, "boot_phase_s", 0.0)
        m["started_per_s"] = booted / bp if bp > 0 and booted else None
        m["failed"] = sum(1 for vm in self.vms if vm.failure) + self.n - len(self.vms)
        m["failures"] = fails
        return m


# --------------------------------------------------------------------------
# aggregation, SLO, output

NUMERIC = ("cpu_pct_total", "cpu_pct_host", "cpu_pct_ksmd", "cpu_pct_harness", "cpu_pct_machine", "cpu_pct_per_vm", "wakeups_per_s_per_vm",
           "wakeups_per_s_total", "involuntary_per_s_per_vm", "rss_mib_per_vm",
           "pss_mib_per_vm", "host_mib_per_vm", "vmm_rss_mib_per_vm", "boot_ms_median", "boot_ms_max", "started_per_s",
           "boot_ms_median_vmm", "p50_lateness_us", "p99_lateness_us",
           "p99_lateness_us_median_vm", "max_lateness_us", "guest_p99_lateness_us",
           "window_s", "boot_phase_s")


def aggregate(mode, n, runs, skipped=None):
    """One result object per (mode, N): the median over the repeats."""
    r = {"mode": mode, "vms": n}
    if skipped:
        r.update({k: None for k in NUMERIC})
        r.update({"failed": None, "skipped": skipped, "repeats": 0, "runs": []})
        return r
    for k in NUMERIC:
        vals = [x[k] for x in runs if x.get(k) is not None]
        r[k] = round(statistics.median(vals), 4) if vals else None
    r["failed"] = sum(x["failed"] for x in runs)
    r["failures"] = [f for x in runs for f in x["failures"]][:50]
    r["lateness_source"] = next((x["lateness_source"] for x in runs if x["lateness_source"]), None)
    r["repeats"] = len(runs)
    r["skipped"] = None
    r["runs"] = [{k: v for k, v in x.items() if k not in ("mode", "vms", "failures")} for x in runs]
    return r


def p99_bound(results, cfg, mode):
    """The mode's lateness bound in µs: --p99-bound-us, or with --p99-growth F
    F times the mode's own p99 at its smallest N measured, if that is more
    (on a host whose KVM emulates the guest, one VM alone is already late)."""
    bound = cfg.p99_bound_us
    if cfg.p99_growth:
        pts = sorted((r for r in results if r["mode"] == mode and not r.get("skipped")
                      and r.get("p99_lateness_us") is not None), key=lambda r: r["vms"])
        if pts:
            bound = max(bound, cfg.p99_growth * pts[0]["p99_lateness_us"])
    return bound


def slo_check(r, cfg, bound):
    """None if the point meets the SLO (lateness bound in µs), else the reason
    it does not."""
    if r.get("skipped"):
        return "not measured"
    if r["failed"]:
        return f"{r['failed']} VM(s) failed"
    if r["cpu_pct_total"] is None:
        return "no CPU measurement"
    budget = cfg.cpu_budget * NCPU
    if r["cpu_pct_total"] > budget:
        return f"host CPU {r['cpu_pct_total']:.0f}% > {budget:.0f}% of one core"
    # the SLO names a lateness bound: a point with no lateness figure (no
    # hard timer ran, lull's --stats missing, the guest's summary cut off)
    # has not shown it meets it
    if cfg.no_lateness_slo:
        return None
    if r["p99_lateness_us"] is None and r.get("lateness_source") == "none":
        return None  # no hard timer fell due in any VM: nothing could be late
    if r["p99_lateness_us"] is None:
        return "no lateness figure (no hard-timer samples from lull's --stats or the guest)"
    if r["p99_lateness_us"] > bound:
        return f"p99 lateness {r['p99_lateness_us']:.0f} µs > {bound:.0f} µs"
    return None


def density(results, cfg, mode):
    pts = sorted((r for r in results if r["mode"] == mode and not r.get("skipped")),
                 key=lambda r: r["vms"])
    if not pts:
        return {"mode": mode, "density": None, "text": "not measured"}
    best, first_bad = None, None
    bound = p99_bound(results, cfg, mode)
    for r in pts:
        why = slo_check(r, cfg, bound)
        if why is None:
            if first_bad is None:
                best = r
        elif first_bad is None:
            first_bad = (r, why)
    budget = cfg.cpu_budget * NCPU
    if best is None:
        r, why = first_bad
        return {"mode": mode, "density": 0, "extrapolated": False, "p99_bound_us": bound,
                "text": f"0 (already at N={r['vms']}: {why})"}
    out = {"mode": mode, "density": best["vms"], "extrapolated": False, "p99_bound_us": bound}
    if first_bad is None:
        per = best["cpu_pct_per_vm"]
        if per and per > 0 and budget / per > best["vms"]:
            est = int(budget / per)
            out.update(density=est, extrapolated=True, measured=best["vms"])
            out["text"] = (f"~{est} (extrapolated linearly in per-VM CPU {per:.3g}% from "
                           f"N={best['vms']}, the largest N measured; all measured N pass)")
        else:
            out["text"] = f"{best['vms']} (largest N measured; all pass)"
    else:
        r, why = first_bad
        out["text"] = f"{best['vms']} (N={r['vms']} fails: {why})"
    return out


def fmt(v, nd=1, width=0):
    if v is None:
        s = "-"
    elif isinstance(v, float):
        if v != 0 and abs(v) < 10 ** -nd * 5:
            s = f"{v:.2g}"
        else:
            s = f"{v:.{nd}f}"
    else:
        s = str(v)
    return s.rjust(width)


COLUMNS = [  # header, key, decimals
    ("mode", "mode", 0), ("N", "vms", 0),
    ("CPU% tot", "cpu_pct_total", 1), ("host CPU%", "cpu_pct_host", 1),
    ("CPU%/VM", "cpu_pct_per_vm", 3),
    ("wake/s/VM", "wakeups_per_s_per_vm", 1), ("RSS MiB/VM", "rss_mib_per_vm", 2),
    ("PSS MiB/VM", "pss_mib_per_vm", 2), ("host MiB/VM", "host_mib_per_vm", 2),
    ("VMM RSS", "vmm_rss_mib_per_vm", 2),
    ("boot ms med", "boot_ms_median", 1), ("boot max", "boot_ms_max", 1),
    ("VMs/s", "started_per_s", 0),
    ("late p50 µs", "p50_lateness_us", 0), ("p99 µs", "p99_lateness_us", 0),
    ("max µs", "max_lateness_us", 0), ("failed", "failed", 0),
]


def table(results):
    rows = []
    for r in results:
        row = []
        for h, k, nd in COLUMNS:
            if r.get("skipped") and k not in ("mode", "vms"):
                row.append("")
                continue
            row.append(fmt(r.get(k), nd))
        if r.get("skipped"):
            row[2] = "skipped: " + r["skipped"]
        rows.append(row)
    heads = [c[0] for c in COLUMNS]
    widths = [max([len(h)] + [len(row[i]) for row in rows if not (i == 2 and row[i].startswith("skipped"))])
              for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) if i > 0 else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        if row[2].startswith("skipped"):
            lines.append(row[0].ljust(widths[0]) + "  " + row[1].rjust(widths[1]) + "  " + row[2])
        else:
            lines.append("  ".join(c.rjust(w) if i > 0 else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def ratios(results):
    lines = []
    by = {(r["mode"], r["vms"]): r for r in results if not r.get("skipped")}
    for n in sorted({r["vms"] for r in results}):
        d = by.get(("lull-deferrable", n))
        if not d or not d.get("cpu_pct_total"):
            continue
        parts = []
        for other in ("lull-strict", "qemu"):
            o = by.get((other, n))
            if o and o.get("cpu_pct_total"):
                parts.append(f"1/{o['cpu_pct_total'] / d['cpu_pct_total']:.0f} of {other}'s CPU")
        if parts:
            lines.append(f"  N={n}: lull-deferrable uses " + ", ".join(parts)
                         + f"; {fmt(d['wakeups_per_s_per_vm'], 1)} wakeups/s per VM")
    return lines


def write_outputs(results, cfg, meta, final):
    os.makedirs(cfg.out, exist_ok=True)
    with open(os.path.join(cfg.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    keys = ["mode", "vms"] + list(NUMERIC) + ["failed", "lateness_source", "repeats", "skipped"]
    with open(os.path.join(cfg.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in results:
            w.writerow(["" if r.get(k) is None else r.get(k) for k in keys])
    summary = dict(meta)
    summary["complete"] = final
    summary["density_at_slo"] = [density(results, cfg, m) for m in cfg.modes]
    with open(os.path.join(cfg.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    return summary


def plot(results, cfg, meta):
    """PNG and SVG of CPU, wakeups, RSS and lateness vs N; None if no gnuplot."""
    gp = shutil.which("gnuplot")
    if not gp:
        return None, "gnuplot not installed (apt-get install gnuplot-nox)"
    modes = [m for m in cfg.modes if any(r["mode"] == m and not r.get("skipped") for r in results)]
    if not modes:
        return None, "nothing to plot"
    for m in modes:
        with open(os.path.join(cfg.out, f"{m}.dat"), "w") as f:
            f.write("# N cpu_pct_total wakeups_per_s_per_vm rss_mib_per_vm pss_mib_per_vm p99_lateness_us cpu_pct_per_vm\n")
            for r in sorted((r for r in results if r["mode"] == m and not r.get("skipped")),
                            key=lambda r: r["vms"]):
                vals = [r["vms"], r["cpu_pct_total"], r["wakeups_per_s_per_vm"], r["rss_mib_per_vm"],
                        r["pss_mib_per_vm"], r["p99_lateness_us"], r["cpu_pct_per_vm"]]
                f.write(" ".join("?" if v is None else f"{v:g}" for v in vals) + "\n")
    def logy(key):
        pos = any((r.get(key) or 0) > 0 for r in results if r["mode"] in modes)
        return "set logscale y 10" if pos else "unset logscale y; set yrange [0:*]"

    def series_or(col, key, fallback):
        if any(r.get(key) is not None for r in results if r["mode"] in modes):
            return series(col) + ", "
        return fallback

    ns = sorted({r["vms"] for r in results})
    xmax = max(ns) * 1.5
    xmin = max(min(ns) / 1.5, 0.5)
    style = {"lull-deferrable": "lc rgb '#1b9e77' pt 7", "lull-strict": "lc rgb '#d95f02' pt 5",
             "qemu": "lc rgb '#7570b3' pt 9"}

    def series(col):
        return ", ".join(f"'{m}.dat' using 1:{col} with linespoints lw 2 ps 1.2 {style.get(m, '')} title '{m}'"
                         for m in modes)

    title = (f"lull density: {meta['guest']} guest, {meta['vcpus']} vCPU/VM, {cfg.seconds:g} s window, "
             f"median of {cfg.repeat}; host {NCPU} CPUs ({meta['host']})")
    body = f"""
set datafile missing '?'
set multiplot layout 2,2 title "{title}" font ',12'
set grid
set key top left
set logscale x 2
set xrange [{xmin}:{xmax}]
set xlabel 'concurrent VMs (N)'
{logy("cpu_pct_per_vm")}
set ylabel 'host CPU per VM, µs per second'
set title 'Host CPU per VM (flat: each VM costs the same however many)'
plot {", ".join(f"'{m}.dat' using 1:($7*1e4) with linespoints lw 2 ps 1.2 {style.get(m, '')} title '{m}'" for m in modes)}
{logy("wakeups_per_s_per_vm")}
set ylabel 'host wakeups/s per VM'
set title 'Host wakeups per VM (voluntary context switches)'
plot {series(3)}
unset logscale y
set yrange [0:*]
set ylabel 'MiB per VM'
set title 'Memory per VM: RSS (solid), PSS (dashed)'
plot {series(4)}, {", ".join(f"'{m}.dat' using 1:5 with linespoints dt 2 lw 1 {style.get(m, '')} notitle" for m in modes)}
set autoscale y
{logy("p99_lateness_us")}
set ylabel 'µs'
set title 'Hard-timer lateness, p99 of the worst VM'
plot {series_or(6, "p99_lateness_us", "")}{cfg.p99_bound_us} with lines dt 2 lc rgb 'red' title 'p99 bound{" (or --p99-growth)" if cfg.p99_growth else ""}'
unset multiplot
"""
    made = []
    for term, name in (("pngcairo size 1400,1000 font 'DejaVu Sans,10'", "density.png"),
                       ("svg size 1400,1000 dynamic font 'DejaVu Sans,10'", "density.svg")):
        script = f"set terminal {term}\nset output '{name}'\n" + body
        p = subprocess.run([gp], input=script, text=True, cwd=cfg.out,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode == 0 and os.path.exists(os.path.join(cfg.out, name)):
            made.append(os.path.join(cfg.out, name))
        elif term.startswith("pngcairo"):
            # no cairo: the plain png terminal
            script = f"set terminal png size 1400,1000\nset output '{name}'\n" + body
            p = subprocess.run([gp], input=script, text=True, cwd=cfg.out,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                made.append(os.path.join(cfg.out, name))
        if p.returncode != 0:
            return made or None, "gnuplot: " + p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "gnuplot failed"
    with open(os.path.join(cfg.out, "density.gp"), "w") as f:
        f.write("# gnuplot script; run in this folder\nset terminal pngcairo size 1400,1000\nset output 'density.png'\n" + body)
    return made, None


# --------------------------------------------------------------------------
# command line


def parse_list(s, conv=int):
    try:
        vals = [conv(x) for x in s.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not a comma-separated list")
    if not vals:
        raise argparse.ArgumentTypeError("empty list")
    return vals


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="density.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Consolidation-density benchmark: N concurrent VMs (one process each) per "
                    "mode, host CPU / wakeups / memory / boot / hard-timer lateness over a "
                    "window of S seconds after all N have booted.",
        epilog=f"""
modes: lull-deferrable (lull run --timer-mode deferrable), lull-strict
(--timer-mode strict), qemu (the same guest ELF under qemu-system-x86_64
-machine microvm,pit=off,pic=off,rtc=off -accel kvm; skipped when QEMU is not
installed, and above --qemu-max-vms).

How one point runs: spawn N VMs as fast as possible with the guest command
line "seconds=G", G = boot timeout + 2S + 3 + N/10 (long enough to outlive the
window); wait until every VM has written its first byte to stdout (boot
time = spawn -> first byte on the pipe); measure S seconds; stop. lull VMs
get SIGTERM right after the window (lull writes --stats at exit: hard-timer
lateness from hard_lateness_ns). QEMU VMs are left to finish (the guest's
summary line carries late_p99_ns=), then SIGTERM; --stop changes this.
A VM fails when it prints nothing before the boot timeout, exits before it
is stopped, exits with a status other than the planned one (lull: 143 after
SIGTERM or 0; QEMU: 0 after SIGTERM or 1 = guest exit 0), is still running
--grace seconds after SIGTERM and after the last VM that stopped, or prints
a guest FAIL line.

Spawning stops when the boot timeout runs out; VMs not started count as
failed. The harness raises its own priority by 10 nice levels when allowed
(so spawning and first-byte timestamps lag less on a saturated host); the
VMs run at the niceness the benchmark was started with.

Metrics: CPU % is of ONE core (100 = one core busy; the machine has {NCPU}),
summed over every thread of the VM processes from
/proc/PID/task/TID/schedstat; "host CPU%" is the whole machine's busy time
from /proc/stat over the window less this harness's own (the VMs' threads,
the kernel's work for them, ksmd, anything else the host runs). Wakeups/s: voluntary_ctxt_switches from
/proc/PID/task/*/status. RSS/PSS: /proc/PID/smaps_rollup at the window's
end. VMM RSS: lull's own vmm_rss_kib (RSS beyond guest-touched memory).
Lateness: median VM's p50, worst VM's p99, worst max.
Density at SLO: per mode the largest N with total CPU <= --cpu-budget,
p99 lateness <= --p99-bound-us (a point with no lateness figure fails)
and no failed VM; past the largest N
measured only as a labelled linear extrapolation in per-VM CPU.

Output: a table on stdout; results.json (one object per mode and N),
results.csv, summary.json (density at SLO, host, command) and density.png /
density.svg (gnuplot) in --out. A progress line goes to stderr. Ctrl-C stops
every VM this script started and writes the partial results.""")
    ap.add_argument("--vms", type=parse_list, default=list(DEFAULT_VMS), metavar="LIST",
                    help="numbers of concurrent VMs (default 1,8,32,128,512)")
    ap.add_argument("--seconds", type=float, default=10.0, metavar="S",
                    help="measurement window in seconds after all VMs booted (default 10)")
    ap.add_argument("--guest", default="tick", metavar="NAME",
                    help="guest: BUILD/guests/NAME.elf, or a path to an ELF (default tick)")
    ap.add_argument("--guest-args", default="", metavar="STR",
                    help="extra guest command-line words after seconds=G")
    ap.add_argument("--modes", type=lambda s: parse_list(s, str), default=list(MODES), metavar="LIST",
                    help="comma-separated subset of " + ",".join(MODES) + " (default all)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="output folder (default BUILD/density/YYYYmmdd-HHMMSS)")
    ap.add_argument("--build", default=None, metavar="DIR",
                    help="meson build folder with vmm/lull and guests/ (default: ./build-density, "
                         "./build, or the newest build*/ at the repository root that has vmm/lull)")
    ap.add_argument("--lull", default=None, metavar="PATH", help="lull binary (default BUILD/vmm/lull)")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH", help="QEMU binary")
    ap.add_argument("--qemu-mem", default="32M", metavar="SIZE", help="QEMU guest RAM (default 32M)")
    ap.add_argument("--qemu-max-vms", type=int, default=128, metavar="N",
                    help="largest N run under QEMU (~36 MB RSS each; default 128)")
    ap.add_argument("--vcpus", type=int, default=1, metavar="N", help="vCPUs per VM (default 1)")
    ap.add_argument("--repeat", type=int, default=3, metavar="R",
                    help="runs per point; the table shows the median (default 3)")
    ap.add_argument("--cpu-budget", type=float, default=50.0, metavar="PCT",
                    help=f"SLO: total host CPU in %% of the whole machine (default 50 = "
                         f"{50 * NCPU:g}%% of one core here)")
    ap.add_argument("--p99-bound-us", type=float, default=1000.0, metavar="US",
                    help="SLO: hard-timer p99 lateness bound in µs (default 1000)")
    ap.add_argument("--p99-growth", type=float, default=None, metavar="F",
                    help="SLO: a mode's lateness bound is at least F times its own p99 at its "
                         "smallest N (co-location may make a VM that much later than alone; "
                         "for hosts where one VM alone is past --p99-bound-us)")
    ap.add_argument("--no-lateness-slo", action="store_true",
                    help="SLO on CPU and failures only: for a guest with no hard-timer work to be "
                         "late (idle), whose QEMU run has no lateness figure")
    ap.add_argument("--stop-past-slo", action="store_true",
                    help="once a mode misses the SLO at some N, run none of its larger N "
                         "(the verdict is known)")
    ap.add_argument("--boot-timeout", type=float, default=None, metavar="S",
                    help="seconds from the first spawn for all N to be started and print "
                         "(default 5 + 0.05*N)")
    ap.add_argument("--stop", choices=("auto", "term", "exit"), default="auto",
                    help="after the window: term = SIGTERM at once, exit = let the guests finish "
                         "(the guest prints its own lateness), auto = term for lull, exit for qemu")
    ap.add_argument("--grace", type=float, default=10.0, metavar="S",
                    help="after SIGTERM, seconds without any VM stopping before the rest "
                         "get SIGKILL (default 10)")
    ap.add_argument("--cooldown", type=float, default=1.0, metavar="S",
                    help="pause between points (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="a short sweep: --vms 1,8,32 --seconds 3 --repeat 1 (explicit options win)")
    ap.add_argument("--no-plot", action="store_true", help="skip gnuplot")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    cfg = ap.parse_args(argv)
    if cfg.quick:
        given = set(a.split("=")[0] for a in argv)
        if "--vms" not in given:
            cfg.vms = [1, 8, 32]
        if "--seconds" not in given:
            cfg.seconds = 3.0
        if "--repeat" not in given:
            cfg.repeat = 1
    bad = [m for m in cfg.modes if m not in MODES]
    if bad:
        ap.error(f"--modes: unknown mode(s) {', '.join(bad)}; choose from {', '.join(MODES)}")
    if any(n < 1 for n in cfg.vms):
        ap.error("--vms: every N must be at least 1")
    if cfg.seconds <= 0 or cfg.repeat < 1 or cfg.vcpus < 1:
        ap.error("--seconds, --repeat and --vcpus must be positive")
    cfg.vms = sorted(set(cfg.vms))

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if cfg.build is None and cfg.lull is None:
        cands = [os.path.join(root, "build-density"), os.path.join(root, "build")]
        cands += sorted((os.path.join(root, d) for d in os.listdir(root) if d.startswith("build")),
                        key=lambda d: -os.path.getmtime(d))
        cfg.build = next((d for d in cands if os.access(os.path.join(d, "vmm", "lull"), os.X_OK)), None)
        if cfg.build is None:
            ap.error(f"no build with vmm/lull under {root}; run meson setup + ninja, or give --build/--lull")
    if cfg.lull is None:
        cfg.lull = os.path.join(cfg.build, "vmm", "lull")
    if cfg.build is None:
        cfg.build = os.path.dirname(os.path.dirname(os.path.abspath(cfg.lull)))
    cfg.lull = os.path.abspath(cfg.lull)
    if any(m.startswith("lull") for m in cfg.modes) and not os.access(cfg.lull, os.X_OK):
        ap.error(f"lull binary {cfg.lull} is missing or not executable")
    if os.sep in cfg.guest or cfg.guest.endswith(".elf"):
        cfg.elf = os.path.abspath(cfg.guest)
        cfg.guest = os.path.basename(cfg.guest).removesuffix(".elf")
    else:
        cfg.elf = os.path.abspath(os.path.join(cfg.build, "guests", cfg.guest + ".elf"))
    if not os.path.isfile(cfg.elf):
        have = sorted(f[:-4] for f in os.listdir(os.path.join(cfg.build, "guests")) if f.endswith(".elf")) \
            if os.path.isdir(os.path.join(cfg.build, "guests")) else []
        ap.error(f"guest {cfg.elf} not found" + (f"; built guests: {', '.join(have)}" if have else ""))
    if cfg.out is None:
        cfg.out = os.path.join(cfg.build, "density", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    cfg.out = os.path.abspath(cfg.out)
    return cfg


def raise_nofile(n):
    """A pipe per VM: raise the soft limit, and as root the hard one."""
    need = n + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, need))
            hard = need
        except (OSError, ValueError):
            pass  # not root, or past fs.nr_open
    if soft != resource.RLIM_INFINITY and soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        if new < need:
            return (f"RLIMIT_NOFILE hard limit {hard} < {need} needed for {n} VMs "
                    f"(raise it: ulimit -Hn {need}, as root)")
    return None


def task_limit(n, vcpus):
    """None, or why the host's task limit will refuse some of N lull VMs:
    each is a main thread, its vCPU threads, and KVM's own worker (NX huge
    page recovery, on kernels that have one)."""
    need = n * (2 + vcpus) + len(os.listdir("/proc"))
    for knob in ("pid_max", "threads-max"):
        try:
            have = int(read_text(f"/proc/sys/kernel/{knob}"))
        except (OSError, ValueError):
            continue
        if have < need:
            return (f"{n} VMs need about {need} host tasks, and kernel.{knob} is {have}: "
                    f"raise it (sysctl -w kernel.{knob}={need * 2}), or VMs past it fail with status 71")
    return None


def kill_owned():
    """Last resort (atexit, signal): SIGKILL every VM we still own."""
    for pid, p in list(OWNED.items()):
        try:
            p.kill()
        except OSError:
            pass
    for pid, p in list(OWNED.items()):
        try:
            p.wait(5)
        except Exception:
            pass
        OWNED.pop(pid, None)


def on_signal(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def main(argv):
    cfg = parse_args(argv)
    progress = Progress(cfg.quiet)
    atexit.register(kill_owned)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)

    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        print("density: /dev/kvm is missing or not accessible; nothing to measure", file=sys.stderr)
        return 69
    qemu = shutil.which(cfg.qemu)
    cfg.qemu = qemu or cfg.qemu
    # The harness (spawning, first-byte timestamps, /proc reads) runs at a higher
    # priority than the VMs when allowed, so a saturated host delays it less;
    # the VMs themselves run at the niceness we were started with.
    global CHILD_NICE
    base = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, max(-20, base - 10))
        CHILD_NICE = base
    except OSError:
        pass
    warn = raise_nofile(max(cfg.vms))
    if warn:
        progress.note("density: warning: " + warn)
    warn = task_limit(max(cfg.vms), cfg.vcpus)
    if warn:
        progress.note("density: warning: " + warn)

    meta = {
        "command": " ".join([os.path.basename(sys.argv[0])] + argv),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": f"{platform.node()}, {NCPU} CPUs, Linux {platform.release()}"
                + (", emulated (lull-nested)" if EMULATED else ""),
        "emulated_host": EMULATED, "ncpu": NCPU, "guest": cfg.guest, "elf": cfg.elf, "lull": cfg.lull,
        "qemu": qemu, "vcpus": cfg.vcpus, "seconds": cfg.seconds, "repeat": cfg.repeat,
        "vms": cfg.vms, "modes": cfg.modes, "cpu_budget_pct_machine": cfg.cpu_budget,
        "cpu_budget_pct_one_core": cfg.cpu_budget * NCPU, "p99_bound_us": cfg.p99_bound_us,
        "p99_growth": cfg.p99_growth, "stop_past_slo": cfg.stop_past_slo,
        "cpu_source": "schedstat" if HAVE_SCHEDSTAT else "utime+stime",
        "loadavg_before": read_text("/proc/loadavg").split()[:3],
    }
    runs = {}          # (mode, n) -> [per-run metrics]
    skipped = {}       # (mode, n) -> reason
    for m in cfg.modes:
        for n in cfg.vms:
            if m == "qemu" and not qemu:
                skipped[(m, n)] = f"{cfg.qemu} not installed"
            elif m == "qemu" and n > cfg.qemu_max_vms:
                skipped[(m, n)] = f"over --qemu-max-vms {cfg.qemu_max_vms}"

    def results():
        out = []
        for m in cfg.modes:
            for n in cfg.vms:
                if (m, n) in skipped:
                    out.append(aggregate(m, n, [], skipped[(m, n)]))
                elif runs.get((m, n)):
                    out.append(aggregate(m, n, runs[(m, n)]))
        return out

    interrupted = None
    total = sum(1 for m in cfg.modes for n in cfg.vms if (m, n) not in skipped) * cfg.repeat
    done = 0
    tmpdir = tempfile.mkdtemp(prefix="lull-density-")
    try:
        # interleave modes and repeats so slow drift of a shared host hits all alike
        for rep in range(cfg.repeat):
            for n in cfg.vms:
                for m in cfg.modes:
                    if (m, n) in skipped:
                        continue
                    if (m, n) in skipped:
                        continue  # --stop-past-slo, during this sweep
                    pt = Point(cfg, m, n, rep, progress, tmpdir)
                    pt.label = f"[{done + 1}/{total} {m} N={n} run {rep + 1}/{cfg.repeat}]"
                    res = pt.run()
                    done += 1
                    runs.setdefault((m, n), []).append(res)
                    progress.note(
                        f"{pt.label} cpu {fmt(res['cpu_pct_total'], 1)}% of a core, "
                        f"{fmt(res['wakeups_per_s_per_vm'], 1)} wakeups/s/VM, "
                        f"boot med {fmt(res['boot_ms_median'], 1)} ms, "
                        f"p99 {fmt(res['p99_lateness_us'], 0)} µs, failed {res['failed']}")
                    for f in res["failures"][:5]:
                        progress.note("    failed: " + f)
                    if len(res["failures"]) > 5:
                        progress.note(f"    ... and {len(res['failures']) - 5} more (results.json)")
                    if cfg.stop_past_slo:
                        res_now = results()
                        bound = p99_bound(res_now, cfg, m)
                        why = slo_check(aggregate(m, n, runs[(m, n)]), cfg, bound)
                        if why:
                            for big in (x for x in cfg.vms if x > n and (m, x) not in skipped
                                        and (m, x) not in runs):
                                skipped[(m, big)] = f"not run: past the SLO at N={n}"
                                total -= cfg.repeat - rep
                    write_outputs(results(), cfg, meta, final=False)
                    time.sleep(cfg.cooldown)
    except Interrupted as e:
        interrupted = str(e)
    except KeyboardInterrupt:
        interrupted = "SIGINT"
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kill_owned()
        shutil.rmtree(tmpdir, ignore_errors=True)
        progress.clear()

    res = results()
    meta["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    meta["interrupted"] = interrupted
    summary = write_outputs(res, cfg, meta, final=interrupted is None)
    plots, why = (None, "--no-plot") if cfg.no_plot else plot(res, cfg, meta)

    print(f"lull density: guest {cfg.guest}, {cfg.vcpus} vCPU/VM, window {cfg.seconds:g} s, "
          f"median of {cfg.repeat}; host {meta['host']}")
    print(f"CPU% is of one core (100 = one core; the machine is {NCPU * 100}%); "
          f"p99 = worst VM's p99 hard-timer lateness")
    if EMULATED:
        print("EMULATED HOST: this ran in tests/nested/lull-nested, on a machine QEMU emulates "
              "instruction by instruction. CPU% and lateness are of that machine: compare the "
              "modes with each other, not with real hardware. Wakeups/s carry over.")
    if interrupted:
        print(f"INTERRUPTED by {interrupted}: partial results ({done}/{total} runs)")
    print(table(res))
    rl = ratios(res)
    if rl:
        print("side by side:")
        print("\n".join(rl))
    late = f"p99 lateness <= {cfg.p99_bound_us:g} µs"
    if cfg.no_lateness_slo:
        late = "lateness not judged (--no-lateness-slo)"
    elif cfg.p99_growth:
        late += f" or {cfg.p99_growth:g}x the mode's own at its smallest N"
    print(f"density at SLO (CPU <= {cfg.cpu_budget:g}% of the machine = {cfg.cpu_budget * NCPU:g}% of one "
          f"core, {late}, no failed VM):")
    for d in summary["density_at_slo"]:
        bound = f" [p99 bound {d['p99_bound_us']:.0f} µs]" if cfg.p99_growth and "p99_bound_us" in d else ""
        print(f"  {d['mode']:<16} {d['text']}{bound}")
    fails = [r for r in res if r.get("failed")]
    for r in fails:
        print(f"failures at {r['mode']} N={r['vms']}: " + "; ".join(r["failures"][:3])
              + (" ..." if len(r["failures"]) > 3 else ""))
    print(f"results: {os.path.join(cfg.out, 'results.json')} (+ results.csv, summary.json)")
    if plots:
        print("plots: " + ", ".join(plots))
    else:
        print(f"plots: none ({why})")
    return 130 if interrupted else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["linux-idle"]:
        # idle Linux VMs: their own harness (linux_idle.py), the same /proc readers
        import linux_idle
        sys.exit(linux_idle.main(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
