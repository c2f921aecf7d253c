// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "container_of.h"
#include "devices/ioapic.h"
#include "devices/power.h"
#include "devices/serial.h"
#include "platform.h"
#include "vmm/exits.h"
#include "vmm/hypercall.h"
#include "vmm/sandbox.h"
#include "vmm/vm.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static struct vm_cpu *cpu_of(struct vcpu *v)
{
	return container_of(v, struct vm_cpu, vcpu);
}

void unclaimed_init(struct unclaimed *u)
{
	memset(u, 0, sizeof(*u));
	pthread_mutex_init(&u->lock, NULL);
}

static void log_unclaimed_port(struct vm *vm, struct vcpu *v, uint16_t port,
			       bool out, unsigned size)
{
	uint64_t bit = 1ull << (port % 64);

	atomic_fetch_add_explicit(&vm->unclaimed.io, 1, memory_order_relaxed);
	if (atomic_fetch_or(&vm->unclaimed.port_logged[port / 64], bit) & bit)
		return;
	fprintf(stderr,
		"lull: vcpu %u: unclaimed port 0x%x %s (size %u): %s; further accesses are only counted\n",
		v->index, port, out ? "write" : "read", size,
		out ? "dropped" : "reads all ones");
}

/* One access at a port, as the exit gave it. */
struct port_access {
	uint16_t port;
	bool out;
	unsigned size;
	unsigned count; /* > 1: one of a string instruction's accesses */
	uint8_t *data;
};

/*
 * The device map, port side (port_map, below): one row per range, in the
 * order of include/platform.h's map. A handler returns false for an
 * access its device does not take (a COM1 access wider than a byte, a
 * read of debug-exit): that access is unclaimed, as at a port nobody has.
 * Adding a device is a file in devices/, a row in port_map or mmio_map, a
 * line in the builder and its address in platform.h (docs/architecture.md,
 * "Adding a device").
 */
struct port_range {
	uint16_t base, len;
	enum io_class class; /* --stats: io_exits_by_device */
	bool (*handle)(struct vm_cpu *cpu, const struct port_access *a);
};

static bool com1(struct vm_cpu *cpu, const struct port_access *a)
{
	if (a->size != 1)
		return false;
	serial_io(&vcpu_vm(&cpu->vcpu)->serial, a->port - LULL_COM1_PORT,
		  a->out, a->data);
	return true;
}

static bool debugcon(struct vm_cpu *cpu, const struct port_access *a)
{
	if (a->out)
		console_putc(&vcpu_vm(&cpu->vcpu)->console, a->data[0]);
	else
		memset(a->data, 0xe9, a->size); /* QEMU's "present" */
	return true;
}

static bool fw_cfg(struct vm_cpu *cpu, const struct port_access *a)
{
	return fw_cfg_io(&vcpu_vm(&cpu->vcpu)->fw_cfg,
			 a->port - PLATFORM_FW_CFG_PORT, a->out, a->size,
			 a->data);
}

static bool debug_exit(struct vm_cpu *cpu, const struct port_access *a)
{
	uint32_t value = 0;
	char reason[64];

	if (!a->out)
		return false;
	memcpy(&value, a->data, a->size > 4 ? 4 : a->size);
	snprintf(reason, sizeof(reason),
		 "guest wrote %u to the debug-exit port", value);
	vm_request_stop(vcpu_vm(&cpu->vcpu), VM_STOP_GUEST_EXIT,
			(int)(value & 0xff), reason);
	return true;
}

/* --test-device: pc-testdev's lines, pin by pin (platform.h). */
static bool test_irq(struct vm_cpu *cpu, const struct port_access *a)
{
	struct vm *vm = vcpu_vm(&cpu->vcpu);

	if (!vm->cfg.test_device || !a->out || a->size != 1)
		return false;
	ioapic_set_irq(&vm->ioapic, a->port - PLATFORM_TEST_IRQ_PORT,
		       a->data[0] != 0);
	return true;
}

/* One `out`, not a string of them: the registers are the arguments. */
static bool hcall_port(struct vm_cpu *cpu, const struct port_access *a)
{
	if (!a->out || a->count != 1)
		return false;
	hypercall_exit(vcpu_vm(&cpu->vcpu), cpu);
	return true;
}

/* The ACPI sleep and reset registers and the i8042's reset (power.h). */
static bool power(struct vm_cpu *cpu, const struct port_access *a)
{
	struct vm *vm = vcpu_vm(&cpu->vcpu);

	switch (power_io(&vm->power, cpu->vcpu.index, a->port, a->out, a->size,
			 a->data)) {
	case POWER_UNCLAIMED:
		return false;
	case POWER_HANDLED:
		break;
	case POWER_OFF:
		vm_request_stop(vm, VM_STOP_POWEROFF, 0,
				"the guest powered off");
		break;
	case POWER_RESET:
		vm_request_stop(vm, VM_STOP_RESET, LULL_EXIT_REBOOT,
				"the guest asked for a reset");
		break;
	}
	return true;
}

static const struct port_range port_map[] = {
	{ PLATFORM_I8042_COMMAND_PORT, 1, IO_CLASS_PLATFORM, power },
	{ LULL_DEBUGCON_PORT, 1, IO_CLASS_CONSOLE, debugcon },
	{ LULL_DEBUG_EXIT_PORT, 1, IO_CLASS_PLATFORM, debug_exit },
	{ LULL_COM1_PORT, SERIAL_PORTS, IO_CLASS_CONSOLE, com1 },
	{ PLATFORM_FW_CFG_PORT, 2, IO_CLASS_PLATFORM, fw_cfg },
	{ PLATFORM_SLEEP_CONTROL_PORT, 2, IO_CLASS_PLATFORM, power },
	{ PLATFORM_RESET_PORT, 1, IO_CLASS_PLATFORM, power },
	{ LULL_HCALL_PORT, 1, IO_CLASS_HYPERCALL, hcall_port },
	{ PLATFORM_TEST_IRQ_PORT, PLATFORM_IOAPIC_PINS, IO_CLASS_PLATFORM,
	  test_irq },
};

/* One access (of a string instruction's count); returns who took it. */
static enum io_class dispatch_port(struct vcpu *v, uint16_t port, bool out,
				   unsigned size, unsigned count, uint8_t *data)
{
	const struct port_access a = { port, out, size, count, data };
	struct vm *vm = vcpu_vm(v);

	for (size_t i = 0; i < ARRAY_SIZE(port_map); i++) {
		const struct port_range *r = &port_map[i];

		if (port >= r->base && port - r->base < r->len &&
		    r->handle(cpu_of(v), &a))
			return r->class;
	}
	log_unclaimed_port(vm, v, port, out, size);
	if (!out)
		memset(data, 0xff, size);
	return IO_CLASS_UNCLAIMED;
}

static void port_io(struct vcpu *v, uint16_t port, bool out, unsigned size,
		    unsigned count, uint8_t *data)
{
	enum io_class class = IO_CLASS_UNCLAIMED;

	for (unsigned i = 0; i < count; i++, data += size)
		class = dispatch_port(v, port, out, size, count, data);
	cpu_of(v)->io_exits[class]++;
}

/* True the first time `key` is seen, while the table has room. */
static bool first_sighting(struct unclaimed *u, uint64_t key)
{
	bool first = true;

	pthread_mutex_lock(&u->lock);
	for (unsigned i = 0; i < u->nr_logged && first; i++)
		first = u->logged[i] != key;
	if (first && u->nr_logged < UNCLAIMED_LOGGED)
		u->logged[u->nr_logged++] = key;
	else
		first = false;
	pthread_mutex_unlock(&u->lock);
	return first;
}

/* MMIO addresses, MSRs and IPI modes share the table: a tag apart */
#define MSR_KEY (1ull << 63)
#define IPI_KEY (1ull << 62)

/* The device map, MMIO side: as the port side, rows of platform.h. */
struct mmio_range {
	uint64_t base, len;
	void (*handle)(struct vm *vm, uint64_t offset, bool write, unsigned len,
		       uint8_t *data);
};

static void ioapic_page(struct vm *vm, uint64_t offset, bool write,
			unsigned len, uint8_t *data)
{
	ioapic_mmio(&vm->ioapic, offset, write, len, data);
}

static const struct mmio_range mmio_map[] = {
	{ PLATFORM_IOAPIC_GPA, PLATFORM_IOAPIC_SIZE, ioapic_page },
};

/*
 * A vCPU's own local APIC page comes first: it is not in the map because
 * each vCPU's may move (IA32_APIC_BASE) and only that vCPU sees it.
 */
static void mmio(struct vcpu *v, uint64_t addr, bool write, unsigned len,
		 uint8_t *data)
{
	struct vm *vm = vcpu_vm(v);

	if (apic_mmio(v, addr, write, len, data))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(mmio_map); i++) {
		const struct mmio_range *r = &mmio_map[i];

		if (addr >= r->base && addr - r->base < r->len) {
			r->handle(vm, addr - r->base, write, len, data);
			return;
		}
	}
	atomic_fetch_add_explicit(&vm->unclaimed.mmio, 1, memory_order_relaxed);
	if (!write)
		memset(data, 0xff, len > 8 ? 8 : len);
	if (first_sighting(&vm->unclaimed, addr))
		fprintf(stderr,
			"lull: vcpu %u: unclaimed MMIO %s at 0x%" PRIx64
			" (len %u): %s; further accesses are only counted\n",
			v->index, write ? "write" : "read", addr, len,
			write ? "dropped" : "reads all ones");
}

/* An MSR neither KVM nor the APIC has: a #GP, as on a CPU without it. */
static bool msr(struct vcpu *v, uint32_t index, bool write, uint64_t *data)
{
	struct vm *vm = vcpu_vm(v);

	atomic_fetch_add_explicit(&vm->unclaimed.msr, 1, memory_order_relaxed);
	if (first_sighting(&vm->unclaimed, MSR_KEY | index))
		fprintf(stderr,
			"lull: vcpu %u: MSR 0x%x %s (0x%" PRIx64
			"): #GP; further accesses are only counted\n",
			v->index, index, write ? "write" : "read",
			write ? *data : 0);
	return false;
}

/* Sends an interrupt message to every vCPU its destination names
 * (vcpu_send_ipi); from is NULL for the I/O APIC. False if its delivery
 * mode is not modelled: then it reached nobody. */
static bool route_to_vcpus(struct vm *vm, struct vcpu *from,
			   const struct apic_ipi *msg)
{
	for (unsigned i = 0; i < vm->nr_cpus_made; i++)
		if (!vcpu_send_ipi(from, &vm->cpus[i].vcpu, msg))
			return false;
	return true;
}

/* Routes an IPI. What lull does not model is counted and logged once. */
static void ipi(struct vcpu *v, const struct apic_ipi *ipi)
{
	struct vm *vm = vcpu_vm(v);

	if (!route_to_vcpus(vm, v, ipi)) {
		atomic_fetch_add_explicit(&vm->unclaimed.ipi, 1,
					  memory_order_relaxed);
		if (first_sighting(&vm->unclaimed, IPI_KEY | ipi->mode))
			fprintf(stderr,
				"lull: vcpu %u: IPI delivery mode %u is not supported: dropped; further ones are only counted\n",
				v->index, ipi->mode);
	}
}

/* The I/O APIC sends only the modes vcpu_send_ipi takes. A stopping VM
 * takes no more: its vCPU threads may be gone. */
void vm_ioapic_deliver(void *opaque, const struct apic_ipi *msg)
{
	struct vm *vm = opaque;

	if (!atomic_load(&vm->stop))
		route_to_vcpus(vm, NULL, msg);
}

void vm_serial_irq(void *opaque, bool level)
{
	struct vm *vm = opaque;

	ioapic_set_irq(&vm->ioapic, PLATFORM_COM1_GSI, level);
}

static void level_eoi(struct vcpu *v, uint8_t vector)
{
	ioapic_eoi(&vcpu_vm(v)->ioapic, vector);
}

static void *guest_ram(struct vcpu *v, uint64_t gpa, uint64_t len)
{
	return vm_gpa_to_hva(vcpu_vm(v), gpa, len);
}

static uint64_t tsc_to_ns(struct vcpu *v, uint64_t tsc)
{
	return pvclock_tsc_to_ns(&cpu_of(v)->pv.clock, v->fd, tsc, v->halted);
}

static void resync(struct vcpu *v, uint64_t now)
{
	pvtimer_resync(&cpu_of(v)->pv, now);
}

static int confine(struct vcpu *v)
{
	char err[160];
	int r = sandbox_enter_vcpu(v->index, v->fd, idle_ring_fd(&v->idle),
				   v->stats.late.sched_fd, err, sizeof(err));

	if (r < 0)
		vm_request_stop(vcpu_vm(v), VM_STOP_HOST, LULL_EXIT_HOST, err);
	return r;
}

static void fatal(struct vcpu *v, bool host, const char *what)
{
	char reason[256];

	snprintf(reason, sizeof(reason), "vcpu %u: %s", v->index, what);
	if (host)
		vm_request_stop(vcpu_vm(v), VM_STOP_HOST, LULL_EXIT_HOST,
				reason);
	else
		vm_request_stop(vcpu_vm(v), VM_STOP_CRASH,
				LULL_EXIT_GUEST_CRASH, reason);
}

const struct vcpu_ops vm_vcpu_ops = {
	.io = port_io,
	.mmio = mmio,
	.msr = msr,
	.ipi = ipi,
	.level_eoi = level_eoi,
	.guest_ram = guest_ram,
	.tsc_to_ns = tsc_to_ns,
	.resync = resync,
	.confine = confine,
	.fatal = fatal,
};
