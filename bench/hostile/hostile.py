#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hostile: a stock Linux guest whose user space turns timers and
interrupts against its VMM, beside well-behaved neighbours; lull and
QEMU/KVM side by side.

    bench/hostile/hostile.py [--vcpus 1,2] [--runs 3] [--seconds 30]
                             [--neighbours 4] [--stressors LIST] [--out DIR]

The hostile guest boots Debian's stock kernel (the bzImage
tests/nested/lull-nested caches) with an initramfs that holds lull-init and
Debian's stress-ng (installed on this machine: apt-get install stress-ng;
packed with its libraries), init in stress mode (lull_init=stress,
tests/linux/init.c), which runs

    stress-ng --STRESSOR V ... -t S+10s --metrics-brief

with V the guest's vCPUs for each stressor of --stressors (default: timer
at 1 MHz, hrtimers, clock, timerfd, itimer, cyclic with SCHED_FIFO, and
tlb-shootdown and membarrier, which make the kernel send IPIs), all at once,
and powers off.

The neighbours are lull `tick` guests (a 1 kHz deferrable tick and a 10 Hz
hard work timer; bench/soak/soak.py's VMs), each reconciled after it ends
as the soak does: every timer delivered, merged or missed by the policy,
or counted unaccounted.

Per run and vCPU count, the phases of --phases in turn (all three by
default), each the neighbours for S seconds:

  alone   the neighbours only
  lull    beside the hostile guest on lull (deferrable, default options)
  qemu    beside the hostile guest on QEMU/KVM (microvm, KVM's in-kernel
          local APIC: bench/density/linux_idle.py's reference)

From the moment stress-ng starts to its end, per VM: host CPU (% of one
core) and wakeups/s (its threads' voluntary switches), KVM exits/s (the
runner kernel's KVM debugfs, the same counters for both VMMs; none
where debugfs is not there); for the hostile guest its own work (local
timer interrupts/s from its /proc/interrupts, stress-ng's bogo ops/s per
stressor) and, for lull, the CPU of its threads other than the vCPUs';
for the neighbours, lull's hard-timer lateness (p50/p99/max, --stats) and
the soak's reconciliation. --neighbour-arg=--trace-late makes each neighbour
name, per hard timer later than 1 ms, where its time went (a line on its
stderr, runs/*/vm*.err; bench/latency/late_summary.py sums them), and
charges a thread preempted in lull's own work to `preempted`, not `vmm`.
A lull that ends by a signal (SIGSYS: a system call its sandbox forbids)
is a crash; one that does not end, a hang.

Where /dev/kvm is missing or is not hardware (kvm_pvm, which cannot run
Debian's kernel) the script runs itself inside tests/nested/lull-nested
(under flock /tmp/lull-nested.lock), every phase in one runner boot: there
CPU and time are an emulated machine's, compared side by side only.
Exit status 1 if a VM crashed or hung, a neighbour failed or has timers
unaccounted. Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for sub in (("bench", "density"), ("bench", "soak"), ("scripts",)):
    sys.path.insert(0, os.path.join(ROOT, *sub))
import density  # noqa: E402  (snapshot, set_pdeathsig, OWNED)
import linux_idle  # noqa: E402  (vm_command, the cached kernel, KVM debugfs)
import in_runner  # noqa: E402  (this script again, inside the nested runner)
import program_files  # noqa: E402  (stress-ng's interpreter and libraries)
import qemu_ref  # noqa: E402  (host_kvm)
import soak  # noqa: E402  (the neighbours: VM, reconcile)

MKINITRAMFS = os.path.join(ROOT, "scripts", "mkinitramfs")
STRESS_NG = "/usr/bin/stress-ng"
CONSOLE = "ttyS0,115200"
PHASES = ("alone", "lull", "qemu")
DEFAULT_STRESSORS = "timer,hrtimers,clock,timerfd,itimer,cyclic,tlb-shootdown,membarrier"
# per stressor, what it is given beyond its instance count
STRESSOR_ARGS = {"timer": ["--timer-freq", "1000000"],
                 "cyclic": ["--cyclic-policy", "fifo"]}
# stress-ng outlives the neighbours' window by this much: they start after
# its start marker, within a second
STRESS_SLACK_S = 10
START = re.compile(r"lull-init: stress start monotonic_ns=\d+")
DONE = re.compile(r"lull-init: stress done monotonic_ns=\d+ seconds=([\d.]+) status=(\d+) "
                  r"local_timer_irqs=(\d+)")
# --metrics-brief: "stress-ng: metrc: [2] hrtimers  668398  3.00  0.51  3.94  222487.64  150034.77"
# (bogo ops, real, user and system seconds, bogo ops/s of real time, of CPU time)
METRIC = re.compile(r"\] (\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")
FAIL, PANIC = linux_idle.FAIL, linux_idle.PANIC


def log(msg):
    print(f"hostile: {msg}", file=sys.stderr, flush=True)


class Error(Exception):
    pass


def build_initramfs(cfg):
    init = os.path.join(cfg.build, "tests", "linux", "lull-init")
    if not os.path.isfile(init):
        raise Error(f"{init} is missing: run ninja -C {cfg.build}")
    if not os.path.isfile(STRESS_NG):
        raise Error(f"{STRESS_NG} is missing: apt-get install stress-ng (Debian's package)")
    try:
        files = program_files.program_files("/", STRESS_NG, "this machine")
    except program_files.Missing as e:
        raise Error(str(e))
    os.makedirs(os.path.dirname(cfg.initramfs), exist_ok=True)
    cmd = [sys.executable, MKINITRAMFS, "-o", cfg.initramfs]
    for f in files:
        cmd += ["--file", f]
    r = subprocess.run(cmd + [init], capture_output=True, text=True)
    if r.returncode:
        raise Error(f"mkinitramfs: {r.stderr.strip()}")


def stress_args(cfg, vcpus):
    words = []
    for s in cfg.stressors:
        words += [f"--{s}", str(vcpus)] + STRESSOR_ARGS.get(s, [])
    return " ".join(words + ["-t", f"{cfg.seconds + STRESS_SLACK_S}s", "--metrics-brief"])


# --------------------------------------------------------------------------
# the hostile VM


class Hostile:
    """The hostile guest on one VMM, from spawn to its stress-ng's end."""

    def __init__(self, cfg, vmm, vcpus, name):
        self.vmm, self.name = vmm, name
        self.console = os.path.join(cfg.out, "runs", name + ".console")
        self.errlog = os.path.join(cfg.out, "runs", name + ".err")
        self.stats = os.path.join(cfg.out, "runs", name + ".stats.json") if vmm == "lull" else None
        vm_cfg = argparse.Namespace(qemu=cfg.qemu, lull=cfg.lull, mem=cfg.mem, vcpus=vcpus,
                                    kernel=cfg.kernel, initramfs=cfg.initramfs)
        init = f'lull_init=stress lull_stress="{stress_args(cfg, vcpus)}"'
        timeout = int(cfg.boot_timeout + cfg.seconds + STRESS_SLACK_S + 120)
        self.cmd = linux_idle.vm_command(vm_cfg, "lull-deferrable" if vmm == "lull" else "qemu",
                                         init, self.stats, timeout, console=CONSOLE)
        self.popen = None
        self.snap0 = self.snap1 = self.kvm0 = self.kvm1 = None
        self.failure = None

    def text(self):
        with open(self.console, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def start(self):
        with open(self.console, "wb") as out, open(self.errlog, "wb") as err:
            self.popen = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=err, start_new_session=True,
                                      preexec_fn=density.set_pdeathsig)
        density.OWNED[self.popen.pid] = self.popen

    def wait_for(self, pattern, timeout):
        """The match of pattern on the console, or None with the failure set."""
        t0 = time.monotonic()
        while True:
            seen = self.text()
            m = pattern.search(seen)
            if m:
                return m
            if PANIC in seen:
                self.failure = "guest kernel panic: " + linux_idle.said_after(seen, PANIC)
            elif FAIL in seen:
                self.failure = "init: " + linux_idle.said_after(seen, FAIL)
            elif self.popen.poll() is not None:
                self.failure = self.ended_how()
            elif time.monotonic() - t0 > timeout:
                self.failure = f"hang: no '{pattern.pattern[:30]}...' within {timeout:g} s"
            if self.failure:
                return None
            time.sleep(0.2)

    def ended_how(self):
        rc = self.popen.returncode
        if rc is not None and rc < 0:
            sig = signal.Signals(-rc).name
            why = " (a system call lull's sandbox forbids)" if -rc == signal.SIGSYS else ""
            return f"crash: {self.vmm} ended by {sig}{why}"
        return f"{self.vmm} exited with status {rc} before stress-ng ended"

    def mark(self, first):
        snap = density.snapshot(self.popen.pid)
        kvm = linux_idle.kvm_counters(linux_idle.kvm_debugfs_dir(self.popen.pid))
        if first:
            self.snap0, self.kvm0 = snap, kvm
        else:
            self.snap1, self.kvm1 = snap, kvm

    def row(self, done):
        r = {"vmm": self.vmm, "failure": self.failure, "exit_status": self.popen.returncode,
             "console": os.path.join("runs", os.path.basename(self.console))}
        if done:
            seconds, status, irqs = float(done.group(1)), int(done.group(2)), int(done.group(3))
            r.update(stress_seconds=seconds, stress_status=status,
                     local_timer_irqs_per_s=round(irqs / seconds, 1),
                     bogo_ops_per_s={m.group(1): float(m.group(6)) for m in
                                     METRIC.finditer(self.text()) if m.group(1) != "stressor"})
        if self.snap0 and self.snap1:
            dt, cpu, vol = density.window_usage(self.snap0, self.snap1)
            r.update(window_s=round(dt, 2), cpu_pct=round(cpu / dt / 1e7, 2),
                     wakeups_per_s=round(vol / dt, 1))
            if self.vmm == "lull":
                _, others, _ = density.window_usage(self.snap0, self.snap1,
                                                    lambda n: not n.startswith("vcpu"))
                r["non_vcpu_threads_cpu_pct"] = round(others / dt / 1e7, 3)
            if self.kvm0 and self.kvm1:
                r["exits_per_s"] = round((self.kvm1.get("exits", 0) -
                                          self.kvm0.get("exits", 0)) / dt, 1)
        if self.stats and os.path.exists(self.stats):
            try:
                with open(self.stats) as f:
                    st = json.load(f)
                r["lull_exits_by_reason"] = [c["exits_by_reason"] for c in st["vcpus"]]
                r["lull_main_thread_cpu_ns"] = st.get("main_thread_cpu_ns")
                r["lull_periods_floored"] = sum(c.get("periods_floored", 0) for c in st["vcpus"])
            except (OSError, ValueError, KeyError) as e:
                r["lull_stats_error"] = str(e)
        return r


# --------------------------------------------------------------------------
# one phase


def neighbour_cfg(cfg):
    return argparse.Namespace(seconds=cfg.seconds, tick_us=1000, work_ms=100,
                              missed_ticks="one", idle_vcpus=1, lull=cfg.lull,
                              lull_args=cfg.neighbour_args,
                              guests=os.path.join(cfg.build, "guests"))


def run_phase(cfg, phase, vcpus, run, attempt):
    name = f"{vcpus}vcpu-{phase}-{run}" + (f"-attempt{attempt + 1}" if attempt else "")
    tmp = os.path.join(cfg.out, "runs", name)
    os.makedirs(tmp, exist_ok=True)
    hostile, done = None, None
    res = {"phase": phase, "vcpus": vcpus, "run": run}
    try:
        if phase != "alone":
            hostile = Hostile(cfg, phase, vcpus, name + "-hostile")
            hostile.start()
            if not hostile.wait_for(START, cfg.boot_timeout):
                res["hostile"] = hostile.row(None)
                return res
            hostile.mark(True)
        ncfg = neighbour_cfg(cfg)
        vms = [soak.VM(i, "tick", ncfg, tmp) for i in range(cfg.neighbours)]
        for vm in vms:
            vm.start()
        for vm in vms:
            if not vm.pid:
                continue
            _, status, ru = os.wait4(vm.pid, 0)
            vm.status = os.waitstatus_to_exitcode(status)
            vm.cpu_s = ru.ru_utime + ru.ru_stime
        if hostile:
            # the window ends with the neighbours: a guest that has powered
            # off has no threads and no KVM counters left to read
            hostile.mark(False)
        res["neighbours"] = [soak.reconcile(vm) for vm in vms]
        for vm, row in zip(vms, res["neighbours"]):
            try:
                with open(vm.stats) as f:
                    st = json.load(f)
                row["hard_lateness_ns"] = st["vcpus"][0]["hard_lateness_ns"]
                # where the time of each hard timer later than 1 ms went
                row["late_causes"] = {k: v for k, v in st["vcpus"][0]["lateness"].items()
                                      if isinstance(v, dict) and v.get("ns")}
            except (OSError, ValueError, KeyError, IndexError):
                row["hard_lateness_ns"] = row["late_causes"] = None
            if vm.status is not None and vm.status < 0:
                row["failed"] = f"crash: ended by {signal.Signals(-vm.status).name}"
        if hostile:
            done = hostile.wait_for(DONE, STRESS_SLACK_S + 120)
    finally:
        if hostile:
            linux_idle.stop_vms([hostile])  # SIGTERM: lull writes its --stats then too
            if done and (hostile.popen.returncode or 0) < 0 and not hostile.failure:
                hostile.failure = hostile.ended_how()  # killed after stress-ng ended
            res["hostile"] = hostile.row(done)
    return res


# --------------------------------------------------------------------------
# the report


def neighbour_summary(res):
    rows = res.get("neighbours") or []
    ok = [r for r in rows if not r["failed"]]
    lat = [r["hard_lateness_ns"] for r in ok if r.get("hard_lateness_ns")]
    return {
        "vms": len(rows), "failed": len(rows) - len(ok),
        "unaccounted": sum(r["unaccounted"] for r in rows),
        "wakeups_per_s": statistics.median([r["host_wakeups"] / r["wall_s"] for r in ok])
        if ok else None,
        "cpu_pct": statistics.median([100 * r["host_cpu_s"] / r["wall_s"] for r in ok])
        if ok else None,
        "p50_us": statistics.median([l["p50"] / 1e3 for l in lat]) if lat else None,
        "p99_us": statistics.median([l["p99"] / 1e3 for l in lat]) if lat else None,
        "max_us": max(l["max"] / 1e3 for l in lat) if lat else None,
        # over every neighbour: the late timers' time by cause, ms
        "late_ms": {c: round(sum((r.get("late_causes") or {}).get(c, {}).get("ns", 0)
                                 for r in ok) / 1e6, 1)
                    for c in sorted({c for r in ok for c in (r.get("late_causes") or {})})},
    }


def f(v, nd=1):
    return "-" if v is None else f"{v:.{nd}f}"


def report(results):
    print("\nneighbours (lull `tick` guests), medians per VM; lateness: lull's --stats, "
          "deadline to injection")
    print(f"{'vCPUs':>5} {'run':>3} {'phase':6} {'VMs':>4} {'failed':>6} {'unacc.':>6} "
          f"{'wakeups/s':>9} {'CPU %':>6} {'p50 µs':>8} {'p99 µs':>8} {'max µs':>9}  "
          "late > 1 ms, ms by cause (all VMs)")
    for r in results:
        s = neighbour_summary(r)
        phase = r["phase"] + ("*" if r.get("retried") else "")
        print(f"{r['vcpus']:>5} {r['run']:>3} {phase:6} {s['vms']:>4} {s['failed']:>6} "
              f"{s['unaccounted']:>6} {f(s['wakeups_per_s'], 2):>9} {f(s['cpu_pct'], 2):>6} "
              f"{f(s['p50_us']):>8} {f(s['p99_us']):>8} {f(s['max_us']):>9}  "
              + (" ".join(f"{c} {v}" for c, v in s["late_ms"].items()) or "-"))
    if any(r.get("retried") for r in results):
        print("(* an attempt whose hostile guest panicked, run again)")
    print("\nthe hostile guest: CPU, wakeups and exits over the neighbours' run; "
          "its work over stress-ng's")
    print(f"{'vCPUs':>5} {'run':>3} {'VMM':5} {'CPU %':>7} {'wakeups/s':>9} {'exits/s':>9} "
          f"{'lull non-vCPU %':>15} {'LOC irq/s':>9}  bogo ops/s (per stressor) / failure")
    for r in results:
        h = r.get("hostile")
        if not h:
            continue
        ops = " ".join(f"{k}={v:.0f}" for k, v in (h.get("bogo_ops_per_s") or {}).items())
        print(f"{r['vcpus']:>5} {r['run']:>3} {h['vmm']:5} {f(h.get('cpu_pct')):>7} "
              f"{f(h.get('wakeups_per_s')):>9} {f(h.get('exits_per_s')):>9} "
              f"{f(h.get('non_vcpu_threads_cpu_pct'), 3):>15} "
              f"{f(h.get('local_timer_irqs_per_s'), 0):>9}  {h['failure'] or ops}")
    print("\nlull / QEMU/KVM, the hostile guest's own work in the same run")
    for r in results:
        if r["phase"] != "lull" or not r.get("hostile"):
            continue
        q = next((x.get("hostile") for x in results if x["phase"] == "qemu"
                  and x["vcpus"] == r["vcpus"] and x["run"] == r["run"]
                  and not x.get("retried")), None)
        lh = r["hostile"]
        if not q or q["failure"] or lh["failure"]:
            continue
        parts = [f"LOC irq/s {lh['local_timer_irqs_per_s'] / q['local_timer_irqs_per_s']:.2f}"]
        for k, v in lh["bogo_ops_per_s"].items():
            if q["bogo_ops_per_s"].get(k):
                parts.append(f"{k} {v / q['bogo_ops_per_s'][k]:.2f}")
        print(f"  {r['vcpus']} vCPU(s), run {r['run']}: " + ", ".join(parts))


def bad(results):
    """Lines for what makes the exit status 1."""
    out = []
    for r in results:
        h = r.get("hostile")
        if h and h["failure"] and (h["failure"].startswith(("crash", "hang"))):
            out.append(f"{r['vcpus']} vCPU(s) run {r['run']}: hostile on {h['vmm']}: "
                       f"{h['failure']}")
        for n in r.get("neighbours") or []:
            if n["failed"] or n["unaccounted"]:
                out.append(f"{r['vcpus']} vCPU(s) run {r['run']} {r['phase']}: neighbour "
                           f"{n['vm']}: {n['failed'] or '; '.join(n['reasons'])}")
    return out


# --------------------------------------------------------------------------
# command line


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="hostile.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vcpus", default="1,2", metavar="LIST",
                    help="the hostile guest's vCPU counts (default 1,2)")
    ap.add_argument("--runs", type=int, default=3, metavar="R",
                    help="runs of the phases, interleaved (default 3)")
    ap.add_argument("--phases", default=",".join(PHASES), metavar="LIST",
                    help="which of alone (the neighbours by themselves), lull and qemu (beside "
                         f"that VMM's hostile guest) to run (default {','.join(PHASES)})")
    ap.add_argument("--seconds", type=int, default=30, metavar="S",
                    help="the neighbours' run, inside stress-ng's (default 30)")
    ap.add_argument("--neighbours", type=int, default=4, metavar="N",
                    help="lull `tick` VMs beside the hostile guest (default 4)")
    ap.add_argument("--stressors", default=DEFAULT_STRESSORS, metavar="LIST",
                    help=f"stress-ng's stressors, all at once (default {DEFAULT_STRESSORS})")
    ap.add_argument("--neighbour-arg", action="append", default=[], metavar="ARG",
                    dest="neighbour_args",
                    help="one more `lull run` option for every neighbour, e.g. "
                         "--neighbour-arg=--trace-late (repeatable)")
    ap.add_argument("--mem", default="256M", metavar="SIZE",
                    help="the hostile guest's RAM (default 256M)")
    ap.add_argument("--build", default="build", metavar="DIR",
                    help="meson build folder: vmm/lull, guests/, tests/linux/lull-init "
                         "(default build)")
    ap.add_argument("--kernel", default=None, metavar="BZIMAGE",
                    help="default: the bzImage tests/nested/lull-nested caches")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH")
    ap.add_argument("--boot-timeout", type=float, default=300, metavar="S",
                    help="seconds for the hostile guest to start stress-ng (default 300)")
    ap.add_argument("--retries", type=int, default=1, metavar="K",
                    help="run a phase again, up to K times, when the hostile guest's kernel "
                         "panicked (QEMU/KVM's does now and then in the nested runner); every "
                         "attempt is kept in the results (default 1)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="results folder (default BUILD/hostile/DATE-TIME)")
    in_runner.add_options(ap, "3G")
    ap.add_argument("--report", default=None, metavar="DIR",
                    help="print the tables of a saved run (DIR/results.json), then exit")
    cfg = ap.parse_args(argv)
    cfg.inner = cfg._inner
    if cfg.report:
        return cfg
    try:
        cfg.vcpus = [int(v) for v in cfg.vcpus.split(",") if v]
    except ValueError:
        ap.error(f"--vcpus {cfg.vcpus}: not a list of numbers")
    cfg.stressors = [s for s in cfg.stressors.split(",") if s]
    cfg.phases = [p for p in cfg.phases.split(",") if p]
    unknown = [p for p in cfg.phases if p not in PHASES]
    if unknown or not cfg.phases:
        ap.error(f"--phases {','.join(unknown) or '(none)'}: each must be one of "
                 f"{', '.join(PHASES)}")
    if not cfg.vcpus or min(cfg.vcpus) < 1 or cfg.runs < 1 or cfg.seconds < 1 \
            or cfg.neighbours < 0 or not cfg.stressors:
        ap.error("--vcpus, --runs, --seconds and --stressors must be positive, "
                 "--neighbours not negative")
    cfg.build = os.path.abspath(cfg.build)
    cfg.lull = os.path.join(cfg.build, "vmm", "lull")
    cfg.initramfs = os.path.join(cfg.build, "bench", "hostile", "stress-initramfs.cpio")
    cfg.kernel = cfg.kernel or linux_idle.cached_bzimage()
    if not cfg.kernel or not os.path.isfile(cfg.kernel):
        ap.error("no kernel: give --kernel, or run tests/nested/lull-nested once to cache one")
    cfg.kernel = os.path.abspath(cfg.kernel)
    if not os.access(cfg.lull, os.X_OK):
        ap.error(f"{cfg.lull} is missing: run ninja -C {cfg.build}")
    cfg.out = os.path.abspath(cfg.out or os.path.join(
        cfg.build, "hostile", datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    return cfg


def measure(cfg):
    linux_idle.ensure_mounted("debugfs", "/sys/kernel/debug", os.path.join(
        "/sys/kernel/debug", "kvm"))
    os.makedirs(os.path.join(cfg.out, "runs"), exist_ok=True)
    results, t0 = [], time.monotonic()
    for run in range(1, cfg.runs + 1):
        for vcpus in cfg.vcpus:
            for phase in cfg.phases:
                log(f"{vcpus} vCPU(s), {phase}, run {run} of {cfg.runs} "
                    f"({time.monotonic() - t0:.0f} s in)")
                for attempt in range(1 + cfg.retries):
                    r = run_phase(cfg, phase, vcpus, run, attempt)
                    r["attempt"] = attempt
                    why = (r.get("hostile") or {}).get("failure") or ""
                    if not why.startswith("guest kernel panic") or attempt == cfg.retries:
                        break
                    # QEMU/KVM's guest panics in the nested runner (docs/benchmarks.md)
                    log(f"  the hostile guest: {why}; again")
                    r["retried"] = True
                    results.append(r)
                s = neighbour_summary(r)
                h = r.get("hostile") or {}
                log(f"  neighbours: {s['failed']} failed, {s['unaccounted']} unaccounted, "
                    f"p99 {f(s['p99_us'])} µs"
                    + (f"; hostile: {h['failure'] or 'done'}, LOC irq/s "
                       f"{f(h.get('local_timer_irqs_per_s'), 0)}" if h else ""))
                results.append(r)
                with open(os.path.join(cfg.out, "results.json"), "w") as out:
                    json.dump({"command": cfg.command,
                               "host_clocksource": in_runner.host_clocksource(),
                               "results": results}, out, indent=1)
    return results


def run_nested(cfg, argv):
    timeout = len(cfg.vcpus) * cfg.runs * 3 * (cfg.seconds + 200) + 300
    return in_runner.rerun_inside(__file__, argv, cfg.out, cfg.runner_mem, timeout, log,
                                  cfg.runner_tsc)[0]


def load(out):
    with open(os.path.join(out, "results.json")) as fh:
        return json.load(fh)["results"]


def finish(results, out):
    report(results)
    problems = bad(results)
    for p in problems:
        log(p)
    print(f"\nresults: {os.path.join(out, 'results.json')}")
    return 1 if problems else 0


def main(argv):
    cfg = parse_args(argv)
    if cfg.report:
        return finish(load(cfg.report), os.path.abspath(cfg.report))
    cfg.command = " ".join(["bench/hostile/hostile.py"] + [shlex.quote(a) for a in argv
                                                          if a != "--_inner"])
    try:
        if not cfg.inner:
            build_initramfs(cfg)
        elif not os.path.isfile(cfg.initramfs):
            raise Error(f"{cfg.initramfs} is missing (the script builds it before the runner)")
    except Error as e:
        log(str(e))
        return 1
    os.makedirs(cfg.out, exist_ok=True)
    kvm, hardware = qemu_ref.host_kvm(cfg.lull)
    nested = cfg.nested == "always" or (cfg.nested == "auto" and not hardware)
    if nested and not cfg.inner:
        rc = run_nested(cfg, argv)
        if not os.path.exists(os.path.join(cfg.out, "results.json")):
            log(f"the nested run left no results.json (exit status {rc})")
            return 1
        results = load(cfg.out)
    else:
        if not hardware:
            log(f"/dev/kvm is {kvm or 'missing or not accessible'}: no KVM here runs "
                "Debian's kernel (--nested auto runs inside tests/nested/lull-nested)")
            return 69
        if not shutil.which(cfg.qemu):
            log(f"{cfg.qemu} is not installed")
            return 69
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            results = measure(cfg)
        finally:
            density.kill_owned()
        if cfg.inner:
            return 0
    return finish(results, cfg.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
