// SPDX-License-Identifier: MIT
/*
 * The vCPU thread: the KVM_RUN loop, exit dispatch, interrupt injection and
 * the halt path. Everything here runs on the vCPU's own thread.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "timers/clock.h"
#include "host_limits.h"
#include "vcpu/vcpu.h"

static bool stopping(const struct vcpu *v)
{
	return atomic_load_explicit(v->stop, memory_order_acquire);
}

static void stop_vm(struct vcpu *v, bool host, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	v->ops->fatal(v, host, msg);
}

/* The guest broke the VM. */
static void fatal(struct vcpu *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fatal(struct vcpu *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stop_vm(v, false, fmt, ap);
	va_end(ap);
}

/* The host refused the vCPU what it needs to go on. */
static void host_refused(struct vcpu *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void host_refused(struct vcpu *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	stop_vm(v, true, fmt, ap);
	va_end(ap);
}

/*
 * Vectors other threads sent (IPIs, the I/O APIC) join the local queue. A
 * level bit is posted before its vector: one seen without its vector
 * belongs to a post still under way, and goes back for the next pass.
 */
static void take_posted(struct vcpu *v)
{
	for (unsigned w = 0; w < 4; w++) {
		uint64_t bits, level;

		if (!atomic_load_explicit(&v->posted[w], memory_order_relaxed))
			continue;
		bits = atomic_exchange(&v->posted[w], 0);
		level = atomic_exchange(&v->posted_level[w], 0);
		if (level & ~bits)
			atomic_fetch_or(&v->posted_level[w], level & ~bits);
		while (bits) {
			unsigned b = (unsigned)__builtin_ctzll(bits);
			uint8_t vector = (uint8_t)(w * 64 + b);

			bits &= bits - 1;
			apic_raise(&v->apic, vector, 1, false, APIC_SRC_IPI, 0);
			apic_set_trigger(&v->apic, vector, level & (1ull << b));
		}
	}
}

/*
 * A SIPI to a vCPU waiting for one: real mode at the vector's page, from
 * KVM's power-on state (CS selector vector << 8, base vector << 12, IP 0).
 */
static void start_at_sipi(struct vcpu *v, uint8_t vector)
{
	struct kvm_sregs sregs = v->reset_sregs;
	struct kvm_regs *regs;

	sregs.cs.selector = (uint16_t)(vector << 8);
	sregs.cs.base = (uint64_t)vector << 12;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0) {
		fatal(v, "KVM_SET_SREGS for a SIPI failed: %s",
		      strerror(errno));
		return;
	}
	regs = vcpu_regs(v);
	memset(regs, 0, sizeof(*regs));
	regs->rflags = 0x2;
	vcpu_regs_changed(v);
	v->wait_for_sipi = false;
}

/* INIT (then the SIPI that may have come with it), on the vCPU's thread. */
static void take_init_sipi(struct vcpu *v)
{
	int sipi;

	if (atomic_load_explicit(&v->init_posted, memory_order_relaxed) &&
	    atomic_exchange(&v->init_posted, false)) {
		apic_init_reset(v);
		/* an interrupt staged for the old context is not the new one's */
		v->run->kvm_dirty_regs &= ~KVM_SYNC_X86_EVENTS;
		v->wait_for_sipi = true;
	}
	if (atomic_load_explicit(&v->sipi_posted, memory_order_relaxed) < 0)
		return;
	sipi = atomic_exchange(&v->sipi_posted, -1);
	if (sipi >= 0 && v->wait_for_sipi)
		start_at_sipi(v, (uint8_t)sipi);
}

/*
 * NMIs other vCPUs sent, queued in KVM with KVM_NMI (for a VMM without
 * KVM's irqchip), which delivers them when the guest can take one. Of
 * several sent meanwhile two are queued: KVM keeps no more pending, as a
 * CPU latches one NMI while it handles another.
 */
static void take_nmis(struct vcpu *v)
{
	unsigned n;

	if (!atomic_load_explicit(&v->nmi_posted, memory_order_relaxed))
		return;
	n = atomic_exchange(&v->nmi_posted, 0);
	for (unsigned i = 0; i < n && i < 2; i++) {
		if (v->fd >= 0 && ioctl(v->fd, KVM_NMI) < 0) {
			fatal(v, "KVM_NMI failed: %s", strerror(errno));
			return;
		}
	}
	v->nmi_taken = true;
}

/*
 * Every return to the VMM: run whatever is due, hard and deferred alike.
 * Woken for a hard expiry a little ahead of it (the timer advance), run
 * up to that expiry now: its vector is staged while the thread would
 * otherwise wait, and held at the gate until the expiry. Returns the
 * host's time.
 */
static uint64_t catch_up(struct vcpu *v)
{
	uint64_t now = clock_now_ns(), until;

	lateness_mark(&v->stats.late, LATE_PHASE_TAKE, now);
	atomic_store(&v->kick_pending, false);
	if (v->ops->resync)
		v->ops->resync(v, now);
	until = advance_catch_up(
		&v->advance[v->halted ? VCPU_WAKE_HALTED : VCPU_WAKE_RUNNING],
		now);
	wheel_advance(&v->wheel, until);
	take_posted(v);
	take_init_sipi(v);
	take_nmis(v);
	return now;
}

/* --trace-late: one line per late hard timer, as it is delivered. */
static void trace_late(const struct vcpu *v, const struct late_event *e)
{
	char causes[160];
	size_t at = 0;

	for (unsigned c = 0; c < LATE_CAUSES && at < sizeof(causes); c++) {
		if (!e->ns[c])
			continue;
		at += (size_t)snprintf(causes + at, sizeof(causes) - at,
				       "%s%s %.3f", at ? ", " : "",
				       late_cause_names[c], e->ns[c] / 1e6);
	}
	fprintf(stderr,
		"lull: vcpu %u: hard timer on vector 0x%02x, due at %.6f s, delivered %.3f ms late (ms: %s)\n",
		v->index, e->vector, e->expiry / 1e9, e->late_ns / 1e6, causes);
}

/* Not before this may the guest see what was staged (0: at once). */
static uint64_t gate(const struct vcpu *v)
{
	uint64_t a = advance_gate(&v->advance[VCPU_WAKE_HALTED]);
	uint64_t b = advance_gate(&v->advance[VCPU_WAKE_RUNNING]);

	return a > b ? a : b;
}

/*
 * Just before KVM_RUN: a vector staged ahead of its expiry waits for it
 * here, on the host's clock, by which the guest's own reads the expiry
 * (a TSC deadline is taken only once tsc_to_ns says so); the timer
 * advance learns how early or late this arrival was. It yields at each
 * turn: on a slow host the wait may be hundreds of µs, and on one short
 * of CPUs another vCPU's thread (a busy guest's) needs that time more
 * than this one needs to be exact.
 */
static void wait_for_gate(struct vcpu *v)
{
	uint64_t until = gate(v), arrived, now;

	if (!until)
		return;
	arrived = now = clock_now_ns();
	while (now < until) {
		sched_yield();
		now = clock_now_ns();
	}
	for (unsigned p = 0; p < VCPU_WAKE_PATHS; p++)
		advance_entered(&v->advance[p], arrived);
}

static void record_delivery(struct vcpu *v, uint8_t vector, uint64_t now)
{
	struct apic *a = &v->apic;
	uint64_t since = a->since[vector];

	v->stats.injections++;
	if (since) {
		uint64_t late = now > since ? now - since : 0;
		struct late_event e;

		if (a->source[vector] == APIC_SRC_HARD) {
			hist_record(&v->stats.hard_lateness_ns, late);
			if (lateness_delivered(&v->stats.late, vector, since,
					       now, &e) &&
			    v->trace_late)
				trace_late(v, &e);
		} else if (a->source[vector] == APIC_SRC_DEFERRED)
			hist_record(&v->stats.deferred_delay_ns, late);
		a->since[vector] = 0; /* later owed deliveries are not timed */
	}
}

/*
 * Without an in-kernel irqchip KVM takes one interrupt at a time, and only
 * when the guest can accept it; otherwise we ask for an exit as soon as it
 * can (KVM_EXIT_IRQ_WINDOW_OPEN).
 */
static void inject(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	int vector = apic_deliverable(&v->apic);

	run->request_interrupt_window = 0;
	if (vector < 0)
		return;
	/* One staged in kvm_run and not yet taken by KVM_RUN: wait for it. */
	if (run->kvm_dirty_regs & KVM_SYNC_X86_EVENTS) {
		run->request_interrupt_window = 1;
		return;
	}
	if (run->ready_for_interrupt_injection && run->if_flag) {
		uint64_t at, held;

		if (v->sync_events) {
			/*
			 * The interrupt rides into KVM_RUN in kvm_run's
			 * events: no KVM_INTERRUPT ioctl, whose vcpu_load
			 * alone (MSR reads, which trap on a nested host) was
			 * ~5% of a 1 kHz guest's host CPU.
			 */
			struct kvm_vcpu_events *ev = &run->s.regs.events;

			ev->interrupt.injected = 1;
			ev->interrupt.nr = (uint8_t)vector;
			ev->interrupt.soft = 0;
			run->kvm_dirty_regs |= KVM_SYNC_X86_EVENTS;
		} else {
			struct kvm_interrupt irq = { .irq = (unsigned)vector };

			if (ioctl(v->fd, KVM_INTERRUPT, &irq) < 0) {
				fatal(v,
				      "KVM_INTERRUPT of vector %d failed: %s",
				      vector, strerror(errno));
				return;
			}
		}
		/* seen by the guest at the gate, if it has to wait for one */
		at = clock_now_ns();
		held = gate(v);
		record_delivery(v, (uint8_t)vector, held > at ? held : at);
		apic_delivered(&v->apic, (uint8_t)vector);
		if (apic_deliverable(&v->apic) >= 0)
			run->request_interrupt_window = 1;
	} else {
		run->request_interrupt_window = 1;
	}
}

/* The kick signal stays pending after KVM_RUN returns; take it. */
static void drain_kick_signal(struct vcpu *v)
{
	static const struct timespec zero;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIG_VCPU_KICK);
	while (sigtimedwait(&set, NULL, &zero) == SIG_VCPU_KICK)
		v->stats.kicks_received++;
}

/*
 * Called only while the vCPU is out of the guest (state not IN_GUEST), so
 * that the drain below can take no other thread's kick: they signal only
 * a vCPU in the guest.
 */
static void arm_kick_timer(struct vcpu *v, uint64_t when, uint64_t now)
{
	struct itimerspec its = { 0 };
	uint64_t was = v->kick_armed_at;

	if (when == was)
		return;
	/*
	 * Re-arming does not take back a signal the old expiry already
	 * sent: pending, it would end the next KVM_RUN before the guest ran
	 * an instruction, a whole way out and back for nothing (on a slow
	 * host, where the VMM's own work outlasts the minimum run, every
	 * few exits). Taken before the new expiry is armed, never after: a
	 * thread held up between its clock read and the arming (a nested
	 * host's emulated CPU) can find that one already past, and its
	 * signal is the only kick a guest that never exits gets.
	 */
	if (was <= now)
		drain_kick_signal(v);
	if (when != UINT64_MAX) {
		its.it_value.tv_sec = (time_t)(when / 1000000000ull);
		its.it_value.tv_nsec = (long)(when % 1000000000ull);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1; /* zero would disarm */
	}
	/* Unarmed, a busy vCPU would never run its timers: stop instead. */
	if (timer_settime(v->kick_timer, TIMER_ABSTIME, &its, NULL) < 0) {
		host_refused(v, "cannot arm the kick timer: %s", strerror(errno));
		return;
	}
	v->kick_armed_at = when;
}

/* A halted vCPU resumes for an interrupt it can take, an NMI, or INIT.
 * With IF clear, or the vector masked by the APIC's priority, it sleeps
 * on. */
static bool halt_ends(struct vcpu *v)
{
	return (apic_deliverable(&v->apic) >= 0 && v->run->if_flag) ||
	       v->nmi_taken || v->wait_for_sipi;
}

static bool sipi_came(struct vcpu *v)
{
	return !v->wait_for_sipi;
}

/*
 * When a vCPU must be back, from `next`, an expiry of its wheel: that plus
 * the slop, so that lull's own timers due within it run in one wake; but
 * the local APIC timer, armed hard, at its own expiry. That is the guest's
 * deadline, which already carries the guest's own slack (Linux gives its
 * timers theirs before it programs the TSC deadline): lull's on top would
 * be latency in every timer interrupt, which KVM's APIC does not add.
 */
static uint64_t due_by(struct vcpu *v, uint64_t next)
{
	uint64_t apic = wheel_timer_hard_due(&v->wheel, &v->apic.timer);

	if (next != WHEEL_NEVER)
		next = sat_add(next, v->slop_ns);
	return apic < next ? apic : next;
}

/*
 * Out of the guest, before an entry: a hard expiry due sooner than a kick
 * could come back for it (the running path's estimate) is taken now, its
 * vector held at the gate until the expiry. Entering and kicking would
 * deliver it the estimate late (later still within the minimum run), and
 * the kick's way out and back costs the guest more than the wait does.
 * Not while a vector is already due: the gate would hold that one too.
 */
static void take_near_expiry(struct vcpu *v, uint64_t now)
{
	uint64_t hard_at;

	if (apic_deliverable(&v->apic) >= 0)
		return;
	hard_at = due_by(v, wheel_next_hard_expiry(&v->wheel));
	if (advance_take_near(&v->advance[VCPU_WAKE_RUNNING], hard_at, now))
		wheel_advance(&v->wheel, hard_at);
}

/*
 * The kernel's count of this thread's context switches: voluntary (its
 * sleeps) or involuntary (another thread took the CPU: a preemption, or a
 * yield that found one to run).
 */
static uint64_t thread_switches(bool voluntary)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (uint64_t)(voluntary ? ru.ru_nvcsw : ru.ru_nivcsw);
}

/*
 * A halt whose hard expiry (its advanced wake) is near spins for it, as
 * KVM's halt polling does, but knowing when: a sleep would cost the
 * host's wake latency, more than the wait itself on a slow host. Still
 * "in the VMM" for other threads, whose kicks it watches. It yields at
 * each turn, and once a yield (or a preemption) let another thread run,
 * it stops: false, and the halt sleeps for the rest. A thread that gave
 * way gets the CPU back only when the other's slice ends, which a wake
 * beats; and on a host short of CPUs a poll takes none from a busy thread
 * (KVM stops polling where another task is runnable, for the same reason).
 */
static bool halt_poll(struct vcpu *v, uint64_t until)
{
	uint64_t from = clock_now_ns(), now = from;
	uint64_t switches = thread_switches(false);
	bool alone = true;

	v->stats.halt_polls++;
	while (now < until && !atomic_load(&v->kick_pending) && !stopping(v)) {
		sched_yield();
		/* the turn another thread took is its CPU, not the poll's */
		if (thread_switches(false) != switches) {
			alone = false;
			break;
		}
		now = clock_now_ns();
	}
	v->stats.halt_poll_ns += now - from;
	v->stats.halt_polls_given_way += !alone;
	return alone;
}

/*
 * Sleeps until ready(v). The only timeout is the next hard expiry plus
 * the slop (due_by); deferrable timers never end this sleep.
 */
static void sleep_until(struct vcpu *v, bool (*ready)(struct vcpu *v))
{
	bool may_poll = true;

	/* A deferrable deadline must not wake the host through the kick timer. */
	arm_kick_timer(v, UINT64_MAX, clock_now_ns());

	v->halted = true;
	apic_halting(v);
	advance_cancel(&v->advance[VCPU_WAKE_RUNNING]);
	for (;;) {
		struct advance *adv = &v->advance[VCPU_WAKE_HALTED];
		uint64_t due, deadline, now, poll;
		int r;

		now = catch_up(v);
		if (stopping(v) || ready(v)) {
			v->caught_up_at = now;
			break;
		}
		/* staged ahead, but not taken now: the gate waits for nothing */
		advance_cancel(adv);
		due = due_by(v, wheel_next_hard_expiry(&v->wheel));
		deadline = advance_wake_at(adv, due, now);
		poll = v->halt_poll_ns;
		/*
		 * Nearer than the advance goes, a sleep would come back late
		 * by the way back itself; spin for it, as for --halt-poll
		 * (a busy guest on a slow host halts this near its next
		 * timer, and one late interrupt makes the next halt nearer).
		 */
		if (may_poll && advance_too_near(adv, due, now)) {
			poll = due - now;
			v->stats.halt_polls_near++;
		}
		if (may_poll && poll && deadline >= now &&
		    deadline - now <= poll) {
			may_poll = halt_poll(v, deadline);
			continue;
		}

		atomic_store(&v->state, VCPU_IDLE);
		if (atomic_load(&v->kick_pending)) {
			atomic_store(&v->state, VCPU_IN_VMM);
			continue;
		}
		lateness_mark(&v->stats.late, LATE_PHASE_IDLE, clock_now_ns());
		/* the catch-up at the loop's top marks the wake */
		r = idle_sleep(&v->idle, deadline);
		atomic_store(&v->state, VCPU_IN_VMM);
		v->stats.host_wakeups++;
		if (r < 0) {
			host_refused(v, "idle wait failed: %s", strerror(-r));
			break;
		}
	}
	v->halted = false;
}

/*
 * KVM keeps CPUID.1:EDX.APIC in step with the enable bit of its own copy
 * of IA32_APIC_BASE (kvm_update_cpuid_runtime), which the guest's writes,
 * filtered to lull, never reach: a write lull's APIC took is copied there,
 * so that a guest that disables its APIC sees the bit clear, as on KVM's
 * APIC.
 */
static void tell_kvm_apic_base(struct vcpu *v, uint64_t value)
{
	/* struct kvm_msrs ends in a flexible array: room for one entry */
	union {
		struct kvm_msrs head;
		uint8_t bytes[sizeof(struct kvm_msrs) +
			      sizeof(struct kvm_msr_entry)];
	} msrs = { .head.nmsrs = 1 };

	msrs.head.entries[0].index = MSR_IA32_APIC_BASE;
	msrs.head.entries[0].data = value;
	if (ioctl(v->fd, KVM_SET_MSRS, &msrs.head) != 1)
		fatal(v,
		      "KVM refused IA32_APIC_BASE 0x%llx that lull's APIC took",
		      (unsigned long long)value);
}

/*
 * MSRs KVM hands to userspace: the APIC's (filtered to us), and any access
 * KVM itself would fault (run->msr.reason says which); error = 1 makes
 * KVM inject the #GP.
 */
static void msr_exit(struct vcpu *v, bool write)
{
	struct kvm_run *run = v->run;
	uint64_t data = run->msr.data;
	int r = write ? apic_wrmsr(v, run->msr.index, data) :
			apic_rdmsr(v, run->msr.index, &data);

	if (write && r == 0 && run->msr.index == MSR_IA32_APIC_BASE)
		tell_kvm_apic_base(v, data);

	if (r == -ENOENT)
		r = v->ops->msr(v, run->msr.index, write, &data) ? 0 : -EPERM;
	run->msr.error = r < 0;
	if (!write)
		run->msr.data = r < 0 ? 0 : data;
}

static enum vcpu_exit_kind exit_kind(uint32_t reason)
{
	switch (reason) {
	case KVM_EXIT_HLT:
		return VCPU_EXIT_HLT;
	case KVM_EXIT_IO:
		return VCPU_EXIT_IO;
	case KVM_EXIT_MMIO:
		return VCPU_EXIT_MMIO;
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		return VCPU_EXIT_MSR;
	case KVM_EXIT_IRQ_WINDOW_OPEN:
		return VCPU_EXIT_IRQ_WINDOW;
	case KVM_EXIT_INTR:
		return VCPU_EXIT_KICK;
	default:
		return VCPU_EXIT_OTHER;
	}
}

static void handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	v->stats.exits_by_kind[exit_kind(run->exit_reason)]++;

	/* The guest may move its TPR through CR8 without an exit. */
	if (run->cr8 != apic_cr8(&v->apic))
		apic_set_cr8(&v->apic, (uint8_t)run->cr8);
	switch (run->exit_reason) {
	case KVM_EXIT_HLT:
		v->stats.halts++;
		v->nmi_taken = false; /* one queued before was delivered */
		sleep_until(v, halt_ends);
		break;
	case KVM_EXIT_X86_RDMSR:
		msr_exit(v, false);
		break;
	case KVM_EXIT_X86_WRMSR:
		msr_exit(v, true);
		break;
	case KVM_EXIT_IO:
		v->ops->io(v, run->io.port,
			   run->io.direction == KVM_EXIT_IO_OUT, run->io.size,
			   run->io.count, (uint8_t *)run + run->io.data_offset);
		break;
	case KVM_EXIT_MMIO:
		v->ops->mmio(v, run->mmio.phys_addr, run->mmio.is_write,
			     run->mmio.len, run->mmio.data);
		break;
	case KVM_EXIT_IRQ_WINDOW_OPEN:
	case KVM_EXIT_INTR:
		break;
	case KVM_EXIT_SET_TPR:
		/* KVM without its own APIC exits when CR8 goes down, so
		 * that what the lower priority lets through is delivered:
		 * the CR8 sync above has told the APIC, the next entry
		 * delivers. */
		break;
	case KVM_EXIT_SHUTDOWN:
		fatal(v, "triple fault (KVM_EXIT_SHUTDOWN) at rip 0x%llx",
		      (unsigned long long)vcpu_regs(v)->rip);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		fatal(v, "KVM internal error, suberror %u, at rip 0x%llx",
		      run->internal.suberror,
		      (unsigned long long)vcpu_regs(v)->rip);
		break;
	case KVM_EXIT_FAIL_ENTRY:
		fatal(v,
		      "VM entry failed, hardware reason 0x%llx, at rip 0x%llx",
		      (unsigned long long)
			      run->fail_entry.hardware_entry_failure_reason,
		      (unsigned long long)vcpu_regs(v)->rip);
		break;
	default:
		fatal(v, "unexpected KVM exit reason %u at rip 0x%llx",
		      run->exit_reason, (unsigned long long)vcpu_regs(v)->rip);
		break;
	}
}

static int thread_setup(struct vcpu *v)
{
	struct sigevent sev = { 0 };
	union {
		struct kvm_signal_mask head;
		uint8_t bytes[sizeof(struct kvm_signal_mask) + 8];
	} mask;
	sigset_t set;

	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIG_VCPU_KICK;
	sev._sigev_un._tid =
		gettid(); /* glibc 2.36 lacks sigev_notify_thread_id */
	if (timer_create(CLOCK_MONOTONIC, &sev, &v->kick_timer) < 0)
		return -errno;
	v->kick_timer_made = true;

	/* Inside KVM_RUN the kick signal is unblocked, so it ends KVM_RUN. */
	pthread_sigmask(SIG_BLOCK, NULL, &set);
	sigdelset(&set, SIG_VCPU_KICK);
	mask.head.len = 8; /* the kernel's sigset size, not glibc's */
	memcpy(mask.head.sigset, &set, 8);
	if (ioctl(v->fd, KVM_SET_SIGNAL_MASK, &mask.head) < 0)
		return -errno;
	/* schedstat is this thread's: opened here, before confinement */
	if (v->trace_late)
		return lateness_sample_sched(&v->stats.late);
	return 0;
}

/*
 * At an entry after a timer kick: the VMM's way back from that exit (the
 * catch-up, the injection, the gate) sets the next minimum run to twice
 * that. It falls by an eighth of each error, and rises by at most an
 * eighth of itself: a way back that is long every time (a slow host, a
 * storm's catch-up) is learned within a few dozen kicks, one that was
 * long once (the thread preempted on a loaded host: a busy guest's
 * timers would be held off for it) barely moves it.
 */
static void learn_min_run(struct vcpu *v, uint64_t entry)
{
	uint64_t way = entry - v->kicked_at, want = 2 * way, step;

	if (!v->kicked_at)
		return;
	v->kicked_at = 0;
	if (want < VCPU_MIN_RUN_NS)
		want = VCPU_MIN_RUN_NS;
	if (want > VCPU_MAX_MIN_RUN_NS)
		want = VCPU_MAX_MIN_RUN_NS;
	if (want > v->min_run_ns) {
		step = (want - v->min_run_ns + 7) / 8;
		if (step > v->min_run_ns / 8)
			step = v->min_run_ns / 8;
		v->min_run_ns += step;
	} else {
		v->min_run_ns -= (v->min_run_ns - want + 7) / 8;
	}
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	char name[16];
	uint64_t switches_before;
	int r;

	v->self = pthread_self();
	/* Benchmarks and tests find vCPU threads in /proc by this name. */
	snprintf(name, sizeof(name), "vcpu%u", v->index);
	pthread_setname_np(v->self, name);
	/*
	 * The kernel lets a sleeping thread's timeouts slip by its timer
	 * slack (50 us by default); the slop is our one coalescing window.
	 */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	r = thread_setup(v);

	if (r < 0) {
		host_refused(v, "vCPU thread setup failed: %s", strerror(-r));
		return NULL;
	}
	if (v->ops->confine && v->ops->confine(v))
		return NULL;
	/*
	 * The kernel's count of this thread's sleeps. host_wakeups counts
	 * returns from the idle wait; counted from the first entry into the
	 * guest (set-up sleeps are not the guest's), the two should agree but
	 * for the few other sleeps a running vCPU does (the console lock),
	 * which is the point of reporting both.
	 */
	switches_before = thread_switches(true);
	while (!stopping(v)) {
		uint64_t now = v->caught_up_at ? v->caught_up_at : catch_up(v);
		uint64_t kick_at, hard_at, early, entry, back;

		v->caught_up_at = 0;
		if (v->wait_for_sipi) {
			sleep_until(v, sipi_came);
			continue;
		}
		take_near_expiry(v, now);
		inject(v);
		/*
		 * A host slower than the guest's timers (loaded, or nested)
		 * finds the next expiry already past by the time it enters
		 * the guest; kicked at once, the vCPU would only ever take
		 * interrupts and never run its own code.
		 */
		kick_at = due_by(v, wheel_next_expiry(&v->wheel));
		hard_at = due_by(v, wheel_next_hard_expiry(&v->wheel));
		/*
		 * A hard timer's kick comes ahead by the estimate; not a
		 * deferrable timer's, nor one the guest's minimum run would
		 * hold off anyway (a storm of timers faster than the way
		 * back: there the advance would only spin).
		 */
		early = advance_wake_at(&v->advance[VCPU_WAKE_RUNNING],
					kick_at == hard_at ? kick_at : 0, now);
		if (kick_at == hard_at && early >= now + v->min_run_ns)
			kick_at = early;
		else
			advance_wake_at(&v->advance[VCPU_WAKE_RUNNING], 0, now);
		v->run->cr8 = apic_cr8(&v->apic);
		wait_for_gate(v);
		/* the minimum run counts from the entry: not from the catch-up,
		 * a gate's wait or a slow host's way here eat into it */
		entry = clock_now_ns();
		learn_min_run(v, entry);
		if (kick_at < entry + v->min_run_ns)
			kick_at = entry + v->min_run_ns;
		arm_kick_timer(v, kick_at, entry);
		atomic_store(&v->state, VCPU_IN_GUEST);
		if (atomic_load(&v->kick_pending) || stopping(v)) {
			atomic_store(&v->state, VCPU_IN_VMM);
			continue;
		}
		apic_pv_eoi_offer(v);
		lateness_mark(&v->stats.late, LATE_PHASE_GUEST, entry);
		r = ioctl(v->fd, KVM_RUN, 0);
		back = clock_now_ns();
		lateness_mark(&v->stats.late, LATE_PHASE_VMM, back);
		apic_pv_eoi_collect(v);
		atomic_store(&v->state, VCPU_IN_VMM);
		v->stats.exits++;
		if (r < 0) {
			/*
			 * Only a signal is a kick. KVM also fails a run it
			 * cannot start, every time it is asked: EAGAIN where
			 * the host refuses it its per-VM worker thread (the
			 * NX huge page recovery) at the task limit.
			 */
			if (errno == EINTR) {
				v->stats.exits_by_kind[VCPU_EXIT_KICK]++;
				if (back >= v->kick_armed_at)
					v->kicked_at = back;
				drain_kick_signal(v);
				continue;
			}
			v->stats.exits_by_kind[VCPU_EXIT_OTHER]++;
			if (errno == EAGAIN || errno == ENOMEM)
				host_refused(v, "KVM_RUN failed: %s%s",
					     strerror(errno),
					     host_task_limit_hint(errno));
			else
				fatal(v, "KVM_RUN failed: %s", strerror(errno));
			break;
		}
		handle_exit(v);
	}
	arm_kick_timer(v, UINT64_MAX, clock_now_ns());
	v->stats.kernel_voluntary_switches =
		thread_switches(true) - switches_before;
	v->stats.thread_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int vcpu_start(struct vcpu *v)
{
	int r = pthread_create(&v->thread, NULL, vcpu_thread, v);

	if (r)
		return -r;
	v->thread_started = true;
	return 0;
}

void vcpu_join(struct vcpu *v)
{
	if (v->thread_started)
		pthread_join(v->thread, NULL);
	v->thread_started = false;
}
