/* SPDX-License-Identifier: MIT */
/*
 * ACPI tables, host side: what an unmodified OS reads to find the VM's
 * local APICs, its I/O APIC, its COM1 and how to power the VM off or reset
 * it. Linux looks for its processors in the MADT; without one it runs on
 * the boot CPU alone, in virtual-wire mode with no APIC timer.
 *
 * Contract: acpi_write_tables() writes, into the flat guest RAM [0,
 * ram_size) mapped at `ram`, the smallest set of tables that describes the
 * machine of platform.h, all inside the area lull_abi.h reserves for
 * them, [LULL_ACPI_RSDP_GPA, LULL_ACPI_AREA_END):
 *
 *   RSDP  revision 2 (ACPI 2.0+): checksum over its first 20 bytes and an
 *         extended checksum over all 36; no RSDT, only the XSDT address.
 *   XSDT  two entries: the FADT, the MADT.
 *   FADT  revision 6.3, hardware-reduced ACPI (no SCI, PM blocks, PM timer,
 *         GPEs or FACS), X_DSDT; the reset register, 8-bit SystemIO at
 *         PLATFORM_RESET_PORT with PLATFORM_RESET_VALUE (RESET_REG_SUP);
 *         the sleep control and status registers, 8-bit SystemIO at
 *         PLATFORM_SLEEP_CONTROL_PORT / PLATFORM_SLEEP_STATUS_PORT; IA-PC
 *         boot flags: no 8042, no VGA, no CMOS RTC, no MSI, no legacy
 *         devices; hypervisor vendor "LULL".
 *   DSDT  revision 2, AML (aml.c): \_S5 = {PLATFORM_SLP_TYP_S5, 0, 0, 0};
 *         \_SB.COM1, PNP0501, _UID 1, IO 0x3f8-0x3ff, IRQ PLATFORM_COM1_GSI.
 *   MADT  revision 5 (ACPI 6.3), local APIC address 0xfee00000, flags 0 (no
 *         8259 pair: lull has no PIC), then one Processor Local x2APIC
 *         entry (type 9) per vCPU i with x2APIC ID = ACPI processor UID =
 *         i, flags Enabled, then one I/O APIC entry (type 1): ID
 *         PLATFORM_IOAPIC_ID at PLATFORM_IOAPIC_GPA, GSI base 0. No
 *         interrupt source overrides: ISA IRQ n is GSI n, edge, active high.
 *
 * x2APIC entries hold all 256 APIC IDs; Linux (6.1, acpi_parse_x2apic)
 * takes those below 255 in xAPIC mode too, and ID 255 once it runs the
 * APIC in x2APIC mode.
 *
 * Pure function over a byte buffer, like pvh.c: no KVM, no globals. It
 * writes nothing outside the area and nothing at all when it fails.
 */
#ifndef LULL_ACPI_H
#define LULL_ACPI_H

#include <stddef.h>
#include <stdint.h>

/*
 * Writes the tables for nr_vcpus vCPUs (1..256) and returns the RSDP's
 * guest-physical address, the value for hvm_start_info.rsdp_paddr.
 * Errors: -EINVAL (no vCPU, or more than 256), -ERANGE (RAM ends before
 * LULL_ACPI_AREA_END); err then holds one sentence.
 */
int64_t acpi_write_tables(void *ram, uint64_t ram_size, unsigned int nr_vcpus,
			  char *err, size_t err_len);

#endif
