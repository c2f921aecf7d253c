/* SPDX-License-Identifier: MIT */
/*
 * The virtual machine: guest RAM, vCPUs, devices and the way it stops.
 *
 * vm_create() (builder.h) builds everything from a vm_config and loads
 * the guest. vm_run() (vm.c) starts the vCPU threads and waits for the
 * first reason to stop (debug-exit write, ACPI power-off or a reset, guest
 * crash, --timeout, SIGINT/SIGTERM), then stops every vCPU and returns
 * lull's exit status. Errors inside are negative errno values with one
 * sentence in vm->error; main() prints it.
 *
 * Calls go one way: builder.c -> exits.c (the vcpu_ops and device
 * callbacks it installs) -> hypercall.c -> vm.c (stop, guest RAM).
 */
#ifndef LULL_VM_H
#define LULL_VM_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/console.h"
#include "devices/ioapic.h"
#include "devices/fw_cfg.h"
#include "devices/power.h"
#include "devices/serial.h"
#include "vcpu/pvclock.h"
#include "vcpu/pvtimer.h"
#include "vcpu/vcpu.h"
#include "vmm/exit_status.h"
#include "vmm/exits.h"
#include "vmm/kvm_host.h"

/* Wakes the main thread when a vCPU (or anything) stops the VM. */
#define SIG_VM_STOP SIGUSR2

/* --slop's default: the coalescing window of a hard timer, in ns */
#define LULL_DEFAULT_SLOP_NS 50000

/*
 * --mem's default, by the kernel's format: lull's own guests live in a few
 * MiB; Debian's kernel with an initramfs needs 128M or so to reach init,
 * and twice that leaves its userspace room (untouched pages cost nothing).
 */
#define VM_DEFAULT_MEM_PVH (16ull << 20)
#define VM_DEFAULT_MEM_BZIMAGE (256ull << 20)

struct vm_config {
	const char *guest_path;
	uint64_t mem_size; /* 0: the default for the kernel's format */
	unsigned nr_vcpus;
	unsigned timer_mode; /* LULL_MODE_*, as the guest reads it in CPUID */
	unsigned missed_ticks; /* LULL_MISSED_* */
	uint64_t slop_ns;
	/* a halted vCPU's APIC timer waits for the next multiple of this on
	 * the host's clock (--apic-max-defer); 0: hard */
	uint64_t apic_max_defer_ns;
	unsigned nr_slots;
	/* hard timers later than this have their lateness charged to
	 * causes (--late-threshold); --trace-late prints each */
	uint64_t late_threshold_ns;
	bool trace_late;
	bool no_timer_advance; /* --no-timer-advance: wake at the expiry */
	uint64_t halt_poll_ns; /* --halt-poll */
	double timeout_s; /* 0: none */
	const char *cmdline; /* NULL: none given (a bzImage gets a default) */
	const char *initrd_path; /* --initrd; NULL: none */
	const char *console_path; /* NULL: stdout */
	uint64_t console_limit; /* bytes; 0: none */
	const char *stats_path; /* NULL: none, "-": stdout */
	bool no_seccomp; /* --no-seccomp: confine threads without filters */
	bool no_mem_merge; /* --no-mem-merge: keep guest RAM from KSM */
	bool no_x2apic; /* --no-x2apic: the local APIC is an xAPIC only */
	bool no_pv_eoi; /* --no-pv-eoi: CPUID offers no PV EOI */
	bool test_device; /* --test-device: pc-testdev's IRQ lines */
};

/* Hypercall argument errors, counted per kind, the first of each logged. */
enum hc_error {
	HC_ERR_OP,
	HC_ERR_SLOT,
	HC_ERR_VECTOR,
	HC_ERR_FLAGS,
	HC_ERR_PERIOD,
	HC_ERR_POINTER,
	HC_ERR_TARGET,
	HC_ERR_KINDS
};

/* Why the VM stopped: what lull says about it, beside the status. */
enum vm_stop_cause {
	VM_STOP_GUEST_EXIT, /* the guest wrote its status: nothing to add */
	VM_STOP_CRASH, /* triple fault, KVM internal error, failed entry */
	VM_STOP_TIMEOUT,
	VM_STOP_SIGNAL,
	VM_STOP_HOST, /* lull could not go on: a thread, a filter */
	VM_STOP_POWEROFF, /* the guest entered ACPI S5 (power.h): status 0 */
	VM_STOP_RESET, /* the guest asked for a reset: LULL_EXIT_REBOOT */
};

/* Port I/O exits by the device that took them, for --stats. */
enum io_class {
	IO_CLASS_HYPERCALL,
	IO_CLASS_CONSOLE, /* COM1 and debugcon */
	IO_CLASS_PLATFORM, /* debug-exit, and the ports platform.h names */
	IO_CLASS_UNCLAIMED,
	IO_CLASS_KINDS
};

struct vm_cpu {
	struct vcpu vcpu;
	struct pvtimer pv;
	uint64_t io_exits[IO_CLASS_KINDS]; /* this vCPU's own thread only */
};

struct vm {
	struct vm_config cfg;
	int kvm_fd, vm_fd;
	struct kvm_host kvm; /* which KVM, and what it offers */
	uint8_t *ram;
	uint64_t ram_size;
	bool mem_merge; /* guest RAM is offered to the host's KSM */
	uint32_t tsc_khz;
	bool has_apic; /* the APIC's MSRs reach lull */
	struct vm_cpu *cpus;
	unsigned nr_cpus_made;

	atomic_bool stop;
	atomic_bool stopped_once;
	enum vm_stop_cause stop_cause;
	int exit_status;
	char stop_reason[256];
	pthread_t main_thread; /* sleeps in vm_run until SIG_VM_STOP */
	atomic_bool main_thread_known;

	struct console console;
	struct serial serial;
	struct ioapic ioapic;
	struct power power;
	struct fw_cfg fw_cfg;

	/* untrusted-guest accounting */
	atomic_uint_fast64_t hc_calls;
	atomic_uint_fast64_t hc_errors[HC_ERR_KINDS];
	atomic_bool hc_error_logged[HC_ERR_KINDS];
	struct unclaimed unclaimed;

	uint64_t start_ns, end_ns;
	char error[256];
};

int vm_run(struct vm *vm);
void vm_destroy(struct vm *vm);

/* Ends the VM with `status`; the first caller wins. Any thread. */
void vm_request_stop(struct vm *vm, enum vm_stop_cause cause, int status,
		     const char *reason);

/* Guest RAM access with bounds checks: NULL if [gpa, gpa+len) is not RAM. */
void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa, uint64_t len);

static inline struct vm *vcpu_vm(struct vcpu *v)
{
	return v->owner;
}

/* Counts a bad hypercall argument; logs the first of each kind. */
void vm_hc_error(struct vm *vm, struct vcpu *v, enum hc_error kind,
		 const char *detail);

#endif
