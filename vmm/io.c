// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "container_of.h"
#include "vmm/hypercall.h"
#include "vmm/io.h"
#include "devices/ioapic.h"
#include "platform.h"
#include "devices/power.h"
#include "vmm/sandbox.h"
#include "devices/serial.h"
#include "vmm/vm.h"

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

static void debug_exit(struct vm *vm, unsigned size, const uint8_t *data)
{
	uint32_t value = 0;
	char reason[64];

	memcpy(&value, data, size > 4 ? 4 : size);
	snprintf(reason, sizeof(reason),
		 "guest wrote %u to the debug-exit port", value);
	vm_request_stop(vm, VM_STOP_GUEST_EXIT, (int)(value & 0xff), reason);
}

/* The ACPI sleep and reset registers (power.h); false if not one. */
static bool power_port(struct vm *vm, struct vcpu *v, uint16_t port,
		       bool out, unsigned size, uint8_t *data)
{
	switch (power_io(&vm->power, v->index, port, out, size, data)) {
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

/* One access (of a string instruction's count); returns who took it. */
static enum io_class port_access(struct vcpu *v, uint16_t port, bool out,
				 unsigned size, unsigned count, uint8_t *data)
{
	struct vm *vm = vcpu_vm(v);

	if (port >= LULL_COM1_PORT && port < LULL_COM1_PORT + SERIAL_PORTS &&
	    size == 1) {
		serial_io(&vm->serial, port - LULL_COM1_PORT, out, data);
		return IO_CLASS_CONSOLE;
	}
	if (port == LULL_DEBUGCON_PORT) {
		if (out)
			console_putc(&vm->console, data[0]);
		else
			memset(data, 0xe9, size); /* QEMU's "present" */
		return IO_CLASS_CONSOLE;
	}
	if (port == LULL_DEBUG_EXIT_PORT && out) {
		debug_exit(vm, size, data);
		return IO_CLASS_PLATFORM;
	}
	if (port == LULL_HCALL_PORT && out && count == 1) {
		hypercall_exit(vm, cpu_of(v));
		return IO_CLASS_HYPERCALL;
	}
	if (power_port(vm, v, port, out, size, data))
		return IO_CLASS_PLATFORM;
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
		class = port_access(v, port, out, size, count, data);
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

static void mmio(struct vcpu *v, uint64_t addr, bool write, unsigned len,
		 uint8_t *data)
{
	struct vm *vm = vcpu_vm(v);

	if (apic_mmio(v, addr, write, len, data))
		return;
	if (addr >= PLATFORM_IOAPIC_GPA &&
	    addr - PLATFORM_IOAPIC_GPA < PLATFORM_IOAPIC_SIZE) {
		ioapic_mmio(&vm->ioapic, addr - PLATFORM_IOAPIC_GPA, write, len,
			    data);
		return;
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
		if (first_sighting(&vm->unclaimed,
				   IPI_KEY | ipi->mode))
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

static uint64_t tsc_to_ns(struct vcpu *v, uint64_t tsc)
{
	return pvclock_tsc_to_ns(&cpu_of(v)->pv.clock, v->fd, tsc);
}

static void resync(struct vcpu *v, uint64_t now)
{
	pvtimer_resync(&cpu_of(v)->pv, now);
}

static int confine(struct vcpu *v)
{
	char err[160];
	int r = sandbox_enter_vcpu(v->index, v->fd, idle_ring_fd(&v->idle), err,
				   sizeof(err));

	if (r < 0)
		vm_request_stop(vcpu_vm(v), VM_STOP_HOST, LULL_EXIT_HOST, err);
	return r;
}

static void fatal(struct vcpu *v, const char *what)
{
	char reason[200];

	snprintf(reason, sizeof(reason), "vcpu %u: %s", v->index, what);
	vm_request_stop(vcpu_vm(v), VM_STOP_CRASH, LULL_EXIT_GUEST_CRASH,
			reason);
}

const struct vcpu_ops vm_vcpu_ops = {
	.io = port_io,
	.mmio = mmio,
	.msr = msr,
	.ipi = ipi,
	.level_eoi = level_eoi,
	.tsc_to_ns = tsc_to_ns,
	.resync = resync,
	.confine = confine,
	.fatal = fatal,
};
