/* SPDX-License-Identifier: MIT */
/*
 * Building a VM, apart from running it (vm.h), as Firecracker's builder
 * is apart from its VMM.
 *
 * vm_create() reads and loads the guest image into fresh guest RAM before
 * it opens /dev/kvm, so that a wrong path or a broken image is reported as
 * such (status 65) on any host; then it opens the console, creates the VM
 * and its memory slot, routes the APIC's MSRs, writes what the guest reads
 * at its entry (start_info or boot_params, the ACPI tables) and creates
 * the vCPUs in their entry state. Each device is initialised here and
 * given its peers as callbacks (vmm/exits.c has them); its address is in
 * include/platform.h and its row in exits.c's device map.
 *
 * *vm is zeroed storage, never cleared here: main()'s is static, so the
 * pages of it a VM never writes (most of the console's 64 KiB ring, the
 * unclaimed-port log) stay the kernel's zero page and cost an idle VM
 * nothing.
 *
 * Returns 0, or a negative exit status with one sentence in vm->error. A
 * VM that failed half-way is still torn down with vm_destroy().
 */
#ifndef LULL_BUILDER_H
#define LULL_BUILDER_H

#include "vmm/vm.h"

int vm_create(struct vm *vm, const struct vm_config *cfg);

#endif
