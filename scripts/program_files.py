# SPDX-License-Identifier: MIT
"""What a dynamically linked program needs in an initramfs: itself, its
interpreter at the path it names, and every library it needs (and they
need), as scripts/mkinitramfs --file words (DEST=SRC).

The files come from a tree (a root folder: "/" for the host's installed
programs, or Debian packages unpacked into a folder): absolute symbolic
links inside it point into it, not at the host. Libraries go to
/lib/x86_64-linux-gnu, where Debian's ld.so looks without an
ld.so.cache. bench/latency/cyclictest.py packs Debian's cyclictest so,
bench/hostile/hostile.py Debian's stress-ng.
"""

import os
import struct

LIB_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64")


class Missing(Exception):
    """A file the program needs is not in the tree (the message says which)."""


def in_tree(tree, path):
    """The file at absolute path inside tree, its symbolic links followed
    inside tree; None where there is none."""
    for _ in range(16):
        here = os.path.join(tree, path.lstrip("/"))
        if not os.path.islink(here):
            return here if os.path.isfile(here) else None
        target = os.readlink(here)
        path = target if target.startswith("/") else os.path.join(os.path.dirname(path), target)
        path = os.path.normpath(path)
    return None


def elf_deps(path):
    """(PT_INTERP or None, [DT_NEEDED sonames]) of an ELF64 little-endian file."""
    with open(path, "rb") as f:
        elf = f.read()
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise Missing(f"{path}: not a 64-bit little-endian ELF")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    interp, dynamic, loads = None, None, []
    for i in range(phnum):
        ptype, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if ptype == 3:  # PT_INTERP
            interp = elf[off:off + filesz].rstrip(b"\0").decode()
        elif ptype == 2:  # PT_DYNAMIC
            dynamic = (off, filesz)
        elif ptype == 1:  # PT_LOAD
            loads.append((vaddr, off, filesz))
    if not dynamic:
        return interp, []
    needed, strtab = [], None
    for pos in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, val = struct.unpack_from("<qQ", elf, pos)
        if tag == 0:
            break
        if tag == 1:  # DT_NEEDED
            needed.append(val)
        elif tag == 5:  # DT_STRTAB, an address
            strtab = next((off + val - vaddr for vaddr, off, size in loads
                           if vaddr <= val < vaddr + size), None)
    if strtab is None:
        raise Missing(f"{path}: no string table for its DT_NEEDED")
    return interp, [elf[strtab + n:elf.index(b"\0", strtab + n)].decode() for n in needed]


def program_files(tree, program, where):
    """The --file words for /program (an absolute path) from tree; `where`
    names the tree in errors ("the packages rt-tests, libc6")."""
    prog = in_tree(tree, program)
    if not prog:
        raise Missing(f"no {program} in {where}")
    interp, needed = elf_deps(prog)
    files = [f"{program}={prog}"]
    if interp:
        src = in_tree(tree, interp)
        if not src:
            raise Missing(f"{program}'s interpreter {interp} is not in {where}")
        files.append(f"{interp}={src}")
    done = {os.path.basename(interp or "")}
    while needed:
        name = needed.pop(0)
        if name in done:
            continue
        done.add(name)
        src = next((p for p in (in_tree(tree, f"/{d}/{name}") for d in LIB_DIRS) if p), None)
        if not src:
            raise Missing(f"{program} needs {name}, which is not in {where}")
        files.append(f"/lib/x86_64-linux-gnu/{name}={src}")
        needed += elf_deps(src)[1]
    return files
