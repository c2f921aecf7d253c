#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Debian's stock kernel, booted to init and powered off, lull vs QEMU.

    bench/boot/linux_boot.py [--build build] [--runs 3] [--vcpus 1,2] ...

One VM at a time: the bzImage tests/nested/lull-nested caches, with the
initramfs of tests/linux (lull-init in check mode: it prints "lull-init:
start", sleeps 1 s, checks the clock and one thread per CPU, prints its
verdict, powers off). Per run, host time from the spawn to "lull-init:
start" on the console (to init) and to the VMM's exit (to poweroff, the
1 s of init's own checks included). Runs alternate lull and QEMU so both
see the same machine. QEMU is microvm with KVM's in-kernel irqchip, the
same command line and memory.

A run fails when init prints FAIL or no PASS, the VMM's status is not 0,
or it outlives --timeout; failures are reported, not timed. A VMM whose
first run at a vCPU count fails is not run again at that count.

Needs /dev/kvm; on a host without one, inside the nested runner:

    flock /tmp/lull-nested.lock tests/nested/lull-nested --timeout 1800 -- \\
        python3 bench/boot/linux_boot.py --build build
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import qemu_ref  # noqa: E402  (the QEMU/KVM reference's one command line)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "density"))
import linux_idle  # noqa: E402  (the cached kernel's location)

START = b"lull-init: start"


def command(cfg, vmm, vcpus):
    append = f"console=ttyS0 lull_init=check lull_expect_cpus={vcpus}"
    if vmm == "qemu":
        return qemu_ref.command(cfg.kernel, cfg.qemu, vcpus, cfg.mem,
                                initrd=cfg.initramfs, append=append)
    return [cfg.lull, "run", "--vcpus", str(vcpus), "--mem", cfg.mem,
            "--initrd", cfg.initramfs, "--cmdline", append, cfg.kernel]


def one_run(cfg, vmm, vcpus):
    """(seconds to init, seconds to exit) or a failure string."""
    t0 = time.monotonic()
    p = subprocess.Popen(command(cfg, vmm, vcpus), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, t_init = b"", None
    os.set_blocking(p.stdout.fileno(), False)
    while True:
        chunk = p.stdout.read()
        if chunk:
            out += chunk
            if t_init is None and START in out:
                t_init = time.monotonic() - t0
        if p.poll() is not None:
            out += p.stdout.read() or b""
            break
        if time.monotonic() - t0 > cfg.timeout:
            p.kill()
            p.wait()
            last = out.decode(errors="replace").strip().splitlines()[-1:] or [""]
            return f"over {cfg.timeout:g} s (last line: {last[0].strip()})"
        time.sleep(0.01)
    t_exit = time.monotonic() - t0
    if t_init is None and START in out:
        t_init = t_exit
    if b"lull-init: FAIL" in out:
        return "init: " + out.split(b"lull-init: FAIL", 1)[1].split(b"\n")[0].decode(errors="replace")
    if b"lull-init: PASS" not in out:
        return f"no PASS line (status {p.returncode})"
    if p.returncode != 0:
        return f"status {p.returncode}"
    return t_init, t_exit


def summary(times):
    if not times:
        return "-", "-"
    inits = [t[0] for t in times]
    exits = [t[1] for t in times]
    return (f"{statistics.median(inits):.2f} ({min(inits):.2f}-{max(inits):.2f})",
            f"{statistics.median(exits):.2f} ({min(exits):.2f}-{max(exits):.2f})")


def main(argv):
    ap = argparse.ArgumentParser(prog="linux_boot.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", metavar="DIR",
                    help="meson build folder: vmm/lull and tests/linux/initramfs.cpio (default build)")
    ap.add_argument("--runs", type=int, default=3, metavar="N", help="runs per VMM and vCPU count (default 3)")
    ap.add_argument("--vcpus", default="1,2", metavar="LIST", help="vCPU counts (default 1,2)")
    ap.add_argument("--mem", default="256M", metavar="SIZE", help="guest RAM (default 256M, lull's default for a bzImage)")
    ap.add_argument("--timeout", type=float, default=240.0, metavar="S", help="per run (default 240)")
    ap.add_argument("--kernel", default=None, metavar="BZIMAGE", help="default: the bzImage lull-nested caches")
    ap.add_argument("--qemu", default="qemu-system-x86_64", metavar="PATH")
    ap.add_argument("--no-qemu", action="store_true", help="lull only")
    cfg = ap.parse_args(argv)
    try:
        vcpu_counts = [int(v) for v in cfg.vcpus.split(",") if v]
    except ValueError:
        ap.error(f"--vcpus {cfg.vcpus}: not a comma-separated list of numbers")
    if not vcpu_counts or min(vcpu_counts) < 1 or cfg.runs < 1:
        ap.error("--vcpus and --runs must be positive")
    cfg.lull = os.path.abspath(os.path.join(cfg.build, "vmm", "lull"))
    cfg.initramfs = os.path.abspath(os.path.join(cfg.build, "tests", "linux", "initramfs.cpio"))
    cfg.kernel = cfg.kernel or linux_idle.cached_bzimage()
    if not cfg.kernel or not os.path.isfile(cfg.kernel):
        ap.error("no kernel: give --kernel, or run tests/nested/lull-nested once to cache one")
    for path in (cfg.lull, cfg.initramfs):
        if not os.path.isfile(path):
            ap.error(f"{path} is missing: run ninja -C {cfg.build}")
    vmms = ["lull"] if cfg.no_qemu or not shutil.which(cfg.qemu) else ["lull", "qemu"]
    kvm, hardware = qemu_ref.host_kvm(cfg.lull)
    if not hardware:
        print(f"linux_boot: /dev/kvm is {kvm or 'missing or not accessible'}: no KVM here runs "
              "Debian's kernel; run it in tests/nested/lull-nested", file=sys.stderr)
        return 69

    times = {(v, n): [] for v in vmms for n in vcpu_counts}
    failures = {(v, n): [] for v in vmms for n in vcpu_counts}
    for n in vcpu_counts:
        for run in range(cfg.runs):
            for vmm in vmms:
                if run and failures[(vmm, n)] and not times[(vmm, n)]:
                    continue  # failed every time so far: a hang costs --timeout each
                r = one_run(cfg, vmm, n)
                (failures if isinstance(r, str) else times)[(vmm, n)].append(r)
                print(f"linux_boot: {vmm} {n} vCPU run {run + 1}: "
                      + (r if isinstance(r, str) else f"init {r[0]:.2f} s, exit {r[1]:.2f} s"),
                      file=sys.stderr)

    print(f"linux_boot: {os.path.basename(cfg.kernel)}, {cfg.mem}, {cfg.runs} runs each, one VM at a time; "
          "seconds from spawn, median (min-max)")
    if os.environ.get("LULL_NESTED_RUNNER") == "1":
        print("EMULATED HOST (lull-nested): times are of a machine QEMU emulates; compare the VMMs "
              "with each other, not with real hardware.")
    print(f"{'VMM':<6} {'vCPUs':>5}  {'to init':<22} {'to poweroff':<22} failed")
    for n in vcpu_counts:
        for vmm in vmms:
            to_init, to_exit = summary(times[(vmm, n)])
            f = failures[(vmm, n)]
            print(f"{vmm:<6} {n:>5}  {to_init:<22} {to_exit:<22} {len(f)}"
                  + (f"  ({f[0]})" if f else ""))
    return 1 if any(failures[("lull", n)] for n in vcpu_counts) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
