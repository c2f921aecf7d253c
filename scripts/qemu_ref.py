#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The reference VMM: QEMU microvm with KVM's in-kernel irqchip, as every
comparison in lull's tests and benchmarks runs it.

usage: scripts/qemu_ref.py [options] KERNEL      run KERNEL on the reference
       scripts/qemu_ref.py --probe               print the -cpu it would use

The one command line lives here (command()), so that a fix to the
reference, its CPU model or its machine type, lands in every comparison
at once: the C tests run this script, the Python harnesses import it.

The CPU model is probed, not assumed: `-cpu host` is what the reference
should be (KVM's CPUID, x2APIC and the TSC-deadline timer with it), but
not every KVM accepts what QEMU derives from it; some refuse the
IA32_ARCH_CAPABILITIES value QEMU writes, and QEMU then aborts ("failed
to set MSR 0x10a"). Each candidate of CPU_MODELS, in order, boots a
guest of a few instructions (made here, in memory) on two vCPUs; the
first that ends as that guest asks is the one used, and the ones
rejected are reported with QEMU's own words. On stderr the run says
which it used: "qemu-ref: -cpu MODEL".
"""
import argparse
import functools
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

QEMU = "qemu-system-x86_64"
# What every comparison needs of the CPU: x2APIC and the TSC-deadline
# timer (lull offers both), which QEMU's default model lacks.
CPU_MODELS = ("host", "host,-arch-capabilities", "qemu64,+x2apic,+tsc-deadline")
MACHINE = "microvm,pit=off,pic=off,rtc=off"
PROBE_LIMIT_S = 60
PROBE_STATUS = (0x2A << 1) | 1


def probe_guest():
    """A PVH ELF of a few instructions: `mov eax, 0x2a; out 0xf4, eax`,
    then halt. Under isa-debug-exit QEMU exits (0x2a << 1) | 1 = 85, which
    none of its own errors is."""
    base, ehdr, phdr = 0x100000, 64, 56
    note = struct.pack("<III4sI", 4, 4, 18, b"Xen\0", 0)  # PHYS32_ENTRY
    code = bytes([0xB8, 0x2A, 0, 0, 0, 0xE7, 0xF4, 0xF4, 0xEB, 0xFD])
    note_off = ehdr + 2 * phdr
    code_off = note_off + len(note)
    size = code_off + len(code)
    entry = base + code_off
    note = note[:16] + struct.pack("<I", entry)
    header = struct.pack("<4sBBBB8xHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0,
                         2, 62, 1, entry, ehdr, 0, 0, ehdr, phdr, 2, 0, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)
    notes = struct.pack("<IIQQQQQQ", 4, 4, note_off, base + note_off,
                        base + note_off, len(note), len(note), 4)
    return header + load + notes + note + code


def base_command(qemu, kernel, cpu, vcpus, mem):
    return [qemu, "-nodefaults", "-no-user-config", "-no-reboot",
            "-display", "none", "-serial", "stdio", "-m", mem,
            "-smp", str(vcpus), "-accel", "kvm", "-cpu", cpu,
            "-machine", MACHINE,
            "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
            "-kernel", kernel]


def why_not(qemu, cpu, kernel):
    """None where QEMU boots the probe guest with -cpu cpu, else why not."""
    try:
        p = subprocess.run(base_command(qemu, kernel, cpu, 2, "16M"),
                           stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=PROBE_LIMIT_S)
    except subprocess.TimeoutExpired:
        return f"the probe guest did not end in {PROBE_LIMIT_S} s"
    if p.returncode == PROBE_STATUS:
        return None
    words = " ".join(p.stderr.split())[:200] or "nothing on stderr"
    return f"status {p.returncode}: {words}"


@functools.lru_cache(maxsize=None)
def probe(qemu=QEMU):
    """(model, [(rejected model, why), ...]); model is None where QEMU
    boots with none of CPU_MODELS (no KVM, or QEMU missing)."""
    if not shutil.which(qemu):
        return None, [("*", f"{qemu} is not installed")]
    rejected = []
    with tempfile.TemporaryDirectory(prefix="lull-qemu-ref-") as tmp:
        kernel = os.path.join(tmp, "probe.elf")
        with open(kernel, "wb") as f:
            f.write(probe_guest())
        for model in CPU_MODELS:
            why = why_not(qemu, model, kernel)
            if why is None:
                return model, rejected
            rejected.append((model, why))
    return None, rejected


def describe(model, rejected):
    """One line: the model used and why the ones before it were not."""
    text = f"-cpu {model}" if model else "no -cpu boots"
    if rejected:
        text += " (" + "; ".join(f"{m} refused: {w}" for m, w in rejected) + ")"
    return text


def cpu(qemu=QEMU, features=""):
    """The probed model with `features` (",kvm-pv-eoi=off") added; raises
    RuntimeError, naming every refusal, where none boots."""
    model, rejected = probe(qemu)
    if model is None:
        raise RuntimeError("the QEMU/KVM reference cannot start here: " +
                           describe(model, rejected))
    return model + features


def command(kernel, qemu=QEMU, vcpus=1, mem="64M", features="", initrd=None,
            append=None):
    """The reference's whole command line for KERNEL (a PVH ELF or a
    bzImage): console on stdio, debug-exit at 0xf4 as lull has it."""
    cmd = base_command(qemu, kernel, cpu(qemu, features), vcpus, mem)
    if initrd:
        cmd += ["-initrd", initrd]
    if append is not None:
        cmd += ["-append", append]
    return cmd


def host_kvm(lull):
    """(module, hardware) of this host's /dev/kvm as `lull info` says them:
    ("kvm_pvm", False) on a KVM that emulates an ordinary guest; (None,
    False) where lull cannot open /dev/kvm. A stock Linux guest needs
    hardware: the harnesses that boot one run in tests/nested/lull-nested
    where it is not."""
    p = subprocess.run([lull, "info"], capture_output=True, text=True)
    m = re.search(r"^kvm: (\S+)$", p.stdout, re.M)
    if p.returncode or not m:
        return None, False
    return m.group(1), "hardware virtualization: yes" in p.stdout


def main():
    ap = argparse.ArgumentParser(
        description="Run KERNEL on the QEMU/KVM reference (see the module's text).")
    ap.add_argument("--qemu", default=QEMU)
    ap.add_argument("--probe", action="store_true",
                    help="print the -cpu model the reference uses here and exit "
                    "(status 1 where none boots)")
    ap.add_argument("--vcpus", type=int, default=1)
    ap.add_argument("--mem", default="64M")
    ap.add_argument("--cpu-features", default="", metavar=",F=V",
                    help="appended to the probed -cpu model")
    ap.add_argument("--initrd")
    ap.add_argument("--append")
    ap.add_argument("kernel", nargs="?")
    args = ap.parse_args()
    model, rejected = probe(args.qemu)
    if args.probe:
        print(describe(model, rejected))
        return 0 if model else 1
    if not args.kernel:
        ap.error("KERNEL is needed (or --probe)")
    if model is None:
        print(f"qemu-ref: {describe(model, rejected)}", file=sys.stderr)
        return 69
    cmd = command(args.kernel, args.qemu, args.vcpus, args.mem,
                  args.cpu_features, args.initrd, args.append)
    print(f"qemu-ref: {describe(model + args.cpu_features, rejected)}",
          file=sys.stderr, flush=True)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main())
