/* SPDX-License-Identifier: MIT */
/*
 * ACPI tables, host side: what an unmodified OS reads to find the VM's
 * local APICs. Linux looks for its processors in the MADT; without one it
 * runs on the boot CPU alone, in virtual-wire mode with no APIC timer.
 *
 * Contract: acpi_write_tables() writes, into the flat guest RAM [0,
 * ram_size) mapped at `ram`, the smallest set of tables that describes the
 * local APICs lull emulates (vcpu/apic.c), all inside the area lull_abi.h
 * reserves for them, [LULL_ACPI_RSDP_GPA, LULL_ACPI_AREA_END):
 *
 *   RSDP  revision 2 (ACPI 2.0+): checksum over its first 20 bytes and an
 *         extended checksum over all 36; no RSDT, only the XSDT address.
 *   XSDT  one entry: the MADT.
 *   MADT  revision 5 (ACPI 6.3), local APIC address 0xfee00000, flags 0 (no
 *         8259 pair: lull has no PIC), then one Processor Local APIC entry
 *         (type 0) per vCPU i < 255 with ACPI processor UID = APIC ID = i,
 *         flags Enabled.
 *
 * No FADT, DSDT or I/O APIC: lull has no ACPI hardware and no I/O APIC.
 * A type 0 entry holds an 8-bit APIC ID, and ACPI gives 0xff no processor
 * there (Linux skips it as invalid): a 256th vCPU, APIC ID 255, would need
 * a Processor Local x2APIC entry and is left out.
 *
 * Pure function over a byte buffer, like pvh.c: no KVM, no globals. It
 * writes nothing outside the area and nothing at all when it fails.
 */
#ifndef LULL_ACPI_H
#define LULL_ACPI_H

#include <stddef.h>
#include <stdint.h>

/* The first APIC ID a Processor Local APIC (type 0) entry cannot hold. */
#define ACPI_MADT_LAPIC_ID_LIMIT 255u

/*
 * Writes the tables for nr_vcpus vCPUs (1..256) and returns the RSDP's
 * guest-physical address, the value for hvm_start_info.rsdp_paddr.
 * Errors: -EINVAL (no vCPU, or more than 256), -ERANGE (RAM ends before
 * LULL_ACPI_AREA_END); err then holds one sentence.
 */
int64_t acpi_write_tables(void *ram, uint64_t ram_size, unsigned int nr_vcpus,
			  char *err, size_t err_len);

#endif
