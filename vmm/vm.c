// SPDX-License-Identifier: MIT
/*
 * Running a VM that vm_create (builder.c) built: the vCPU threads, the
 * wait for the first reason to stop, the stop itself, teardown; and the
 * guest-RAM and hypercall-error helpers the exits use while it runs.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host_limits.h"
#include "timers/clock.h"
#include "vmm/sandbox.h"
#include "vmm/vm.h"

void vm_request_stop(struct vm *vm, enum vm_stop_cause cause, int status,
		     const char *reason)
{
	bool first = false;

	if (!atomic_compare_exchange_strong(&vm->stopped_once, &first, true))
		return;
	vm->stop_cause = cause;
	vm->exit_status = status;
	snprintf(vm->stop_reason, sizeof(vm->stop_reason), "%s", reason);
	atomic_store_explicit(&vm->stop, true, memory_order_release);
	for (unsigned i = 0; i < vm->nr_cpus_made; i++)
		vcpu_kick(&vm->cpus[i].vcpu);
	if (atomic_load(&vm->main_thread_known))
		pthread_kill(vm->main_thread, SIG_VM_STOP);
}

/*
 * The main thread sleeps in ppoll() for the stop signals, the vCPUs'
 * SIG_VM_STOP, the --timeout and the console (whose writes it makes). The
 * stop signals are blocked but in that wait, so they interrupt nothing
 * else of the main thread's and no other thread takes them. Not signalfd:
 * its wait queue is shared by the whole thread group, so every kick signal
 * sent to a vCPU thread would wake this thread for nothing (measured: ~70
 * wakeups/s per VM with a 1 kHz tick).
 */
static volatile sig_atomic_t stop_signal;

static void note_stop_signal(int sig)
{
	if (sig != SIG_VM_STOP) /* the vCPU that sent it said why */
		stop_signal = sig;
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIG_VM_STOP };

/* Blocks the stop signals (every vCPU thread inherits the block) and
 * returns the mask the wait unblocks them with. */
static void take_stop_signals(sigset_t *waiting)
{
	struct sigaction sa = { .sa_handler = note_stop_signal };
	sigset_t set;

	sigemptyset(&set);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(int); i++) {
		sigaddset(&set, stop_signals[i]);
		sigaction(stop_signals[i], &sa, NULL);
	}
	pthread_sigmask(SIG_BLOCK, &set, waiting);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(int); i++)
		sigdelset(waiting, stop_signals[i]);
}

/* Waits for the first reason to stop (a vCPU, a signal or the timeout),
 * writing the console meanwhile. */
static void wait_for_stop(struct vm *vm, const sigset_t *waiting)
{
	uint64_t deadline = UINT64_MAX;

	if (vm->cfg.timeout_s > 0)
		deadline = vm->start_ns + (uint64_t)(vm->cfg.timeout_s * 1e9);
	while (!atomic_load(&vm->stop)) {
		struct pollfd fds[CONSOLE_POLL_FDS];
		unsigned nfds = console_poll_fds(&vm->console, fds);
		struct timespec ts, *tsp = NULL;
		uint64_t now = clock_now_ns();

		if (deadline != UINT64_MAX) {
			if (now >= deadline) {
				char reason[80];

				snprintf(reason, sizeof(reason),
					 "--timeout of %g s expired",
					 vm->cfg.timeout_s);
				vm_request_stop(vm, VM_STOP_TIMEOUT,
						LULL_EXIT_TIMEOUT, reason);
				break;
			}
			ts.tv_sec = (time_t)((deadline - now) / 1000000000ull);
			ts.tv_nsec = (long)((deadline - now) % 1000000000ull);
			tsp = &ts;
		}
		ppoll(fds, nfds, tsp, waiting);
		if (stop_signal) {
			char reason[64];

			snprintf(reason, sizeof(reason), "stopped by SIG%s",
				 sigabbrev_np(stop_signal));
			vm_request_stop(vm, VM_STOP_SIGNAL,
					LULL_EXIT_SIGNAL_BASE + stop_signal,
					reason);
		}
		console_flush(&vm->console);
	}
}

int vm_run(struct vm *vm)
{
	sigset_t waiting;

	take_stop_signals(&waiting);
	vm->main_thread = pthread_self();
	atomic_store(&vm->main_thread_known, true);

	for (unsigned i = 0; i < vm->cfg.nr_vcpus; i++) {
		int r = vcpu_start(&vm->cpus[i].vcpu);

		if (r < 0) {
			char reason[256];

			snprintf(reason, sizeof(reason),
				 "cannot start the thread of vCPU %u: %s%s", i,
				 strerror(-r), host_task_limit_hint(-r));
			vm_request_stop(vm, VM_STOP_HOST, LULL_EXIT_HOST, reason);
			break;
		}
	}
	/* Every thread that runs guest code has confined itself by now. */
	if (!atomic_load(&vm->stop)) {
		char err[160];

		if (sandbox_enter_main(vm->console.wake_fd, vm->console.out_fd,
				       err, sizeof(err)) < 0)
			vm_request_stop(vm, VM_STOP_HOST, LULL_EXIT_HOST, err);
	}
	wait_for_stop(vm, &waiting);
	for (unsigned i = 0; i < vm->nr_cpus_made; i++)
		vcpu_join(&vm->cpus[i].vcpu);
	vm->end_ns = clock_now_ns();
	/* before --stats, which may share stdout and counts what was lost */
	console_close(&vm->console);
	return vm->exit_status;
}

void vm_destroy(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_cpus_made; i++)
		vcpu_destroy(&vm->cpus[i].vcpu);
	free(vm->cpus);
	vm->cpus = NULL;
	if (vm->ram)
		munmap(vm->ram, vm->ram_size);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	console_close(&vm->console);
}

void *vm_gpa_to_hva(struct vm *vm, uint64_t gpa, uint64_t len)
{
	if (gpa >= vm->ram_size || len > vm->ram_size - gpa)
		return NULL;
	return vm->ram + gpa;
}

void vm_hc_error(struct vm *vm, struct vcpu *v, enum hc_error kind,
		 const char *detail)
{
	bool logged = false;

	atomic_fetch_add_explicit(&vm->hc_errors[kind], 1,
				  memory_order_relaxed);
	if (atomic_compare_exchange_strong(&vm->hc_error_logged[kind], &logged,
					   true))
		fprintf(stderr,
			"lull: vcpu %u: bad hypercall argument: %s (further ones of this kind are only counted)\n",
			v->index, detail);
}
