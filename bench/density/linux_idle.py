#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""linux-idle: N idle Linux VMs per mode, what each costs the host.

    bench/density/density.py linux-idle [--vms 4] [--mem 128M] [--seconds 10] ...

Every VM boots Debian's stock kernel (the bzImage tests/nested/lull-nested
caches) with the initramfs of tests/linux, init in idle mode
(lull_init=idle): it prints "lull-init: ready ..." and sleeps in pause().
One vCPU each (--vcpus 2 or 4 for more). Modes:

  lull-deferrable       lull run --timer-mode deferrable
  lull-strict           lull run --timer-mode strict
  qemu                  QEMU microvm with KVM's in-kernel irqchip, -cpu
                        <probed>,kvm-pv-eoi=off (QEMU_CPU_FEATURES: why)
  lull-nohz-off         the guest ticks periodically at its HZ (250 in
                        Debian's kernel), like older or simpler guests:
                        nohz=off highres=off lapic=notscdeadline, so the
                        tick is the APIC timer's periodic mode (with the
                        TSC-deadline timer, Linux re-arms one-shots even
                        for a periodic tick); lull deferrable, APIC timer hard
  lull-nohz-off-4ms     the same with --apic-max-defer 4 ms / 20 ms: a
  lull-nohz-off-20ms    halted vCPU's periodic ticks wait up to that long
  lull-defer-100ms      lull deferrable with --apic-max-defer 100 ms / 1 s:
  lull-defer-1s         a halted vCPU's APIC timer (any mode) waits for the
                        next multiple of 15/16 of the bound on the host's clock
  lull-no-pv-eoi        lull deferrable with --no-pv-eoi: every EOI an exit,
                        as on QEMU_CPU_FEATURES (not in the default --modes)
  lull-no-advance       lull deferrable with --no-timer-advance: hard timers
                        woken at their expiry (not in the default --modes)
  lull-halt-poll        lull deferrable with --halt-poll 200000 (KVM's default):
                        a halted vCPU spins for a hard timer that near (not in
                        the default --modes)

A point spawns its N VMs at once, waits until each printed its ready marker
(boot-to-init: spawn -> marker on its console, host time), then measures a
window of S seconds, per VM: host wakeups/s (voluntary context switches of
all its threads, counted by the kernel), host CPU % of one core (schedstat),
RSS and PSS (smaps_rollup at the window's end). Then SIGTERM. A VM fails
when it exits before that, prints no marker within --boot-timeout, or init
prints a FAIL line.

--census (as root, in the runner) boots init in census mode instead
(lull_init=census): once at init, the guest turns on its own timer
tracepoints and sleeps --census-seconds in one nanosleep between a start
and an end marker, then prints a count per timer function and interrupt
vector, and its hrtimers' lateness by its own clock. The host takes each
VM's counters when that VM's markers appear (polled every 20 ms): host
wakeups/s and CPU as above, KVM exits/s by reason from the runner kernel's
KVM debugfs (/sys/kernel/debug/kvm/<pid>-<fd>/, the same counters for lull
and QEMU; debugfs is mounted if it is not), and every wakeup of the VMMs'
threads from the runner kernel's ftrace (sched:sched_wakeup, trace clock
mono): the distinct host wake instants per second across all the point's
VMs (wakes within 1 ms of a cluster's first counted as one), over the time
all VMs were inside their windows at once. lull modes also keep lull's
--stats (whole run: APIC timer counters, deferred_delay_ns). --vcpus 1, 2
or 4 per VM.

--ksm S (as root) runs the host's KSM for each point: on once the VMs are
at init, S seconds to merge before the window, then what it shares at the
window's end (pages_sharing: the memory saved) and ksmd's CPU over the
window; after the point every page is unmerged (run=2) and at the end KSM
is left as it was. lull offers guest RAM to KSM unless --no-mem-merge, and
QEMU does by default (mem-merge=on), so both modes merge.

Needs /dev/kvm: inside the nested runner on a host without it, e.g.

    mkdir -p /tmp/li && flock /tmp/lull-nested.lock tests/nested/lull-nested \\
        --timeout 1800 --writable /tmp/li -- \\
        python3 bench/density/density.py linux-idle --build build --vms 4 --out /tmp/li
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import density
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import qemu_ref  # noqa: E402  (the QEMU/KVM reference's one command line)

READY = b"lull-init: ready"
CENSUS_START = b"lull-init: census start"
CENSUS_END = b"lull-init: census end"
CENSUS_DONE = b"lull-init: census done"
MODES = ("lull-deferrable", "lull-strict", "qemu", "lull-nohz-off", "lull-nohz-off-4ms",
         "lull-nohz-off-20ms", "lull-defer-100ms", "lull-defer-1s", "lull-no-pv-eoi",
         "lull-no-advance", "lull-halt-poll")
DEFAULT_MODES = MODES[:-3]
# The QEMU/KVM reference's -cpu. In the nested runner QEMU's guest hung in
# boot at random points (with ACPI or acpi=off, nohz=off, tsc=reliable,
# lapic=notscdeadline alike) with interrupts disabled, spinning on a lock
# (QEMU monitor: IF=0, HLT=0, one RIP, RAX=0x101); see docs/benchmarks.md.
# Without KVM's paravirtual EOI it boots: kvm-pv-eoi=off, added to the
# reference's probed model (scripts/qemu_ref.py).
QEMU_CPU_FEATURES = ",kvm-pv-eoi=off"
QEMU_APPEND = ""
PERIODIC_TICK = "nohz=off highres=off lapic=notscdeadline"
# mode -> (lull timer mode or None for QEMU, --apic-max-defer ns, extra guest words)
MODE_SPEC = {
    "lull-deferrable": ("deferrable", None, ""),
    "lull-strict": ("strict", None, ""),
    "qemu": (None, None, ""),
    "lull-nohz-off": ("deferrable", None, PERIODIC_TICK),
    "lull-nohz-off-4ms": ("deferrable", 4000000, PERIODIC_TICK),
    "lull-nohz-off-20ms": ("deferrable", 20000000, PERIODIC_TICK),
    "lull-defer-100ms": ("deferrable", 100000000, ""),
    "lull-defer-1s": ("deferrable", 1000000000, ""),
    "lull-no-pv-eoi": ("deferrable", None, ""),
    "lull-no-advance": ("deferrable", None, ""),
    "lull-halt-poll": ("deferrable", None, ""),
}
# mode -> lull's own options beyond MODE_SPEC's
LULL_ARGS = {"lull-no-pv-eoi": ["--no-pv-eoi"], "lull-no-advance": ["--no-timer-advance"],
             "lull-halt-poll": ["--halt-poll", "200000"]}
# what the guest kernel prints when it dies, and lull-init when a step fails
PANIC = "Kernel panic - not syncing"
FAIL = "lull-init: FAIL"


def said_after(text, marker):
    """The rest of the console line that starts at marker's first match
    ("" where the console ends at the marker)."""
    rest = text.split(marker, 1)[1]
    return rest.split("\n", 1)[0].strip(" :\r")


def cached_bzimage():
    cache = os.environ.get("LULL_NESTED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "lull-nested")
    found = sorted(glob.glob(os.path.join(cache, "current", "boot", "vmlinuz-*")))
    return found[-1] if found else None


class IdleVM:
    def __init__(self, idx, mode, logdir):
        self.idx, self.mode = idx, mode
        self.log = os.path.join(logdir, f"{mode}-{idx}.out")
        self.errlog = os.path.join(logdir, f"{mode}-{idx}.err")
        self.popen = None
        self.t_spawn = self.t_ready = None
        self.failure = None
        self.snap0 = self.snap1 = None
        self.rss = self.pss = None
        self.stats = os.path.join(logdir, f"{mode}-{idx}.stats.json")
        self.read_at = 0  # census: console bytes already looked at
        self.t_start = self.t_end = None
        self.kvm0 = self.kvm1 = None

    def output(self):
        try:
            with open(self.log, "rb") as f:
                return f.read()
        except OSError:
            return b""

    def last_line(self):
        for path in (self.errlog, self.log):
            try:
                with open(path, "rb") as f:
                    lines = [l for l in f.read().decode("utf-8", "replace").splitlines() if l.strip()]
            except OSError:
                lines = []
            if lines:
                return lines[-1].strip()
        return ""


def command(cfg, mode, stats=None):
    init = (f"lull_init=census lull_census_s={cfg.census_seconds:g}" if cfg.census
            else "lull_init=idle")
    return vm_command(cfg, mode, init, stats,
                      int(cfg.boot_timeout + cfg.seconds + cfg.census_seconds + 120))


def vm_command(cfg, mode, init, stats, timeout, console="ttyS0"):
    """One VM of a MODE_SPEC mode booting cfg.kernel and cfg.initramfs with
    `console=CONSOLE INIT` (and the mode's own words) on its command line;
    lull stops itself after timeout seconds. cfg has qemu, lull, mem, vcpus,
    kernel and initramfs. bench/latency/cyclictest.py boots its guests so."""
    timer_mode, max_defer, extra = MODE_SPEC[mode]
    append = f"console={console} {init}" + (" " + extra if extra else "")
    if timer_mode is None:
        # QEMU_APPEND: see its comment; the words QEMU's guest needs to reach
        # init in the nested runner at all
        return qemu_ref.command(cfg.kernel, cfg.qemu, cfg.vcpus, cfg.mem,
                                QEMU_CPU_FEATURES, cfg.initramfs,
                                append + QEMU_APPEND)
    cmd = [cfg.lull, "run", "--vcpus", str(cfg.vcpus), "--mem", cfg.mem,
           "--timer-mode", timer_mode] + LULL_ARGS.get(mode, [])
    if max_defer is not None:
        cmd += ["--apic-max-defer", str(max_defer)]
    if stats:
        cmd += ["--stats", stats]
    return cmd + ["--timeout", str(timeout),
                  "--initrd", cfg.initramfs, "--cmdline", append, cfg.kernel]


def stop_vms(vms):
    """SIGTERM to every VM still running, then up to 10 s each before SIGKILL."""
    for vm in vms:
        if vm.popen and vm.popen.poll() is None:
            vm.popen.send_signal(signal.SIGTERM)
    for vm in vms:
        if vm.popen:
            try:
                vm.popen.wait(10)
            except subprocess.TimeoutExpired:
                vm.popen.kill()
                vm.popen.wait()
            density.OWNED.pop(vm.popen.pid, None)


def run_point(cfg, mode, logdir):
    vms = [IdleVM(i, mode, logdir) for i in range(cfg.vms)]
    try:
        for vm in vms:
            with open(vm.log, "wb") as out, open(vm.errlog, "wb") as err:
                vm.t_spawn = time.monotonic()
                try:
                    vm.popen = subprocess.Popen(command(cfg, mode, vm.stats), stdin=subprocess.DEVNULL,
                                                stdout=out, stderr=err, start_new_session=True,
                                                preexec_fn=density.set_pdeathsig)
                except OSError as e:
                    vm.failure = f"could not start: {e}"
                    continue
            density.OWNED[vm.popen.pid] = vm.popen
        deadline = time.monotonic() + cfg.boot_timeout
        while time.monotonic() < deadline:
            waiting = 0
            for vm in vms:
                if vm.failure or vm.t_ready:
                    continue
                if READY in vm.output():
                    vm.t_ready = time.monotonic()
                elif vm.popen.poll() is not None:
                    vm.failure = f"exited with status {vm.popen.returncode} before init: {vm.last_line()}"
                else:
                    waiting += 1
            if not waiting:
                break
            time.sleep(0.05)
        for vm in vms:
            if not vm.failure and not vm.t_ready:
                vm.failure = f"no ready marker within {cfg.boot_timeout:g} s: {vm.last_line()}"
        ready = [vm for vm in vms if vm.t_ready]
        if cfg.ksm:
            print(f"linux-idle: {mode}: KSM on, {cfg.ksm:g} s to merge", file=sys.stderr)
            ksm_write("run", 1)
            time.sleep(cfg.ksm)
        print(f"linux-idle: {mode}: {len(ready)}/{cfg.vms} VMs at init, measuring {cfg.seconds:g} s",
              file=sys.stderr)
        ksmd0 = ksmd_cpu_ns()
        for vm in ready:
            vm.snap0 = density.snapshot(vm.popen.pid)
        time.sleep(cfg.seconds)
        for vm in ready:
            if vm.popen.poll() is not None:
                vm.failure = f"exited with status {vm.popen.returncode} while idle: {vm.last_line()}"
                continue
            vm.snap1 = density.snapshot(vm.popen.pid)
            vm.rss, vm.pss = density.smaps_rollup(vm.popen.pid)
        if cfg.ksm:
            ksm = {"pages_sharing": ksm_read("pages_sharing"),
                   "pages_shared": ksm_read("pages_shared"),
                   "ksmd_cpu_pct": round((ksmd_cpu_ns() - ksmd0) / cfg.seconds / 1e7, 2)}
    finally:
        if cfg.ksm:
            ksm_write("run", 2)  # unmerge: the next point starts from nothing shared
        stop_vms(vms)
    for vm in vms:
        if not vm.failure and b"lull-init: FAIL" in vm.output():
            vm.failure = "init: " + vm.output().split(b"lull-init: FAIL", 1)[1].split(b"\n")[0].decode(
                "utf-8", "replace").strip()
    res = account(mode, vms)
    if cfg.ksm:
        res["ksm"] = ksm
        res["ksm_saved_mib"] = round(ksm["pages_sharing"] * 4096 / 2**20, 1)
    return res


KSM = "/sys/kernel/mm/ksm"


def ksm_read(name):
    with open(os.path.join(KSM, name)) as f:
        return int(f.read())


def ksm_write(name, value):
    with open(os.path.join(KSM, name), "w") as f:
        f.write(f"{value}\n")


def ksmd_cpu_ns():
    """ksmd's utime + stime, ns (clock ticks at USER_HZ)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat.split(" (", 1)[1].startswith("ksmd)"):
            fields = stat.rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")
    return 0


def account(mode, vms):
    per_vm = []
    for vm in vms:
        row = {"vm": vm.idx, "failure": vm.failure,
               "boot_to_init_s": round(vm.t_ready - vm.t_spawn, 3) if vm.t_ready else None}
        if vm.snap0 and vm.snap1 and not vm.failure:
            dt, cpu, vol = density.window_usage(vm.snap0, vm.snap1)
            row.update(wakeups_per_s=round(vol / dt, 2), cpu_pct=round(cpu / dt / 1e7, 3),
                       rss_mib=round(vm.rss / 1024, 1) if vm.rss else None,
                       pss_mib=round(vm.pss / 1024, 1) if vm.pss else None)
        per_vm.append(row)

    def med(key):
        vals = [r[key] for r in per_vm if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    return {"mode": mode, "vms": len(vms), "failed": sum(1 for r in per_vm if r["failure"]),
            "wakeups_per_s": med("wakeups_per_s"), "cpu_pct": med("cpu_pct"),
            "rss_mib": med("rss_mib"), "pss_mib": med("pss_mib"),
            "boot_to_init_s": med("boot_to_init_s"),
            "boot_to_init_max_s": max((r["boot_to_init_s"] for r in per_vm if r["boot_to_init_s"]),
                                      default=None),
            "per_vm": per_vm}


# ---- census (--census): what wakes an idle Linux, and what it costs the host ----

DEBUGFS = "/sys/kernel/debug"
TRACEFS = "/sys/kernel/tracing"
# KVM's per-VM debugfs counters shown in the table (results.json has all of them)
EXIT_KEYS = ("exits", "halt_exits", "io_exits", "mmio_exits", "irq_exits",
             "irq_window_exits", "request_irq_exits", "signal_exits", "hypercalls",
             "irq_injections", "halt_wakeup", "halt_successful_poll")
# levels, not counts: their difference over a window is no rate
KVM_GAUGES = ("blocking", "pages_4k", "pages_2m", "pages_1g", "max_mmu_page_hash_collisions",
              "max_mmu_rmap_size", "mmu_unsync", "guest_mode", "lpages")
WAKE_CLUSTER_S = 0.001


def ensure_mounted(fs, where, probe):
    """Mounts fs on where unless probe is already there; True if it is then."""
    if os.path.exists(probe):
        return True
    r = subprocess.run(["mount", "-t", fs, fs, where], capture_output=True)
    if r.returncode and not os.path.exists(probe):
        print(f"linux-idle: cannot mount {fs} on {where}: "
              + r.stderr.decode(errors="replace").strip(), file=sys.stderr)
    return os.path.exists(probe)


def kvm_debugfs_dir(pid):
    """The runner kernel's KVM debugfs folder of the VM process pid created:
    <pid>-<fd>, one per VM (a VMM makes one)."""
    found = glob.glob(os.path.join(DEBUGFS, "kvm", f"{pid}-*"))
    return found[0] if len(found) == 1 else None


def kvm_counters(d):
    """Every counter file of one VM's KVM debugfs folder (per-vCPU counters
    summed over its vCPUs, as KVM's debugfs shows them)."""
    out = {}
    if not d:
        return None
    try:
        names = os.listdir(d)
    except OSError:
        return None
    for name in names:
        path = os.path.join(d, name)
        if not os.path.isfile(path):
            continue
        try:
            out[name] = int(density.read_text(path).split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


class HostTrace:
    """sched:sched_wakeup on the runner kernel, every task, CLOCK_MONOTONIC
    timestamps (trace_clock mono, the clock of time.monotonic), in overwrite
    mode: the newest events survive, so the buffer must hold the window, not
    the boot. Filtered to the VMMs' threads when read."""

    BUFFER_KB = 32768  # per CPU; ~60 bytes an event: ~500 000 events

    def __init__(self):
        self.ok = ensure_mounted("tracefs", TRACEFS, os.path.join(TRACEFS, "tracing_on"))
        self.why = None if self.ok else f"no tracefs at {TRACEFS}"

    def _w(self, name, value):
        with open(os.path.join(TRACEFS, name), "w") as f:
            f.write(f"{value}\n")

    def start(self):
        if not self.ok:
            return
        try:
            self._w("tracing_on", 0)
            self._w("trace_clock", "mono")
            self._w("buffer_size_kb", self.BUFFER_KB)
            self._w("set_event", "")
            self._w("events/sched/sched_wakeup/enable", 1)
            self._w("trace", "")
            self._w("tracing_on", 1)
        except OSError as e:
            self.ok, self.why = False, f"cannot set up host ftrace: {e}"

    def stop(self):
        """(timestamp s, woken tid) of every wakeup the buffer kept, oldest first."""
        if not self.ok:
            return []
        self._w("tracing_on", 0)
        wakes = []
        with open(os.path.join(TRACEFS, "trace"), errors="replace") as f:
            for line in f:
                if "sched_wakeup:" not in line:
                    continue
                head, _, tail = line.partition(": sched_wakeup:")
                try:
                    ts = float(head.split()[-1])
                    pid = int(tail.split(" pid=", 1)[1].split()[0])
                except (IndexError, ValueError):
                    continue
                wakes.append((ts, pid))
        self._w("events/sched/sched_wakeup/enable", 0)
        self._w("trace", "")
        self._w("buffer_size_kb", 1408)  # the kernel's default again
        return wakes


def distinct_instants(times):
    """Wake instants, wakes within WAKE_CLUSTER_S of a cluster's first counted
    as one: the times a host CPU had to leave idle for these VMs at least."""
    n, first = 0, None
    for t in sorted(times):
        if first is None or t - first > WAKE_CLUSTER_S:
            n, first = n + 1, t
    return n


def parse_census(text):
    """The guest's census lines: {"timer:fn": count, "irq:name": count, ...},
    lateness rows and the guest's own slept_ns."""
    counts, cpu_counts, lateness, slept = {}, {}, {}, None
    for raw in text.splitlines():
        line = raw.decode("utf-8", "replace").strip() if isinstance(raw, bytes) else raw.strip()
        if not line.startswith("lull-init: census "):
            continue
        words = dict(w.split("=", 1) for w in line.split()[2:] if "=" in w)
        verb = line.split()[2]
        if verb == "end":
            slept = int(words.get("slept_ns", 0))
        elif verb == "lateness":
            lateness[words["function"]] = {k: int(v) for k, v in words.items() if k != "function"}
        elif "count" in words and ("function" in words or "irq" in words):
            name = words.get("function") or words.get("irq")
            key = f"{words['kind']}:{name}"
            if "cpu" in words:
                cpu_counts[f"{key}@cpu{words['cpu']}"] = int(words["count"])
            else:
                counts[key] = int(words["count"])
    return counts, cpu_counts, lateness, slept


def lull_stats(path):
    """The per-vCPU APIC-timer figures of lull's --stats (the whole run)."""
    try:
        with open(path) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return None
    keep = ("apic_timer_fired", "apic_timer_deferred", "apic_timer_aligned",
            "apic_timer_rearmed", "host_wakeups", "halts")
    out = []
    for v in st.get("vcpus", []):
        row = {k: v.get(k) for k in keep}
        for h in ("deferred_delay_ns", "hard_lateness_ns"):
            if isinstance(v.get(h), dict):
                row[h] = {k: v[h].get(k) for k in ("count", "p50", "p99", "max") if k in v[h]}
        row["exits_by_reason"] = v.get("exits_by_reason")
        out.append(row)
    return out


def run_census_point(cfg, mode, logdir, host_trace):
    """N VMs of one mode at once; each VM's counters are taken when its own
    census start and end markers appear on its console (polled every 20 ms),
    so host and guest count over the same ~S seconds."""
    vms = [IdleVM(i, mode, logdir) for i in range(cfg.vms)]
    wakes, traced = [], False
    try:
        host_trace.start()
        traced = True
        t_trace0 = time.monotonic()
        for vm in vms:
            with open(vm.log, "wb") as out, open(vm.errlog, "wb") as err:
                vm.t_spawn = time.monotonic()
                try:
                    vm.popen = subprocess.Popen(command(cfg, mode, vm.stats),
                                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                                start_new_session=True,
                                                preexec_fn=density.set_pdeathsig)
                except OSError as e:
                    vm.failure = f"could not start: {e}"
                    continue
            density.OWNED[vm.popen.pid] = vm.popen
        deadline = time.monotonic() + cfg.boot_timeout + cfg.census_seconds + 30
        while time.monotonic() < deadline:
            waiting = 0
            for vm in vms:
                if vm.failure or vm.t_end:
                    continue
                out = vm.output()
                now = time.monotonic()
                if not vm.t_ready and READY in out:
                    vm.t_ready = now
                if vm.t_ready and not vm.t_start and CENSUS_START in out:
                    vm.t_start = now
                    vm.snap0 = density.snapshot(vm.popen.pid)
                    vm.kvm0 = kvm_counters(kvm_debugfs_dir(vm.popen.pid))
                if vm.t_start and CENSUS_END in out:
                    vm.snap1 = density.snapshot(vm.popen.pid)
                    vm.kvm1 = kvm_counters(kvm_debugfs_dir(vm.popen.pid))
                    vm.t_end = time.monotonic()
                    continue
                if b"lull-init: FAIL" in out:
                    vm.failure = "init: " + out.split(b"lull-init: FAIL", 1)[1].split(
                        b"\n")[0].decode("utf-8", "replace").strip()
                elif vm.popen.poll() is not None:
                    vm.failure = (f"exited with status {vm.popen.returncode} before the census "
                                  f"ended: {vm.last_line()}")
                elif not vm.t_ready and now - vm.t_spawn > cfg.boot_timeout:
                    vm.failure = f"no ready marker within {cfg.boot_timeout:g} s: {vm.last_line()}"
                else:
                    waiting += 1
            if not waiting:
                break
            time.sleep(0.02)
        for vm in vms:
            if not vm.failure and not vm.t_end:
                vm.failure = f"no census end marker in time: {vm.last_line()}"
        tids = set()
        for vm in vms:
            if vm.snap1:
                tids.update(int(t) for t in vm.snap1[1])
        wakes = [(t, pid) for t, pid in host_trace.stop() if pid in tids]
        traced = False
        # the guest prints its counts after the end marker; RSS/PSS at the same point
        done_by = time.monotonic() + 30
        for vm in vms:
            while (not vm.failure and CENSUS_DONE not in vm.output()
                   and time.monotonic() < done_by and vm.popen.poll() is None):
                time.sleep(0.05)
            if not vm.failure and CENSUS_DONE not in vm.output():
                vm.failure = f"no census done line: {vm.last_line()}"
            if vm.popen and vm.popen.poll() is None:
                vm.rss, vm.pss = density.smaps_rollup(vm.popen.pid)
    finally:
        if traced:
            host_trace.stop()
        stop_vms(vms)
    res = account(mode, vms)
    res["vcpus"] = cfg.vcpus
    ok = [vm for vm in vms if not vm.failure and vm.snap0 and vm.snap1]
    for vm, row in zip(vms, res["per_vm"]):
        if vm.failure or not (vm.snap0 and vm.snap1):
            continue
        dt = (vm.snap1[0] - vm.snap0[0]) / 1e9
        row["window_s"] = round(dt, 3)
        if vm.kvm0 and vm.kvm1:
            row["kvm_per_s"] = {k: round((vm.kvm1[k] - vm.kvm0.get(k, 0)) / dt, 2)
                                for k in sorted(vm.kvm1)
                                if vm.kvm1[k] - vm.kvm0.get(k, 0) and k not in KVM_GAUGES
                                and not k.endswith("_ns") and "tsc" not in k}
        counts, cpu_counts, lateness, slept = parse_census(vm.output())
        row["guest_counts"], row["guest_counts_per_cpu"] = counts, cpu_counts
        row["guest_lateness_ns"], row["guest_slept_ns"] = lateness, slept
        tid_set = {int(t) for t in vm.snap1[1]}
        mine = [t for t, pid in wakes if pid in tid_set and vm.t_start <= t <= vm.t_end]
        row["traced_wakeups_per_s"] = round(len(mine) / dt, 2) if host_trace.ok else None
        if MODE_SPEC[mode][0] is not None:
            row["lull_stats"] = lull_stats(vm.stats)
    # distinct wake instants across all the point's VMs, over the time every
    # VM was inside its census window (and the host trace was on)
    if ok and host_trace.ok:
        lo = max([vm.t_start for vm in ok] + [t_trace0])
        hi = min(vm.t_end for vm in ok)
        span = hi - lo
        kept_from = wakes[0][0] if wakes else None
        inside = [t for t, _ in wakes if lo <= t <= hi]
        res["common_window_s"] = round(span, 3)
        if span > 1:
            res["host_wakeups_traced_per_s"] = round(len(inside) / span, 2)
            res["distinct_wake_instants_per_s"] = round(distinct_instants(inside) / span, 2)
        else:
            res["distinct_wake_instants_why_none"] = (
                f"the VMs' census windows overlap only {span:.2f} s")
        res["host_trace_first_event"] = kept_from
    else:
        res["distinct_wake_instants_why_none"] = host_trace.why or "no VM measured"

    def med(vals):
        vals = [v for v in vals if v is not None]
        return round(statistics.median(vals), 2) if vals else None

    rows = [r for r in res["per_vm"] if r.get("window_s")]
    keys = sorted({k for r in rows for k in r.get("guest_counts", {})})
    res["guest_counts_per_20s"] = {
        k: med([r["guest_counts"].get(k, 0) * 20e9 / r["guest_slept_ns"]
                for r in rows if r.get("guest_slept_ns")]) for k in keys}
    kkeys = sorted({k for r in rows for k in (r.get("kvm_per_s") or {})})
    res["kvm_per_s"] = {k: med([(r.get("kvm_per_s") or {}).get(k, 0) for r in rows
                                if r.get("kvm_per_s") is not None]) for k in kkeys}
    late = [r["guest_lateness_ns"].get("all") for r in rows if r.get("guest_lateness_ns")]
    late = [x for x in late if x]
    if late:
        res["guest_hrtimer_lateness_ns"] = {
            "min": min(x["min_ns"] for x in late), "p50_median": med([x["p50_ns"] for x in late]),
            "p99_max": max(x["p99_ns"] for x in late), "max": max(x["max_ns"] for x in late),
            "n": sum(x["n"] for x in late)}
    dd = [v.get("deferred_delay_ns") for r in rows for v in (r.get("lull_stats") or [])]
    dd = [x for x in dd if x and x.get("count")]
    if dd:
        res["lull_deferred_delay_ns"] = {"count": sum(x["count"] for x in dd),
                                         "max": max(x.get("max") or 0 for x in dd)}
    res["traced_wakeups_per_s"] = med([r.get("traced_wakeups_per_s") for r in rows])
    return res


def census_report(results, cfg):
    """The census table (guest timer sources per mode, per 20 s) and the
    figures table (host cost per VM), both medians per VM."""
    modes = [r["mode"] for r in results]
    print(f"\ncensus: guest timer expiries per 20 s (median per VM), {cfg.vcpus} vCPU(s) per VM")
    keys = sorted({k for r in results for k in r.get("guest_counts_per_20s", {})},
                  key=lambda k: (k.split(":")[0] != "irq", -max(
                      (r.get("guest_counts_per_20s", {}).get(k) or 0) for r in results), k))
    print(f"{'source':<44}" + "".join(f" {m:>17}" for m in modes))
    for k in keys:
        print(f"{k:<44}" + "".join(
            f" {fmt(r.get('guest_counts_per_20s', {}).get(k), 0):>17}" for r in results))
    print(f"\nhost cost per VM (medians; KVM exits from {'the runner kernel debugfs' if cfg.kvm_debugfs else 'NOWHERE: no KVM debugfs'})")
    qemu = next((r for r in results if r["mode"] == "qemu"), None)
    rows = [("host wakeups/s (vol. switches)", lambda r: fmt(r["wakeups_per_s"], 2)),
            ("host wakeups/s (ftrace)", lambda r: fmt(r.get("traced_wakeups_per_s"), 2)),
            ("distinct wake instants/s, all VMs", lambda r: fmt(r.get("distinct_wake_instants_per_s"), 2)),
            ("CPU % of a core (emulated)", lambda r: fmt(r["cpu_pct"], 3)),
            ("CPU vs qemu", lambda r: fmt(r["cpu_pct"] / qemu["cpu_pct"], 2)
             if qemu and qemu["cpu_pct"] and r["cpu_pct"] is not None else "-"),
            ("RSS MiB", lambda r: fmt(r["rss_mib"])),
            ("PSS MiB", lambda r: fmt(r["pss_mib"])),
            ("guest hrtimer late p50 us", lambda r: fmt(
                (r.get("guest_hrtimer_lateness_ns") or {}).get("p50_median", None) and
                r["guest_hrtimer_lateness_ns"]["p50_median"] / 1e3, 0)),
            ("guest hrtimer late max ms", lambda r: fmt(
                (r.get("guest_hrtimer_lateness_ns") or {}).get("max", None) and
                r["guest_hrtimer_lateness_ns"]["max"] / 1e6, 2)),
            ("guest hrtimer late min us", lambda r: fmt(
                None if not r.get("guest_hrtimer_lateness_ns")
                else r["guest_hrtimer_lateness_ns"]["min"] / 1e3, 0)),
            ("lull deferred delay max ms", lambda r: fmt(
                (r.get("lull_deferred_delay_ns") or {}).get("max", None) and
                r["lull_deferred_delay_ns"]["max"] / 1e6, 2)),
            ("failed VMs", lambda r: str(r["failed"]))]
    rows += [(f"KVM {k}/s", (lambda k: lambda r: fmt(r.get("kvm_per_s", {}).get(k), 2))(k))
             for k in EXIT_KEYS]
    print(f"{'':<36}" + "".join(f" {m:>17}" for m in modes))
    for name, f in rows:
        print(f"{name:<36}" + "".join(f" {f(r):>17}" for r in results))


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def plot(results, cfg, out):
    """linux-idle.svg: wakeups/s and CPU % per VM, one bar per mode."""
    gp = shutil.which("gnuplot")
    rows = [r for r in results if r["wakeups_per_s"] is not None]
    if not gp or not rows:
        return None
    dat = os.path.join(out, "linux-idle.dat")
    with open(dat, "w") as f:
        f.write("# mode wakeups_per_s cpu_pct\n")
        for r in rows:
            # a log axis has no 0: a VM that never woke is drawn at 0.01
            f.write(f"{r['mode']} {max(r['wakeups_per_s'], 0.01):g} {max(r['cpu_pct'] or 0, 0.001):g}\n")
    svg = os.path.join(out, "linux-idle.svg")
    where = "emulated host (lull-nested): compare modes, not absolute CPU" if density.EMULATED else "host"
    script = f"""set terminal svg size 900,420 dynamic font 'sans,11'
set output '{svg}'
set multiplot layout 1,2 title 'Idle Linux VMs ({cfg.mem}, {cfg.vcpus} vCPU), median per VM; {where}'
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.7
set logscale y 10
set grid ytics
set xtics rotate by -30 noenhanced
unset key
set title 'host wakeups/s per VM'
plot '{dat}' using 2:xtic(1) lc rgb '#1b9e77'
set title 'host CPU, % of one core, per VM'
plot '{dat}' using 3:xtic(1) lc rgb '#7570b3'
unset multiplot
"""
    r = subprocess.run([gp], input=script.encode(), capture_output=True)
    if r.returncode:
        print("linux-idle: gnuplot: " + r.stderr.decode(errors="replace").strip(), file=sys.stderr)
        return None
    return svg


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="density.py linux-idle", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vms", type=int, default=4, metavar="N", help="idle VMs per mode (default 4)")
    ap.add_argument("--mem", default="128M", metavar="SIZE", help="guest RAM per VM (default 128M)")
    ap.add_argument("--seconds", type=float, default=10.0, metavar="S",
                    help="measurement window once every VM is at init (default 10)")
    ap.add_argument("--boot-timeout", type=float, default=300.0, metavar="S",
                    help="seconds for every VM to reach init (default 300: emulated hosts are slow)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES), metavar="LIST",
                    help="comma-separated subset of " + ",".join(MODES) +
                    " (default all but lull-no-pv-eoi, lull-no-advance and lull-halt-poll)")
    ap.add_argument("--build", default="build", metavar="DIR",
                    help="meson build folder: vmm/lull and tests/linux/initramfs.cpio (default build)")
    ap.add_argument("--kernel", default=None, metavar="BZIMAGE",
                    help="default: the bzImage lull-nested caches")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH")
    ap.add_argument("--ksm", type=float, default=0.0, metavar="S",
                    help="run the host's KSM, S seconds to merge before each window (root; "
                         "default 0: KSM as the host has it)")
    ap.add_argument("--keep-logs", default=None, metavar="DIR",
                    help="copy every VM's console, stderr and --stats there")
    ap.add_argument("--vcpus", type=int, default=1, choices=(1, 2, 4),
                    help="vCPUs per VM (default 1)")
    ap.add_argument("--census", action="store_true",
                    help="the census: init sleeps --census-seconds with the guest's timer "
                         "tracepoints on; host counters, KVM exits (debugfs) and host wakeups "
                         "(ftrace) over exactly that window (root, in the runner)")
    ap.add_argument("--census-seconds", type=float, default=20.0, metavar="S",
                    help="the census window, one guest sleep (default 20)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="write results.json and, with gnuplot, linux-idle.svg there (default: none)")
    cfg = ap.parse_args(argv)
    cfg.modes = [m for m in cfg.modes.split(",") if m]
    bad = [m for m in cfg.modes if m not in MODES]
    if bad:
        ap.error(f"--modes: unknown {', '.join(bad)}; choose from {', '.join(MODES)}")
    if cfg.vms < 1 or cfg.seconds <= 0:
        ap.error("--vms and --seconds must be positive")
    cfg.lull = os.path.abspath(os.path.join(cfg.build, "vmm", "lull"))
    cfg.initramfs = os.path.abspath(os.path.join(cfg.build, "tests", "linux", "initramfs.cpio"))
    cfg.kernel = cfg.kernel or cached_bzimage()
    if not cfg.kernel or not os.path.isfile(cfg.kernel):
        ap.error("no kernel: give --kernel, or run tests/nested/lull-nested once to cache one")
    if not os.path.isfile(cfg.initramfs):
        ap.error(f"{cfg.initramfs} is missing: run ninja -C {cfg.build}")
    if any(m != "qemu" for m in cfg.modes) and not os.access(cfg.lull, os.X_OK):
        ap.error(f"{cfg.lull} is missing: run ninja -C {cfg.build}")
    if "qemu" in cfg.modes and not shutil.which(cfg.qemu):
        ap.error(f"{cfg.qemu} is not installed")
    if cfg.keep_logs:
        try:
            os.makedirs(cfg.keep_logs, exist_ok=True)
        except OSError as e:
            ap.error(f"--keep-logs {cfg.keep_logs}: {e.strerror}")
    if cfg.census and cfg.ksm:
        ap.error("--census and --ksm: one at a time")
    if cfg.census_seconds <= 0 or cfg.census_seconds != int(cfg.census_seconds):
        ap.error("--census-seconds must be a whole positive number (the guest sleeps whole seconds)")
    if cfg.ksm < 0:
        ap.error("--ksm must be 0 or more seconds")
    if cfg.ksm and not os.access(os.path.join(KSM, "run"), os.W_OK):
        ap.error(f"--ksm: cannot write {KSM}/run (the host kernel has no KSM, or this is not root)")
    return cfg


def write_results(cfg, argv, results, partial=False):
    """results.json; after each point too (partial), so that a runner
    stopped by its --timeout still leaves the points it finished."""
    os.makedirs(cfg.out, exist_ok=True)
    with open(os.path.join(cfg.out, "results.json"), "w") as f:
        json.dump({"command": " ".join(["density.py", "linux-idle"] + argv),
                   "date": datetime.datetime.now().isoformat(timespec="seconds"),
                   "partial": partial, "emulated_host": density.EMULATED,
                   "kernel": cfg.kernel, "mem": cfg.mem, "ksm_merge_s": cfg.ksm,
                   "vcpus": cfg.vcpus, "census_s": cfg.census_seconds if cfg.census else None,
                   "qemu_cpu": qemu_ref.describe(*qemu_ref.probe(cfg.qemu)) + QEMU_CPU_FEATURES, "qemu_append": QEMU_APPEND.strip(),
                   "results": results}, f, indent=1)
        f.write("\n")


def main(argv):
    cfg = parse_args(argv)
    kvm, hardware = qemu_ref.host_kvm(cfg.lull)
    if not hardware:
        print(f"linux-idle: /dev/kvm is {kvm or 'missing or not accessible'}: no KVM here runs "
              "Debian's kernel; run it in tests/nested/lull-nested", file=sys.stderr)
        return 69
    results = []
    logdir = tempfile.mkdtemp(prefix="lull-linux-idle-")
    ksm_was = ksm_read("run") if cfg.ksm else None
    host_trace = None
    if cfg.census:
        cfg.kvm_debugfs = ensure_mounted("debugfs", DEBUGFS, os.path.join(DEBUGFS, "kvm"))
        if not cfg.kvm_debugfs:
            print(f"linux-idle: no KVM debugfs at {DEBUGFS}/kvm: exits per reason come only "
                  "from lull's --stats (whole run, lull modes only); none for QEMU",
                  file=sys.stderr)
        host_trace = HostTrace()
        if not host_trace.ok:
            print(f"linux-idle: {host_trace.why}: no distinct wake instants", file=sys.stderr)
    try:
        for mode in cfg.modes:
            if cfg.census:
                print(f"linux-idle: {mode}: {cfg.vms} VMs, census of {cfg.census_seconds:g} s",
                      file=sys.stderr)
                res = run_census_point(cfg, mode, logdir, host_trace)
            else:
                res = run_point(cfg, mode, logdir)
            results.append(res)
            if cfg.out:
                write_results(cfg, argv, results, partial=True)
            for r in res["per_vm"]:
                if r["failure"]:
                    print(f"linux-idle: {mode} VM {r['vm']} failed: {r['failure']}", file=sys.stderr)
            if cfg.keep_logs:
                for name in os.listdir(logdir):
                    shutil.copy(os.path.join(logdir, name), cfg.keep_logs)
    finally:
        density.kill_owned()
        shutil.rmtree(logdir, ignore_errors=True)
        if ksm_was is not None:
            ksm_write("run", ksm_was)
    print(f"linux-idle: {cfg.vms} idle Linux VMs per mode, {cfg.vcpus} vCPU(s), {cfg.mem} each, "
          + (f"census window {cfg.census_seconds:g} s" if cfg.census else f"window {cfg.seconds:g} s")
          + f"; kernel {os.path.basename(cfg.kernel)}; medians per VM")
    if density.EMULATED:
        print("EMULATED HOST (lull-nested): CPU % is of a machine QEMU emulates; compare the "
              "modes with each other. Wakeups/s carry over to real hardware.")
    if cfg.ksm:
        print(f"KSM on, {cfg.ksm:g} s to merge before each window; saved: pages_sharing at its end, "
              "for all the point's VMs; ksmd: its CPU % of one core over the window")
    print(f"{'mode':<20} {'wakeups/s':>10} {'CPU %':>7} {'RSS MiB':>8} {'PSS MiB':>8} "
          f"{'init s':>7} {'max s':>7} {'failed':>6}"
          + (f" {'saved MiB':>9} {'ksmd %':>7}" if cfg.ksm else ""))
    for r in results:
        print(f"{r['mode']:<20} {fmt(r['wakeups_per_s']):>10} {fmt(r['cpu_pct'], 2):>7} "
              f"{fmt(r['rss_mib']):>8} {fmt(r['pss_mib']):>8} {fmt(r['boot_to_init_s']):>7} "
              f"{fmt(r['boot_to_init_max_s']):>7} {r['failed']:>6}"
              + (f" {fmt(r['ksm_saved_mib']):>9} {fmt(r['ksm']['ksmd_cpu_pct'], 2):>7}"
                 if cfg.ksm else ""))
    if cfg.census:
        census_report(results, cfg)
    if cfg.out:
        write_results(cfg, argv, results)
        svg = plot(results, cfg, cfg.out)
        print(f"results: {os.path.join(cfg.out, 'results.json')}"
              + (f"; plot: {svg}" if svg else "; plot: none (no gnuplot, or nothing measured)"))
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
