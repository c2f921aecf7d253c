// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "timers/clock.h"
#include "vmm/stats.h"
#include "vmm/vm.h"

static const char *const hc_error_names[HC_ERR_KINDS] = {
	[HC_ERR_OP] = "op",	    [HC_ERR_SLOT] = "slot",
	[HC_ERR_VECTOR] = "vector", [HC_ERR_FLAGS] = "flags",
	[HC_ERR_PERIOD] = "period", [HC_ERR_POINTER] = "pointer",
	[HC_ERR_TARGET] = "target",
};

static const char *const missed_names[] = { "one", "all", "none" };

static uint64_t status_kib(int proc_status, const char *field)
{
	char text[4096];
	size_t len = strlen(field);
	uint64_t kib = 0;
	ssize_t n = pread(proc_status, text, sizeof(text) - 1, 0);

	if (n <= 0)
		return 0;
	text[n] = 0;
	for (char *line = text; line; line = strchr(line, '\n')) {
		line += *line == '\n';
		if (!strncmp(line, field, len) && line[len] == ':') {
			sscanf(line + len + 1, "%lu", &kib);
			break;
		}
	}
	return kib;
}

/* Guest pages the host actually backs (touched by the guest or the loader). */
static uint64_t guest_resident_kib(struct vm *vm)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t pages = (vm->ram_size + (uint64_t)page - 1) / (uint64_t)page;
	unsigned char vec[4096];
	uint64_t resident = 0;

	for (uint64_t off = 0; off < pages; off += sizeof(vec)) {
		uint64_t n =
			pages - off < sizeof(vec) ? pages - off : sizeof(vec);

		if (mincore(vm->ram + off * (uint64_t)page, n * (uint64_t)page,
			    vec) < 0)
			return 0;
		for (uint64_t i = 0; i < n; i++)
			resident += vec[i] & 1;
	}
	return resident * (uint64_t)page / 1024;
}

static void hist_json(FILE *f, const char *name, const struct histogram *h)
{
	fprintf(f,
		"\"%s\": {\"count\": %lu, \"p50\": %lu, \"p99\": %lu, \"max\": %lu}",
		name, h->count, hist_quantile(h, 0.50), hist_quantile(h, 0.99),
		h->max);
}

static const char *const exit_kind_names[VCPU_EXIT_KINDS] = {
	[VCPU_EXIT_HLT] = "hlt",
	[VCPU_EXIT_IO] = "io",
	[VCPU_EXIT_MMIO] = "mmio",
	[VCPU_EXIT_MSR] = "msr",
	[VCPU_EXIT_IRQ_WINDOW] = "irq_window",
	[VCPU_EXIT_KICK] = "kick",
	[VCPU_EXIT_OTHER] = "other",
};

static const char *const io_class_names[IO_CLASS_KINDS] = {
	[IO_CLASS_HYPERCALL] = "hypercall",
	[IO_CLASS_CONSOLE] = "console",
	[IO_CLASS_PLATFORM] = "platform",
	[IO_CLASS_UNCLAIMED] = "unclaimed",
};

static void counts_json(FILE *f, const char *name, const uint64_t *count,
			const char *const *names, unsigned n)
{
	fprintf(f, "\"%s\": {", name);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s\"%s\": %lu", i ? ", " : "", names[i], count[i]);
	fputs("}, ", f);
}

static void late_event_json(FILE *f, const struct late_event *e)
{
	fprintf(f,
		"{\"vector\": %u, \"expiry_ns\": %lu, \"late_ns\": %lu, "
		"\"cause\": \"%s\"",
		e->vector, e->expiry, e->late_ns,
		late_cause_names[e->main_cause]);
	for (unsigned c = 0; c < LATE_CAUSES; c++)
		fprintf(f, ", \"%s_ns\": %lu", late_cause_names[c], e->ns[c]);
	fputc('}', f);
}

/* Hard timers later than the threshold, and where their time went. */
static void lateness_json(FILE *f, const struct lateness *l)
{
	fprintf(f,
		"\"lateness\": {\"threshold_ns\": %lu, \"sched_sampled\": %s, "
		"\"events\": %lu, ",
		l->threshold_ns, l->sched_fd >= 0 ? "true" : "false",
		l->events);
	for (unsigned c = 0; c < LATE_CAUSES; c++)
		fprintf(f, "\"%s\": {\"events\": %lu, \"ns\": %lu}, ",
			late_cause_names[c], l->main_cause_events[c], l->ns[c]);
	fputs("\"worst\": [", f);
	for (unsigned i = 0; i < LATE_WORST && l->worst[i].late_ns; i++) {
		if (i)
			fputs(", ", f);
		late_event_json(f, &l->worst[i]);
	}
	fputs("]}", f);
}

/* Per wake path: the estimate now, what it cost (the waits) and how
 * often it fell short (late). */
static void advance_json(FILE *f, const struct vcpu *v)
{
	static const char *const paths[VCPU_WAKE_PATHS] = {
		[VCPU_WAKE_HALTED] = "halted",
		[VCPU_WAKE_RUNNING] = "running",
	};

	fprintf(f, "\"timer_advance\": {\"enabled\": %s",
		v->advance[0].enabled ? "true" : "false");
	for (unsigned p = 0; p < VCPU_WAKE_PATHS; p++) {
		const struct advance *a = &v->advance[p];

		fprintf(f,
			", \"%s\": {\"ns\": %lu, \"ran_ahead\": %lu, "
			"\"took_near\": %lu, \"near_over_budget\": %lu, "
			"\"waits\": %lu, \"wait_ns\": %lu, \"late\": %lu, "
			"\"late_ns\": %lu}",
			paths[p], a->ns, a->ran_ahead, a->took_near,
			a->near_over_budget, a->waits, a->wait_ns, a->late,
			a->late_ns);
	}
	fputs("}", f);
}

static void vcpu_json(FILE *f, const struct vm_cpu *cpu)
{
	const struct vcpu *v = &cpu->vcpu;
	const struct vcpu_stats *s = &v->stats;
	const struct pvclock_src *clock = &cpu->pv.clock;
	char rate[24] = "null";
	int64_t ppm;

	if (pvclock_rate_ppm(clock, &ppm))
		snprintf(rate, sizeof(rate), "%ld", (long)ppm);

	fprintf(f,
		"    {\"index\": %u, \"host_wakeups\": %lu, \"halts\": %lu, "
		"\"exits\": %lu, \"injections\": %lu, "
		"\"timers_fired_hard\": %lu, \"timers_fired_deferred\": %lu, "
		"\"apic_timer_fired\": %lu, \"apic_timer_deferred\": %lu, "
		"\"apic_timer_aligned\": %lu, \"apic_timer_rearmed\": %lu, "
		"\"apic_timer_rearmed_halted\": %lu, \"apic_pv_eois\": %lu, "
		"\"ticks_late\": %lu, \"ticks_late_delivered\": %lu, "
		"\"periods_floored\": %lu, "
		"\"kicks\": %lu, \"halt_polls\": %lu, \"halt_poll_ns\": %lu, "
		"\"halt_polls_given_way\": %lu, \"halt_polls_near\": %lu, "
		"\"kernel_voluntary_switches\": %lu, "
		"\"thread_cpu_ns\": %lu, "
		"\"pvclock_rate_ppm\": %s, \"pvclock_steps\": %lu, ",
		v->index, s->host_wakeups, s->halts, s->exits, s->injections,
		s->timers_fired_hard, s->timers_fired_deferred,
		v->apic.timer_fired, v->apic.timer_deferred,
		v->apic.timer_aligned, v->apic.timer_rearmed,
		v->apic.timer_rearmed_halted, v->apic.pv_eois, s->ticks_late,
		s->ticks_late_delivered, s->periods_floored, s->kicks_received,
		s->halt_polls, s->halt_poll_ns, s->halt_polls_given_way,
		s->halt_polls_near,
		s->kernel_voluntary_switches, s->thread_cpu_ns, rate,
		clock->steps);
	counts_json(f, "exits_by_reason", s->exits_by_kind, exit_kind_names,
		    VCPU_EXIT_KINDS);
	counts_json(f, "io_exits_by_device", cpu->io_exits, io_class_names,
		    IO_CLASS_KINDS);
	hist_json(f, "hard_lateness_ns", &s->hard_lateness_ns);
	fputs(", ", f);
	hist_json(f, "deferred_delay_ns", &s->deferred_delay_ns);
	fputs(", ", f);
	lateness_json(f, &s->late);
	fputs(", ", f);
	advance_json(f, v);
	fprintf(f, ", \"min_run_ns\": %lu}", v->min_run_ns);
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int stats_open(struct stats_out *s, const char *path)
{
	s->f = strcmp(path, "-") ? fopen(path, "we") : stdout;
	if (!s->f)
		return -errno;
	/*
	 * stdio sizes a stream's buffer at its first write, asking whether it
	 * is a terminal (TCGETS) when it is a character device (/dev/null, a
	 * tty): at the end of the run the seccomp filter would refuse that.
	 * The buffer is had now.
	 */
	if (setvbuf(s->f, NULL, _IOFBF, BUFSIZ))
		return -ENOMEM;
	s->proc_status = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	return 0;
}

int stats_write(struct vm *vm, struct stats_out *s, uint64_t process_start_ns)
{
	FILE *f = s->f;
	bool to_stdout = f == stdout;
	uint64_t rss = status_kib(s->proc_status, "VmRSS");
	uint64_t guest = guest_resident_kib(vm);
	uint64_t first = vm->console.first_byte_ns;
	struct ioapic_counts io;

	fputs("{\n  \"guest\": ", f);
	json_string(f, vm->cfg.guest_path);
	fprintf(f, ",\n  \"exit_status\": %d,\n  \"stop_reason\": ",
		vm->exit_status);
	json_string(f, vm->stop_reason);
	fprintf(f,
		",\n  \"timer_mode\": \"%s\",\n  \"missed_ticks\": \"%s\","
		"\n  \"slop_ns\": %lu,\n  \"mem_bytes\": %lu,\n  \"nr_vcpus\": %u,\n"
		"  \"tsc_stable\": %s,\n  \"tsc_held\": %s,\n"
		"  \"mem_merge\": %s,\n",
		vm->cfg.timer_mode == LULL_MODE_STRICT ? "strict" :
							 "deferrable",
		missed_names[vm->cfg.missed_ticks % 3], vm->cfg.slop_ns,
		vm->ram_size, vm->cfg.nr_vcpus,
		vm->nr_cpus_made && vm->cpus[0].pv.clock.tsc_stable ? "true" :
								      "false",
		vm->nr_cpus_made && vm->cpus[0].pv.clock.tsc_held ? "true" :
								    "false",
		vm->mem_merge ? "true" : "false");
	fputs("  ", f);
	kvm_host_json(f, &vm->kvm);
	fputs(",\n", f);
	fprintf(f,
		"  \"wall_ns\": %lu,\n  \"host_cpu_ns\": %lu,\n"
		"  \"main_thread_cpu_ns\": %lu,\n"
		"  \"first_byte_ns\": %lu,\n  \"rss_kib\": %lu,\n"
		"  \"guest_resident_kib\": %lu,\n  \"vmm_rss_kib\": %lu,\n",
		vm->end_ns - vm->start_ns,
		clock_ns(CLOCK_PROCESS_CPUTIME_ID),
		clock_ns(CLOCK_THREAD_CPUTIME_ID),
		first ? first - process_start_ns : 0, rss, guest,
		rss > guest ? rss - guest : 0);
	fprintf(f, "  \"console_bytes\": %lu,\n  \"console_dropped\": %lu,\n",
		vm->console.bytes, vm->console.dropped);
	fprintf(f, "  \"hypercalls\": %lu,\n  \"hypercall_errors\": {",
		(uint64_t)atomic_load(&vm->hc_calls));
	for (int k = 0; k < HC_ERR_KINDS; k++)
		fprintf(f, "%s\"%s\": %lu", k ? ", " : "", hc_error_names[k],
			(uint64_t)atomic_load(&vm->hc_errors[k]));
	fprintf(f,
		"},\n  \"unclaimed_io\": %lu,\n  \"unclaimed_mmio\": %lu,\n"
		"  \"unclaimed_msr\": %lu,\n  \"unsupported_ipis\": %lu,\n",
		(uint64_t)atomic_load(&vm->unclaimed.io),
		(uint64_t)atomic_load(&vm->unclaimed.mmio),
		(uint64_t)atomic_load(&vm->unclaimed.msr),
		(uint64_t)atomic_load(&vm->unclaimed.ipi));
	io = ioapic_counts(&vm->ioapic);
	fprintf(f,
		"  \"ioapic\": {\"delivered\": %lu, \"unsupported\": %lu, "
		"\"invalid\": %lu},\n",
		io.delivered, io.unsupported, io.invalid);
	fputs("  \"vcpus\": [\n", f);
	for (unsigned i = 0; i < vm->nr_cpus_made; i++) {
		vcpu_json(f, &vm->cpus[i]);
		fputs(i + 1 < vm->nr_cpus_made ? ",\n" : "\n", f);
	}
	fputs("  ]\n}\n", f);
	if (s->proc_status >= 0)
		close(s->proc_status);
	if (to_stdout)
		return fflush(f) ? -errno : 0;
	return fclose(f) ? -errno : 0;
}
