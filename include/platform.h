/* SPDX-License-Identifier: MIT */
/*
 * The machine lull builds: every address at which a guest finds a device,
 * in guest-physical memory and in port space, in one place. The devices
 * answer at these addresses (vmm/exits.c routes each to its handler), the
 * ACPI tables describe them to an unmodified OS (loader/acpi.c), and
 * nothing else writes an address down.
 *
 *   guest-physical                size     what
 *   0 .. RAM end                           guest RAM; its first MiB holds
 *                                          the boot area (lull_abi.h:
 *                                          start_info, boot_params, ACPI)
 *   PLATFORM_IOAPIC_GPA  fec00000  4 KiB   the I/O APIC (devices/ioapic.h);
 *                                          RAM stops below it (--mem)
 *   PLATFORM_LAPIC_GPA   fee00000  4 KiB   each vCPU's local APIC, xAPIC
 *                                          mode (vcpu/apic.h)
 *
 *   port                          size     what
 *   PLATFORM_I8042_COMMAND_PORT  64   1    the i8042's reset pulse (power)
 *   LULL_DEBUGCON_PORT           e9   1    debugcon (lull_abi.h)
 *   LULL_DEBUG_EXIT_PORT         f4   1    debug-exit (lull_abi.h)
 *   LULL_COM1_PORT              3f8   8    COM1, a 16550 (devices/serial.h)
 *   PLATFORM_FW_CFG_PORT        510   2    fw_cfg: selector, data
 *                                          (devices/fw_cfg.h)
 *   PLATFORM_SLEEP_*_PORT       600   2    ACPI sleep control and status
 *   PLATFORM_RESET_PORT         cf9   1    ACPI reset register (power)
 *   LULL_HCALL_PORT             e11   1    lull's hypercalls (lull_abi.h)
 *   PLATFORM_TEST_IRQ_PORT     2000  24    with --test-device only: QEMU
 *                                          pc-testdev's I/O APIC lines
 *
 * lull's own ABI ports are defined in lull_abi.h, which the guests share;
 * they are listed here so that the map is whole.
 */
#ifndef LULL_PLATFORM_H
#define LULL_PLATFORM_H

#include "apicdef.h"
#include "lull_abi.h"

/* The local APIC's page: where the SDM puts it after reset. */
#define PLATFORM_LAPIC_GPA APIC_DEFAULT_BASE
#define PLATFORM_LAPIC_SIZE APIC_PAGE_SIZE

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
/* QEMU's fw_cfg ports: a 16-bit selector, then its data a byte at a time */
#define PLATFORM_FW_CFG_PORT 0x510
/*
 * QEMU's pc-testdev interrupt lines, which kvm-unit-tests' ioapic test
 * drives: a byte written to PLATFORM_TEST_IRQ_PORT + n sets the line of
 * I/O APIC pin n (0..PLATFORM_IOAPIC_PINS - 1) to asserted (not 0) or
 * not (0). Only with --test-device: a real guest has no such ports.
 */
#define PLATFORM_TEST_IRQ_PORT 0x2000
/* The i8042's command port: 0xfe pulses the CPU's reset line. */
#define PLATFORM_I8042_COMMAND_PORT 0x64
#define PLATFORM_I8042_PULSE_RESET 0xfe

#endif
