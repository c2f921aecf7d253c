// SPDX-License-Identifier: MIT
/*
 * ioapic: conformance suite for the I/O APIC and COM1's interrupt, one
 * line per case, as guests/apic.c:
 *   PASS name          or   FAIL name: detail
 * and a summary "ioapic: PASS n/n" (or "ioapic: FAIL k/n failed"); the
 * exit status is 0 only if every case passed.
 *
 * The reference is QEMU's microvm with KVM (an I/O APIC at 0xfec00000,
 * COM1 on pin 4); lull must answer the same. No ACPI: the addresses are
 * the PC's. The local APIC is enabled in x2APIC mode and pin 4 sends to
 * it in physical mode. COM1's only interrupt here is "THR empty"; the
 * pin is used as an edge and, programmed level-triggered, as a level line
 * (remote IRR, redelivery after EOI while the line is high).
 *
 * The runtime prints through COM1 by polling: each case ends with IER 0
 * and the pin masked, so the PASS/FAIL lines raise nothing.
 */
#include "cases.h"
#include "guest.h"

#define IOAPIC_PA 0xfec00000u
#define IOAPIC_PIN 4 /* COM1: ISA IRQ 4 */

#define REG_VERSION 0x01
#define REG_REDIR(pin) (0x10 + 2 * (pin))

#define RTE_REMOTE_IRR (1u << 14)
#define RTE_LEVEL (1u << 15)
#define RTE_MASKED (1u << 16)

#define COM1 0x3f8
#define UART_IER 1
#define UART_IIR 2
#define UART_MCR 4
#define UART_LSR 5
#define IER_THRI 0x02
#define IIR_ID 0x0f
#define IIR_THRE 0x02
#define IIR_NONE 0x01
#define IIR_FIFO 0xc0
#define MCR_OUT2 0x08
#define MCR_DTR_RTS 0x03

#define MSR_X2APIC_ID 0x802
#define MSR_X2APIC_TMR 0x818

#define V_UART 0x61
#define MS 1000000ull
#define SEC 1000000000ull
#define QUIET_NS (20 * MS) /* long enough for an interrupt that is coming */

static volatile uint32_t *const ioapic = (volatile uint32_t *)(uintptr_t)IOAPIC_PA;
static uint32_t apic_id;

static uint32_t io_rd(uint32_t reg)
{
	ioapic[0] = reg;
	return ioapic[4];
}

static void io_wr(uint32_t reg, uint32_t v)
{
	ioapic[0] = reg;
	ioapic[4] = v;
}

static void program_pin(uint32_t low)
{
	io_wr(REG_REDIR(IOAPIC_PIN) + 1, apic_id << 24);
	io_wr(REG_REDIR(IOAPIC_PIN), low);
}

/* -- the interrupt handler ------------------------------------------------ */

static volatile unsigned hits;
static volatile uint8_t iir_in_handler;
static volatile bool handler_reads_iir; /* else the line stays high */
static volatile unsigned stop_after; /* level storm: IER 0 at this many */

static void on_uart(unsigned vector)
{
	(void)vector;
	hits++;
	if (handler_reads_iir)
		iir_in_handler = inb(COM1 + UART_IIR);
	if (stop_after && hits >= stop_after)
		outb(COM1 + UART_IER, 0);
	lapic_eoi();
}

/* Interrupts on until `n` hits or `ns` passed; true if they came. */
static bool wait_hits(unsigned n, uint64_t ns)
{
	uint64_t until = clock_ns() + ns;

	sti();
	while (hits < n && clock_ns() < until)
		cpu_relax();
	cli();
	return hits >= n;
}

/* -- cases ---------------------------------------------------------------- */

static uint8_t saved_mcr;

/*
 * Between cases every source is quiet and anything the last case left
 * pending is taken, so that the next counts only its own. An interrupt
 * pending with IF clear is taken after STI only where KVM opens the
 * window at once; kvm_pvm opens it at the next exit, so the drain makes
 * two (port reads), with interrupts on.
 */
static void quiesce(void)
{
	cli();
	outb(COM1 + UART_IER, 0);
	program_pin(RTE_MASKED | V_UART);
	outb(COM1 + UART_MCR, saved_mcr);
	(void)inb(COM1 + UART_IIR);
	sti();
	(void)inb(COM1 + UART_LSR);
	(void)inb(COM1 + UART_LSR);
	cli();
	hits = 0;
	handler_reads_iir = true;
	stop_after = 0;
	iir_in_handler = 0;
}

static void run_case(const char *name, void (*fn)(void))
{
	case_begin();
	quiesce();
	fn();
	quiesce();
	case_end(name);
}

static void case_version(void)
{
	uint32_t v = io_rd(REG_VERSION);

	/* KVM's in-kernel I/O APIC says 0x11, QEMU's and lull's 0x20 */
	check(((v >> 16) & 0xff) == 23 && ((v & 0xff) == 0x20 || (v & 0xff) == 0x11),
	      "version register %#x, want 24 entries, version 0x11 or 0x20", v);
}

static void case_reset_all_masked(void)
{
	for (unsigned pin = 0; pin < 24; pin++) {
		uint32_t low = io_rd(REG_REDIR(pin));

		if (pin != IOAPIC_PIN) /* the runner's quiesce wrote this one */
			check(low & RTE_MASKED, "pin %u reads %#x: not masked", pin, low);
	}
}

static void case_redirection_readback(void)
{
	uint32_t low, high;

	io_wr(REG_REDIR(IOAPIC_PIN) + 1, 0x5a000000u);
	io_wr(REG_REDIR(IOAPIC_PIN), RTE_MASKED | RTE_LEVEL | (1u << 13) | 0x7e);
	low = io_rd(REG_REDIR(IOAPIC_PIN));
	high = io_rd(REG_REDIR(IOAPIC_PIN) + 1);
	check((low & ~(RTE_REMOTE_IRR | (1u << 12))) ==
		      (RTE_MASKED | RTE_LEVEL | (1u << 13) | 0x7e),
	      "low half %#x", low);
	check(high >> 24 == 0x5a, "high half %#x", high);
}

static void case_uart_iir_thre(void)
{
	uint8_t first, second;

	outb(COM1 + UART_IER, IER_THRI);
	first = inb(COM1 + UART_IIR);
	second = inb(COM1 + UART_IIR);
	check((first & IIR_ID) == IIR_THRE, "IIR %#x after IER.THRI, want THRE", first);
	check((second & IIR_ID) == IIR_NONE, "IIR %#x on the second read, want none",
	      second);
	check((first & IIR_FIFO) == IIR_FIFO, "IIR %#x: FIFO bits clear with FIFOs on",
	      first);
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_IER, IER_THRI);
	first = inb(COM1 + UART_IIR);
	check((first & IIR_ID) == IIR_THRE, "IIR %#x after IER.THRI again", first);
}

static void case_edge_thre_interrupt(void)
{
	program_pin(V_UART);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI);
	check(wait_hits(1, SEC), "no interrupt");
	check((iir_in_handler & IIR_ID) == IIR_THRE, "the handler read IIR %#x",
	      iir_in_handler);
	wait_hits(2, QUIET_NS);
	check(hits == 1, "%u interrupts for one THRE", hits);
}

static void case_thr_write_interrupts(void)
{
	program_pin(V_UART);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI);
	check(wait_hits(1, SEC), "no first interrupt");
	outb(COM1, '\n'); /* the THR empties again */
	check(wait_hits(2, SEC), "no interrupt after a THR write");
}

static void case_masked_pin_silent(void)
{
	program_pin(RTE_MASKED | V_UART);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI);
	wait_hits(1, QUIET_NS);
	check(hits == 0, "%u interrupts through a masked pin", hits);
	check((inb(COM1 + UART_IIR) & IIR_ID) == IIR_THRE, "THRE not pending");
}

/* On a PC, OUT2 gates the UART's interrupt onto the ISA line. */
static void case_out2_gates_irq(void)
{
	program_pin(V_UART);
	outb(COM1 + UART_MCR, MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI);
	wait_hits(1, QUIET_NS);
	check(hits == 0, "%u interrupts with OUT2 clear", hits);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	check(wait_hits(1, SEC), "no interrupt once OUT2 was set");
}

static bool tmr_has(uint8_t v)
{
	return (rdmsr(MSR_X2APIC_TMR + v / 32) >> (v % 32)) & 1;
}

static void case_level_remote_irr(void)
{
	uint32_t low;

	program_pin(RTE_LEVEL | V_UART);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI); /* interrupts off: it waits in IRR */
	low = io_rd(REG_REDIR(IOAPIC_PIN));
	check(low & RTE_REMOTE_IRR, "remote IRR clear while delivered (%#x)", low);
	check(tmr_has(V_UART), "the local APIC's TMR bit is clear");
	check(wait_hits(1, SEC), "no interrupt");
	low = io_rd(REG_REDIR(IOAPIC_PIN));
	check(!(low & RTE_REMOTE_IRR), "remote IRR still set after the EOI (%#x)",
	      low);
	wait_hits(2, QUIET_NS);
	check(hits == 1, "%u interrupts: the handler lowered the line", hits);
}

static void case_level_redelivers_while_high(void)
{
	handler_reads_iir = false; /* the line stays high */
	stop_after = 3;
	program_pin(RTE_LEVEL | V_UART);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI);
	check(wait_hits(3, SEC), "%u interrupts, want 3", hits);
	wait_hits(4, QUIET_NS);
	check(hits == 3, "%u interrupts after the line went low at 3", hits);
}

static void case_level_unmask_delivers(void)
{
	program_pin(RTE_LEVEL | RTE_MASKED | V_UART);
	outb(COM1 + UART_MCR, MCR_OUT2 | MCR_DTR_RTS);
	outb(COM1 + UART_IER, IER_THRI);
	wait_hits(1, QUIET_NS);
	check(hits == 0, "%u interrupts through a masked pin", hits);
	program_pin(RTE_LEVEL | V_UART);
	check(wait_hits(1, SEC), "no interrupt when unmasked with the line high");
}

static void case_no_stray_interrupts(void)
{
	check(irq_unexpected_count() == 0, "%lu unexpected interrupts",
	      (unsigned long)irq_unexpected_count());
}

#define CASE(fn) { #fn, case_##fn }

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	CASE(version),
	CASE(reset_all_masked),
	CASE(redirection_readback),
	CASE(uart_iir_thre),
	CASE(edge_thre_interrupt),
	CASE(thr_write_interrupts),
	CASE(masked_pin_silent),
	CASE(out2_gates_irq),
	CASE(level_remote_irr),
	CASE(level_redelivers_while_high),
	CASE(level_unmask_delivers),
	CASE(no_stray_interrupts),
};

int guest_main(void)
{
	if (!lapic_init_x2apic() || lapic_mode_name()[1] != '2') {
		printf("ioapic: FAIL no x2APIC (%s)\n", lapic_mode_name());
		return 1;
	}
	apic_id = (uint32_t)rdmsr(MSR_X2APIC_ID);
	saved_mcr = inb(COM1 + UART_MCR);
	irq_set_handler(V_UART, on_uart);
	printf("ioapic: hv %s, APIC ID %u, version %#x\n", hv_name(rt_boot.hv),
	       apic_id, io_rd(REG_VERSION));
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(cases[i].name, cases[i].fn);
	return cases_summary("ioapic");
}
