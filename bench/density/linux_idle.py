#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""linux-idle: N idle Linux VMs per mode, what each costs the host.

    bench/density/density.py linux-idle [--vms 4] [--mem 128M] [--seconds 10] ...

Every VM boots Debian's stock kernel (the bzImage tests/nested/lull-nested
caches) with the initramfs of tests/linux, init in idle mode
(lull_init=idle): it prints "lull-init: ready ..." and sleeps in pause().
One vCPU each. Modes:

  lull-deferrable       lull run --timer-mode deferrable
  lull-strict           lull run --timer-mode strict
  qemu                  QEMU microvm with KVM's in-kernel irqchip
  lull-nohz-off         the guest ticks periodically at its HZ (250 in
                        Debian's kernel), like older or simpler guests:
                        nohz=off highres=off lapic=notscdeadline, so the
                        tick is the APIC timer's periodic mode (with the
                        TSC-deadline timer, Linux re-arms one-shots even
                        for a periodic tick); lull deferrable, APIC timer hard
  lull-nohz-off-4ms     the same with --apic-max-defer 4 ms / 20 ms: a
  lull-nohz-off-20ms    halted vCPU's periodic ticks wait up to that long

A point spawns its N VMs at once, waits until each printed its ready marker
(boot-to-init: spawn -> marker on its console, host time), then measures a
window of S seconds, per VM: host wakeups/s (voluntary context switches of
all its threads, counted by the kernel), host CPU % of one core (schedstat),
RSS and PSS (smaps_rollup at the window's end). Then SIGTERM. A VM fails
when it exits before that, prints no marker within --boot-timeout, or init
prints a FAIL line.

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

READY = b"lull-init: ready"
MODES = ("lull-deferrable", "lull-strict", "qemu", "lull-nohz-off", "lull-nohz-off-4ms",
         "lull-nohz-off-20ms")
PERIODIC_TICK = "nohz=off highres=off lapic=notscdeadline"
# mode -> (lull timer mode or None for QEMU, --apic-max-defer ns, extra guest words)
MODE_SPEC = {
    "lull-deferrable": ("deferrable", None, ""),
    "lull-strict": ("strict", None, ""),
    "qemu": (None, None, ""),
    "lull-nohz-off": ("deferrable", None, PERIODIC_TICK),
    "lull-nohz-off-4ms": ("deferrable", 4000000, PERIODIC_TICK),
    "lull-nohz-off-20ms": ("deferrable", 20000000, PERIODIC_TICK),
}


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


def command(cfg, mode):
    timer_mode, max_defer, extra = MODE_SPEC[mode]
    append = "console=ttyS0 lull_init=idle" + (" " + extra if extra else "")
    if timer_mode is None:
        return [cfg.qemu, "-nodefaults", "-no-user-config", "-display", "none",
                "-serial", "stdio", "-no-reboot", "-m", cfg.mem, "-smp", "1",
                "-accel", "kvm", "-cpu", "host",
                "-machine", "microvm,pit=off,pic=off,rtc=off",
                "-kernel", cfg.kernel, "-initrd", cfg.initramfs, "-append", append]
    cmd = [cfg.lull, "run", "--vcpus", "1", "--mem", cfg.mem, "--timer-mode", timer_mode]
    if max_defer is not None:
        cmd += ["--apic-max-defer", str(max_defer)]
    return cmd + ["--timeout", str(int(cfg.boot_timeout + cfg.seconds + 60)),
                  "--initrd", cfg.initramfs, "--cmdline", append, cfg.kernel]


def run_point(cfg, mode, logdir):
    vms = [IdleVM(i, mode, logdir) for i in range(cfg.vms)]
    try:
        for vm in vms:
            with open(vm.log, "wb") as out, open(vm.errlog, "wb") as err:
                vm.t_spawn = time.monotonic()
                try:
                    vm.popen = subprocess.Popen(command(cfg, mode), stdin=subprocess.DEVNULL,
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
            (ta, a), (tb, b) = vm.snap0, vm.snap1
            dt = (tb - ta) / 1e9
            cpu = sum(c - a.get(t, (n, 0, 0, 0))[1] for t, (n, c, v, nv) in b.items())
            vol = sum(v - a.get(t, (n, 0, 0, 0))[2] for t, (n, c, v, nv) in b.items())
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
set multiplot layout 1,2 title 'Idle Linux VMs ({cfg.mem}, 1 vCPU), median per VM; {where}'
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
    ap.add_argument("--modes", default=",".join(MODES), metavar="LIST",
                    help="comma-separated subset of " + ",".join(MODES))
    ap.add_argument("--build", default="build", metavar="DIR",
                    help="meson build folder: vmm/lull and tests/linux/initramfs.cpio (default build)")
    ap.add_argument("--kernel", default=None, metavar="BZIMAGE",
                    help="default: the bzImage lull-nested caches")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH")
    ap.add_argument("--ksm", type=float, default=0.0, metavar="S",
                    help="run the host's KSM, S seconds to merge before each window (root; "
                         "default 0: KSM as the host has it)")
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
    if cfg.ksm < 0:
        ap.error("--ksm must be 0 or more seconds")
    if cfg.ksm and not os.access(os.path.join(KSM, "run"), os.W_OK):
        ap.error(f"--ksm: cannot write {KSM}/run (the host kernel has no KSM, or this is not root)")
    return cfg


def main(argv):
    cfg = parse_args(argv)
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        print("linux-idle: /dev/kvm is missing or not accessible; run it in tests/nested/lull-nested",
              file=sys.stderr)
        return 69
    results = []
    logdir = tempfile.mkdtemp(prefix="lull-linux-idle-")
    ksm_was = ksm_read("run") if cfg.ksm else None
    try:
        for mode in cfg.modes:
            res = run_point(cfg, mode, logdir)
            results.append(res)
            for r in res["per_vm"]:
                if r["failure"]:
                    print(f"linux-idle: {mode} VM {r['vm']} failed: {r['failure']}", file=sys.stderr)
    finally:
        density.kill_owned()
        shutil.rmtree(logdir, ignore_errors=True)
        if ksm_was is not None:
            ksm_write("run", ksm_was)
    print(f"linux-idle: {cfg.vms} idle Linux VMs per mode, 1 vCPU, {cfg.mem} each, "
          f"window {cfg.seconds:g} s; kernel {os.path.basename(cfg.kernel)}; medians per VM")
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
    if cfg.out:
        os.makedirs(cfg.out, exist_ok=True)
        with open(os.path.join(cfg.out, "results.json"), "w") as f:
            json.dump({"command": " ".join(["density.py", "linux-idle"] + argv),
                       "date": datetime.datetime.now().isoformat(timespec="seconds"),
                       "emulated_host": density.EMULATED,
                       "kernel": cfg.kernel, "mem": cfg.mem, "ksm_merge_s": cfg.ksm,
                       "results": results}, f, indent=1)
            f.write("\n")
        svg = plot(results, cfg, cfg.out)
        print(f"results: {os.path.join(cfg.out, 'results.json')}"
              + (f"; plot: {svg}" if svg else "; plot: none (no gnuplot, or nothing measured)"))
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
