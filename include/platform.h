/* SPDX-License-Identifier: MIT */
/*
 * The machine an unmodified OS finds in lull: where each device it may
 * discover sits, in guest-physical memory and in port space. The ACPI
 * tables (acpi.c) describe these and the devices answer at them, so each
 * address is written once, here. lull's own ABI ports (hypercall,
 * debug-exit, debugcon, COM1) are in lull_abi.h; the local APIC's page is
 * in vcpu/apic.h.
 */
#ifndef LULL_PLATFORM_H
#define LULL_PLATFORM_H

/* The I/O APIC: one, 24 pins, GSI 0-23; ISA IRQ n is GSI n. */
#define PLATFORM_IOAPIC_GPA 0xfec00000u
#define PLATFORM_IOAPIC_SIZE 0x1000u
#define PLATFORM_IOAPIC_ID 0
#define PLATFORM_IOAPIC_PINS 24
/* COM1's interrupt line, ISA IRQ 4 as on every PC */
#define PLATFORM_COM1_GSI 4

/*
 * Hardware-reduced ACPI: the FADT's sleep control and status registers
 * (8-bit ports) and its reset register. SLP_TYP 5 is the \_S5 the DSDT
 * names: writing it with SLP_EN powers the VM off. The reset register is
 * the PC's reset control port, which Linux also tries on its own.
 */
#define PLATFORM_SLEEP_CONTROL_PORT 0x600
#define PLATFORM_SLEEP_STATUS_PORT 0x601
#define PLATFORM_SLP_TYP_S5 5
#define PLATFORM_RESET_PORT 0xcf9
#define PLATFORM_RESET_VALUE 0x06
/* RST_CPU: the bit of the reset control port whose write resets (warm
 * 0x06, cold 0x0e; Linux's reboot=pci writes SYS_RST alone first) */
#define PLATFORM_RESET_CPU 0x04
/* The i8042's command port: 0xfe pulses the CPU's reset line. */
#define PLATFORM_I8042_COMMAND_PORT 0x64
#define PLATFORM_I8042_PULSE_RESET 0xfe

#endif
