#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""apic-compare: the local APIC timer under lull and under KVM's in-kernel APIC.

Runs the `apic-tick` guest (a 1 kHz tick on the local APIC timer, halting
between ticks; docs/guests.md) one VM at a time, for S seconds each, and
prints two tables.

The comparison, per timer mode (one-shot, periodic, TSC-deadline) and VMM:
  lull-deferrable   lull run --timer-mode deferrable (APIC timer hard)
  lull-strict       lull run --timer-mode strict
  lull-no-advance   lull deferrable with --no-timer-advance: the APIC timer
                    woken at its expiry (not in the default --vmms)
  qemu              qemu-system-x86_64 -accel kvm -cpu host
                    -machine microvm,pit=off,pic=off,rtc=off: KVM's APIC
The deferral policy, for a periodic tick (--policy-hz, default 1000):
lull deferrable with the default policy (--apic-max-defer 0: hard), with
--apic-max-defer at each of --defer-bounds, and lull strict.

Every figure is taken around the ticks alone: the guest prints
"apic-tick: start" just before it arms the timer and "apic-tick: stop"
just after it stops it, and the host's counters are read when each line
arrives:
  interrupts       the guest's ticks= (timer interrupts it handled)
  KVM exits/irq    KVM's own exit counter (debugfs, the VM's
                   /sys/kernel/debug/kvm/PID-FD/exits; the global
                   kvm/exits when there is no per-VM folder: one VM runs at
                   a time) over the window, per interrupt. Every VM exit,
                   those KVM handles itself included.
  lull exits/irq   lull's --stats "exits" (exits to lull, per vCPU, summed)
                   over the whole run, per interrupt: boot and the summary
                   line included (~100 exits)
  wakeups/s        voluntary context switches of all the VM's threads
                   (/proc/PID/task/*/status) over the window
  CPU ms/s         utime + stime of the VM process (/proc/PID/stat) over
                   the window; schedstat's ns in the JSON
(The guest halts 300 ms after "stop" before it prints its summary, so
that the threads are still there to be read.)
  late p50/p99     the guest's own lateness of each tick against its ideal
                   deadline, in its clock (lull's pvclock, kvmclock); signed
  early            ticks before their deadline, over all runs: a fault
                   (FAIL) on a TSC-stable clock; without one (the nested
                   runner) the clock's own steps, not failed (docs/guests.md)
Medians over --repeat runs, interleaved so that a drifting host hits every
row alike. debugfs needs root (mounted when missing); without it the KVM
columns are empty.

Where /dev/kvm is missing the script runs itself inside
tests/nested/lull-nested (a standard kvm_amd under QEMU's emulation, under
flock /tmp/lull-nested.lock: one nested run at a time) and says so. There
absolute CPU figures are emulated; counts and ratios carry over.
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import qemu_ref  # noqa: E402  (the QEMU/KVM reference's one command line)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tests", "nested", "lull-nested")
NESTED_LOCK = "/tmp/lull-nested.lock"
DEBUGFS = "/sys/kernel/debug"
KVM_DEBUGFS = DEBUGFS + "/kvm"
JSON_BEGIN = "--- apic-compare results ---"
JSON_END = "--- end of apic-compare results ---"
MODES = ("oneshot", "periodic", "deadline")
VMMS = ("lull-deferrable", "lull-strict", "qemu", "lull-no-advance")
DEFAULT_VMMS = VMMS[:-1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
SUMMARY_RE = re.compile(r"^apic-tick: (PASS|FAIL|SKIP)\b(.*)$")
# KVM's counters worth keeping in the JSON besides "exits"
KVM_KEYS = ("exits", "halt_exits", "irq_exits", "irq_window_exits",
            "io_exits", "mmio_exits", "irq_injections", "halt_wakeup",
            "request_irq_exits", "signal_exits", "insn_emulation")


def log(msg):
    print(f"apic-compare: {msg}", file=sys.stderr, flush=True)


def parse_ns(text):
    """'4ms', '250us', '1000000' (ns) -> ns."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r}")
    scale = {None: 1, "ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
    return int(float(m.group(1)) * scale)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="apic_compare.py", description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), metavar="DIR",
                    help="meson build folder with vmm/lull and guests/apic-tick.elf "
                         "(default build)")
    ap.add_argument("--seconds", type=int, default=5, metavar="S",
                    help="ticks per run, in seconds (default 5)")
    ap.add_argument("--repeat", type=int, default=3, metavar="R",
                    help="runs per row; tables show medians (default 3)")
    ap.add_argument("--hz", type=int, default=1000, help="comparison tick rate (default 1000)")
    ap.add_argument("--modes", default=",".join(MODES), metavar="LIST",
                    help="timer modes compared (default all: " + ",".join(MODES) + ")")
    ap.add_argument("--vmms", default=",".join(DEFAULT_VMMS), metavar="LIST",
                    help="VMMs compared (default " + ",".join(DEFAULT_VMMS) + "; also lull-no-advance)")
    ap.add_argument("--policy-hz", type=int, default=1000, metavar="HZ",
                    help="the deferral table's periodic tick rate (default 1000)")
    ap.add_argument("--defer-bounds", default="1ms,4ms,10ms", metavar="LIST",
                    help="--apic-max-defer values for the deferral table (default 1ms,4ms,10ms)")
    ap.add_argument("--missed-ticks", choices=("one", "all", "none"), default=None,
                    help="lull --missed-ticks for every lull run (default: lull's)")
    ap.add_argument("--no-compare", action="store_true", help="skip the comparison table")
    ap.add_argument("--no-policy", action="store_true", help="skip the deferral table")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH", help="QEMU binary")
    ap.add_argument("--pin", type=int, default=None, metavar="CPU",
                    help="run every VM on this host CPU only (default: anywhere)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the results here")
    ap.add_argument("--report", default=None, metavar="FILE",
                    help="measure nothing: print the tables of a --json FILE again")
    ap.add_argument("--nested", choices=("auto", "always", "never"), default="auto",
                    help="run inside tests/nested/lull-nested: auto = when /dev/kvm is "
                         "missing (default)")
    ap.add_argument("--_inner", action="store_true", help=argparse.SUPPRESS)
    cfg = ap.parse_args(argv)
    cfg.modes = [m for m in cfg.modes.split(",") if m]
    cfg.vmms = [v for v in cfg.vmms.split(",") if v]
    bad = [m for m in cfg.modes if m not in MODES] + [v for v in cfg.vmms if v not in VMMS]
    if bad:
        ap.error(f"unknown mode or VMM: {', '.join(bad)}")
    try:
        cfg.defer_bounds = [parse_ns(b) for b in cfg.defer_bounds.split(",") if b]
    except argparse.ArgumentTypeError as e:
        ap.error(f"--defer-bounds: {e}")
    if cfg.seconds < 1 or cfg.repeat < 1 or cfg.hz < 1 or cfg.policy_hz < 1:
        ap.error("--seconds, --repeat, --hz and --policy-hz must be positive")
    cfg.lull = os.path.join(cfg.build, "vmm", "lull")
    cfg.elf = os.path.join(cfg.build, "guests", "apic-tick.elf")
    return cfg


# --------------------------------------------------------------------------
# host counters


def read(path):
    with open(path) as f:
        return f.read()


def per_thread(pid, value):
    """Sum of value(tid_dir) over pid's threads; None once the process is
    gone. A thread that exits meanwhile is skipped."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            total += value(f"/proc/{pid}/task/{tid}")
        except (OSError, ValueError, IndexError):
            continue
    return total


def voluntary_switches(tid_dir):
    """A thread's voluntary context switches: its host wakeups."""
    for line in read(f"{tid_dir}/status").splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


def schedstat_ns(tid_dir):
    return int(read(f"{tid_dir}/schedstat").split()[0])


def process_cputime_ns(pid):
    """utime + stime of the whole process (every thread, exited ones too)."""
    try:
        st = read(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = st[st.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // CLK_TCK


def ensure_debugfs():
    """KVM's debugfs folder, mounting debugfs where allowed; None if unreadable."""
    if os.path.isdir(KVM_DEBUGFS):
        return KVM_DEBUGFS
    if os.geteuid() == 0 and os.path.isdir(DEBUGFS):
        subprocess.run(["mount", "-t", "debugfs", "none", DEBUGFS],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return KVM_DEBUGFS if os.path.isdir(KVM_DEBUGFS) else None


def kvm_counters(pid):
    """(source, {counter: value}) from the VM's own debugfs folder (PID-FD),
    else the global one; (None, {}) without debugfs."""
    if not os.path.isdir(KVM_DEBUGFS):
        return None, {}
    try:
        mine = [d for d in os.listdir(KVM_DEBUGFS) if d.startswith(f"{pid}-")]
    except OSError:
        return None, {}
    folder, source = (os.path.join(KVM_DEBUGFS, mine[0]), "per-vm") if len(mine) == 1 \
        else (KVM_DEBUGFS, "global")
    out = {}
    for key in KVM_KEYS:
        try:
            out[key] = int(read(os.path.join(folder, key)).strip())
        except (OSError, ValueError):
            pass
    return source, out


def snapshot(pid):
    """The VM's counters now: the threads' first, while they surely exist."""
    s = {"t": time.monotonic(), "voluntary": per_thread(pid, voluntary_switches),
         "cputime_ns": process_cputime_ns(pid), "schedstat_ns": per_thread(pid, schedstat_ns)}
    s["kvm_source"], s["kvm"] = kvm_counters(pid)
    return s


# --------------------------------------------------------------------------
# one run


def guest_cmdline(mode, hz, seconds):
    return f"mode={mode} hz={hz} seconds={seconds}"


def lull_command(cfg, vmm, mode, hz, stats, max_defer=None):
    if vmm == "lull-no-advance":
        cmd = [cfg.lull, "run", "--timer-mode", "deferrable", "--no-timer-advance"]
    else:
        cmd = [cfg.lull, "run", "--timer-mode", vmm.split("-", 1)[1]]
    if max_defer is not None:
        cmd += ["--apic-max-defer", str(max_defer)]
    if cfg.missed_ticks:
        cmd += ["--missed-ticks", cfg.missed_ticks]
    return cmd + ["--timeout", str(cfg.seconds + 120), "--stats", stats,
                  "--cmdline", guest_cmdline(mode, hz, cfg.seconds), cfg.elf]


def qemu_command(cfg, mode, hz):
    return qemu_ref.command(cfg.elf, cfg.qemu, mem="32M",
                            append=guest_cmdline(mode, hz, cfg.seconds))


def run_one(cfg, vmm, mode, hz, tmp, max_defer=None):
    """Boots one apic-tick VM and measures it; returns a dict of figures."""
    stats = os.path.join(tmp, "stats.json")
    if os.path.exists(stats):
        os.unlink(stats)
    if vmm == "qemu":
        cmd = qemu_command(cfg, mode, hz)
    else:
        cmd = lull_command(cfg, vmm, mode, hz, stats, max_defer)
    pin = (lambda: os.sched_setaffinity(0, {cfg.pin})) if cfg.pin is not None else None
    errf = tempfile.TemporaryFile(mode="w+", dir=tmp)
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=errf, text=True, errors="replace", preexec_fn=pin)
    # a VM that hangs without a word is killed: its stdout then ends
    watchdog = threading.Timer(cfg.seconds + 180, p.kill)
    watchdog.start()
    lines, s0, s1 = [], None, None
    try:
        for line in p.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if line == "apic-tick: start":
                s0 = snapshot(p.pid)
            elif line == "apic-tick: stop":
                s1 = snapshot(p.pid)
        p.wait()
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    errf.seek(0)
    err = errf.read()
    errf.close()
    r = {"vmm": vmm, "mode": mode, "hz": hz, "max_defer_ns": max_defer,
         "command": " ".join(shlex.quote(a) for a in cmd), "status": p.returncode}
    summary = next((m for m in map(SUMMARY_RE.match, lines) if m), None)
    r["verdict"] = summary.group(1) if summary else "NO-SUMMARY"
    fields = dict(re.findall(r"(\w+)=(-?\d+)", summary.group(2))) if summary else {}
    for k in ("ticks", "missed", "early", "late_p50_ns", "late_p99_ns", "late_max_ns"):
        if k in fields:
            r[k] = int(fields[k])
    info = [l for l in lines if l.startswith("apic-tick: hv=")]
    r["guest_info"] = info[0][len("apic-tick: "):] if info else None
    note = [l for l in lines if "before their deadline" in l]
    if note:
        r["early_note"] = note[0]
    if r["verdict"] != "PASS":
        r["tail"] = lines[-5:] + err.strip().splitlines()[-5:]
    if s0 and s1:
        w = s1["t"] - s0["t"]
        r["window_s"] = w
        if s0["voluntary"] is not None and s1["voluntary"] is not None:
            r["wakeups_per_s"] = (s1["voluntary"] - s0["voluntary"]) / w
        if s0["cputime_ns"] is not None and s1["cputime_ns"] is not None:
            r["cpu_ms_per_s"] = (s1["cputime_ns"] - s0["cputime_ns"]) / 1e6 / w
        if s0["schedstat_ns"] is not None and s1["schedstat_ns"] is not None:
            r["schedstat_ms_per_s"] = (s1["schedstat_ns"] - s0["schedstat_ns"]) / 1e6 / w
        if s0["kvm"] and s1["kvm"]:
            r["kvm_source"] = s1["kvm_source"]
            r["kvm"] = {k: s1["kvm"][k] - s0["kvm"][k] for k in s1["kvm"] if k in s0["kvm"]}
    if vmm != "qemu":
        try:
            with open(stats) as f:
                st = json.load(f)
            v = st["vcpus"]
            r["lull"] = {k: sum(x.get(k, 0) for x in v)
                         for k in ("exits", "host_wakeups", "halts", "injections",
                                   "apic_timer_fired", "timers_fired_hard",
                                   "timers_fired_deferred", "kernel_voluntary_switches")}
            r["lull"]["wall_ns"] = st["wall_ns"]
            # lull's own expiry-to-injection (vCPU 0 ticks) and the
            # timer advance's spin, both paths
            r["lull_hard_p50_ns"] = v[0]["hard_lateness_ns"].get("p50")
            adv = v[0].get("timer_advance", {})
            r["lull"]["advance_wait_ns"] = sum(adv.get(p, {}).get("wait_ns", 0)
                                               for p in ("halted", "running"))
            r["lull"]["tsc_stable"] = st.get("tsc_stable")
            r["lull"]["unclaimed_msr"] = st.get("unclaimed_msr")
        except (OSError, ValueError, KeyError):
            pass
    ticks = r.get("ticks")
    if ticks:
        if "kvm" in r and "exits" in r["kvm"]:
            r["kvm_exits_per_irq"] = r["kvm"]["exits"] / ticks
        if "lull" in r:
            r["lull_exits_per_irq"] = r["lull"]["exits"] / ticks
            r["lull_wait_us_per_irq"] = r["lull"].get("advance_wait_ns", 0) / 1e3 / ticks
        if "window_s" in r:
            r["irqs_per_s"] = ticks / r["window_s"]
            # per interrupt: what a host too busy to deliver every tick
            # cannot skew
            if "wakeups_per_s" in r:
                r["wakeups_per_irq"] = r["wakeups_per_s"] / r["irqs_per_s"]
            if "cpu_ms_per_s" in r:
                r["cpu_us_per_irq"] = r["cpu_ms_per_s"] * 1000 / r["irqs_per_s"]
    return r


def ok(r):
    good = 1 if r["vmm"] == "qemu" else 0  # QEMU's isa-debug-exit: (0 << 1) | 1
    return r["verdict"] == "PASS" and r["status"] == good


# --------------------------------------------------------------------------
# the plan, the runs, the medians


def plan(cfg, have_defer):
    """[(table, row label, vmm, mode, hz, max_defer)] in table order."""
    rows = []
    if not cfg.no_compare:
        for mode in cfg.modes:
            for vmm in cfg.vmms:
                rows.append(("compare", f"{mode} {vmm}", vmm, mode, cfg.hz, None))
    if not cfg.no_policy:
        rows.append(("policy", "lull-deferrable, default", "lull-deferrable",
                     "periodic", cfg.policy_hz, None))
        for b in cfg.defer_bounds:
            label = f"lull-deferrable, --apic-max-defer {fmt_ns(b)}"
            rows.append(("policy", label, "lull-deferrable", "periodic", cfg.policy_hz,
                         b if have_defer else "missing"))
        rows.append(("policy", "lull-strict", "lull-strict", "periodic", cfg.policy_hz, None))
    return rows


def fmt_ns(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale and ns % scale == 0:
            return f"{ns // int(scale)} {unit}"
    return f"{ns} ns"


def median(runs, key, sub=None):
    vals = []
    for r in runs:
        v = r.get(sub, {}).get(key) if sub else r.get(key)
        if v is not None:
            vals.append(v)
    return statistics.median(vals) if vals else None


AGG_KEYS = ("ticks", "missed", "early", "late_p50_ns", "late_p99_ns", "late_max_ns",
            "kvm_exits_per_irq", "lull_exits_per_irq", "wakeups_per_s", "cpu_ms_per_s",
            "schedstat_ms_per_s", "irqs_per_s", "window_s", "wakeups_per_irq",
            "cpu_us_per_irq", "lull_hard_p50_ns", "lull_wait_us_per_irq")


def aggregate(label, table, runs):
    a = {"table": table, "row": label, "runs": len(runs),
         "failed": sum(1 for r in runs if not ok(r)),
         "early_total": sum(r.get("early", 0) for r in runs),
         "ticks_total": sum(r.get("ticks", 0) for r in runs)}
    for k in AGG_KEYS:
        a[k] = median(runs, k)
    for k in ("halt_exits", "irq_window_exits", "irq_exits", "io_exits", "mmio_exits"):
        v = median(runs, k, "kvm")
        if v is not None and a["ticks"]:
            a[f"kvm_{k}_per_irq"] = v / a["ticks"]
    srcs = {r.get("kvm_source") for r in runs if r.get("kvm_source")}
    a["kvm_source"] = ",".join(sorted(srcs)) or None
    return a


def measure(cfg):
    have_kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    if not have_kvm:
        sys.exit("apic-compare: /dev/kvm is missing or not accessible")
    for p in (cfg.lull, cfg.elf):
        if not os.path.exists(p):
            sys.exit(f"apic-compare: {p} is missing; build first (ninja -C {cfg.build})")
    if "qemu" in cfg.vmms and not shutil.which(cfg.qemu):
        log(f"{cfg.qemu} is not installed: no qemu rows")
        cfg.vmms = [v for v in cfg.vmms if v != "qemu"]
    debugfs = ensure_debugfs()
    if not debugfs:
        log(f"{KVM_DEBUGFS} is not readable (root mounts it): no KVM exit counts")
    help_text = subprocess.run([cfg.lull, "run", "--help"], capture_output=True,
                               text=True).stdout + ""
    have_defer = "--apic-max-defer" in help_text
    if not have_defer and not cfg.no_policy:
        log("this lull has no --apic-max-defer: those rows are skipped")
    rows = plan(cfg, have_defer)
    total = sum(1 for r in rows if r[5] != "missing") * cfg.repeat
    runs = {(t, label): [] for t, label, *_ in rows}
    done = 0
    tmp = tempfile.mkdtemp(prefix="lull-apic-")
    try:
        for rep in range(cfg.repeat):
            for table, label, vmm, mode, hz, max_defer in rows:
                if max_defer == "missing":
                    continue
                r = run_one(cfg, vmm, mode, hz, tmp, max_defer)
                r["table"], r["row"] = table, label
                done += 1
                runs[(table, label)].append(r)
                log(f"[{done}/{total}] {table}: {label} hz={hz}: {r['verdict']} "
                    f"status {r['status']}, ticks {r.get('ticks')}, "
                    f"kvm exits/irq {fmt(r.get('kvm_exits_per_irq'), 2)}, "
                    f"lull exits/irq {fmt(r.get('lull_exits_per_irq'), 2)}, "
                    f"wakeups/s {fmt(r.get('wakeups_per_s'), 1)}, "
                    f"cpu ms/s {fmt(r.get('cpu_ms_per_s'), 1)}, "
                    f"late p50/p99 us {fmt_us(r.get('late_p50_ns'))}/{fmt_us(r.get('late_p99_ns'))}")
                if r.get("early_note"):
                    log("    " + r["early_note"])
                if not ok(r):
                    for line in r.get("tail", []):
                        log("    " + line)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = {
        "config": {"seconds": cfg.seconds, "repeat": cfg.repeat, "hz": cfg.hz,
                   "policy_hz": cfg.policy_hz, "modes": cfg.modes, "vmms": cfg.vmms,
                   "defer_bounds_ns": cfg.defer_bounds, "missed_ticks": cfg.missed_ticks,
                   "pin": cfg.pin, "have_apic_max_defer": have_defer,
                   "kvm_debugfs": debugfs is not None},
        "host": f"{os.cpu_count()} CPUs, Linux {os.uname().release}"
                + (", inside tests/nested/lull-nested" if cfg._inner else ""),
        "rows": [aggregate(label, table, runs[(table, label)])
                 for table, label, *rest in rows if runs[(table, label)]],
        "runs": [r for v in runs.values() for r in v],
    }
    for t, label, vmm, mode, hz, max_defer in rows:
        if max_defer == "missing":
            result["rows"].append({"table": t, "row": label, "runs": 0, "failed": 0,
                                   "skipped": "lull has no --apic-max-defer"})
    return result


# --------------------------------------------------------------------------
# output


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def fmt_us(ns):
    return "-" if ns is None else f"{ns / 1000:.0f}"


def tables(res):
    out = []
    c = res["config"]
    comp = [r for r in res["rows"] if r["table"] == "compare"]
    pol = [r for r in res["rows"] if r["table"] == "policy"]
    if comp:
        out.append(f"apic-tick at {c['hz']} Hz, {c['seconds']} s per run, median of "
                   f"{c['repeat']}; host {res['host']}")
        out.append("| mode | VMM | interrupts | KVM exits/irq | lull exits/irq | "
                   "wakeups/s | wakeups/irq | CPU ms/s | CPU µs/irq | late p50 / p99 µs | "
                   "lull's own p50 µs | advance wait µs/irq | early | failed |")
        out.append("| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: "
                   "| --: | --: |")
        for r in comp:
            mode, vmm = r["row"].split(" ", 1)
            out.append(f"| {mode} | {vmm} | {fmt(r['ticks'], 0)} | "
                       f"{fmt(r['kvm_exits_per_irq'], 2)} | {fmt(r['lull_exits_per_irq'], 2)} | "
                       f"{fmt(r['wakeups_per_s'], 1)} | {fmt(r.get('wakeups_per_irq'), 2)} | "
                       f"{fmt(r['cpu_ms_per_s'], 1)} | {fmt(r.get('cpu_us_per_irq'), 0)} | "
                       f"{fmt_us(r['late_p50_ns'])} / {fmt_us(r['late_p99_ns'])} | "
                       f"{fmt(r.get('lull_hard_p50_ns') and r['lull_hard_p50_ns'] / 1e3, 1)} | "
                       f"{fmt(r.get('lull_wait_us_per_irq'), 1)} | "
                       f"{r['early_total']} | {r['failed']} / {r['runs']} |")
    if pol:
        if out:
            out.append("")
        out.append(f"deferral policy: apic-tick mode=periodic at {c['policy_hz']} Hz, "
                   f"{c['seconds']} s per run, median of {c['repeat']}"
                   + (f", --missed-ticks {c['missed_ticks']}" if c["missed_ticks"] else ""))
        out.append("| lull | wakeups/s | interrupts/s | missed | late p50 / p99 / max µs | "
                   "CPU ms/s | early | failed |")
        out.append("| --- | --: | --: | --: | --: | --: | --: | --: |")
        for r in pol:
            if r.get("skipped"):
                out.append(f"| {r['row']} | {r['skipped']} | | | | | | |")
                continue
            out.append(f"| {r['row']} | {fmt(r['wakeups_per_s'], 1)} | "
                       f"{fmt(r['irqs_per_s'], 1)} | {fmt(r['missed'], 0)} | "
                       f"{fmt_us(r['late_p50_ns'])} / {fmt_us(r['late_p99_ns'])} / "
                       f"{fmt_us(r['late_max_ns'])} | {fmt(r['cpu_ms_per_s'], 1)} | "
                       f"{r['early_total']} | {r['failed']} / {r['runs']} |")
    return "\n".join(out)


# --------------------------------------------------------------------------
# /dev/kvm missing: the same script inside the nested runner


def run_nested(cfg, argv):
    inner = [sys.executable, os.path.abspath(__file__)] + argv + ["--nested", "never", "--_inner"]
    runs = (len(cfg.modes) * len(cfg.vmms) + len(cfg.defer_bounds) + 2) * cfg.repeat
    cmd = ["flock", NESTED_LOCK, RUNNER,
           "--timeout", str(int(600 + runs * (cfg.seconds + 60))), "--"] + inner
    log("/dev/kvm is missing here: running inside the nested runner (a standard KVM "
        "under QEMU's emulation; CPU figures are the emulated ones):")
    log("  " + " ".join(shlex.quote(a) for a in cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace")
    blob, inside = [], False
    for line in p.stdout:
        if line.rstrip("\n") == JSON_BEGIN:
            inside = True
        elif line.rstrip("\n") == JSON_END:
            inside = False
        elif inside:
            blob.append(line)
        else:
            sys.stdout.write(line)
            sys.stdout.flush()
    rc = p.wait()
    if not blob:
        log(f"the nested run returned no results (runner exit status {rc})")
        return None
    res = json.loads("".join(blob))
    res["nested"] = True
    return res


def report(path):
    """The tables of a saved run, its rows aggregated again from its runs."""
    with open(path) as f:
        res = json.load(f)
    c = res["config"]
    if any("row" not in r for r in res["runs"]):
        # written before runs carried their row: they come grouped by row,
        # c["repeat"] each, in the order of the rows
        labels = [(r["table"], r["row"]) for r in res["rows"] if r.get("runs")]
        for i, r in enumerate(res["runs"]):
            r["table"], r["row"] = labels[i // c["repeat"]]
    groups = {}
    for r in res["runs"]:
        groups.setdefault((r["table"], r["row"]), []).append(r)
    for r in res["runs"]:
        if r.get("ticks") and r.get("window_s"):
            r.setdefault("irqs_per_s", r["ticks"] / r["window_s"])
            if "wakeups_per_s" in r:
                r.setdefault("wakeups_per_irq", r["wakeups_per_s"] / r["irqs_per_s"])
            if "cpu_ms_per_s" in r:
                r.setdefault("cpu_us_per_irq", r["cpu_ms_per_s"] * 1000 / r["irqs_per_s"])
    res["rows"] = [aggregate(label, table, runs) for (table, label), runs in groups.items()] + \
        [r for r in res["rows"] if r.get("skipped")]
    print(tables(res))
    if res.get("command"):
        print(f"(command: {res['command']})")
    return 0


def main(argv):
    cfg = parse_args(argv)
    if cfg.report:
        return report(cfg.report)
    argv = [a for a in argv if a != "--_inner"]
    have_kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    nested = cfg.nested == "always" or (cfg.nested == "auto" and not have_kvm)
    if cfg._inner or not nested:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        res = measure(cfg)
        res["nested"] = cfg._inner
        if cfg._inner:
            print(JSON_BEGIN)
            print(json.dumps(res))
            print(JSON_END, flush=True)
            return 0
    else:
        res = run_nested(cfg, argv)
        if res is None:
            return 1
    res["command"] = " ".join(["bench/apic/apic_compare.py"] + argv)
    if cfg.json:
        with open(cfg.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")
    print(tables(res))
    if res.get("nested"):
        print("(inside tests/nested/lull-nested: CPU figures are emulated)")
    failed = sum(r.get("failed", 0) for r in res["rows"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
