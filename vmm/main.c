// SPDX-License-Identifier: MIT
/* lull: the command line. Turns options into a vm_config and errors into
 * one sentence and an exit status (exit_status.h). */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/bzimage.h"
#include "platform.h"
#include "timers/clock.h"
#include "vmm/builder.h"
#include "vmm/sandbox.h"
#include "vmm/stats.h"
#include "vmm/vm.h"

/* LULL_VERSION comes from meson.build's project version. */
#define STRINGIFY(x) #x
#define TO_STRING(x) STRINGIFY(x)

static const char usage_text[] =
	"usage: lull run [options] KERNEL\n"
	"       lull info\n"
	"       lull --help | --version\n"
	"\n"
	"Boots KERNEL under KVM: a PVH ELF (lull's guests, a Linux vmlinux), a\n"
	"multiboot v1 kernel (kvm-unit-tests' x86 images) or a Linux bzImage\n"
	"(/boot/vmlinuz-*), told apart by their contents. lull's exit status\n"
	"is the value the guest writes to the debug-exit port 0xf4 (v & 0xff), or 0\n"
	"when it powers off through ACPI (S5).\n"
	"\n"
	"lull info prints which KVM serves /dev/kvm (kvm_intel, kvm_amd, kvm_pvm\n"
	"or other), whether it is hardware virtualization, and the KVM features\n"
	"lull uses (status 69 where /dev/kvm cannot be opened).\n"
	"\n"
	"options for run:\n"
	"  -c, --vcpus N              vCPUs (default 1; at most 256 and what KVM allows)\n"
	"  -m, --mem SIZE             guest RAM, with K/M/G suffix (default 16M for a\n"
	"                             PVH ELF or a multiboot kernel, 256M for a bzImage)\n"
	"      --cmdline STRING       the guest's command line (default: empty for a PVH\n"
	"                             ELF, \"" BZ_DEFAULT_CMDLINE
	"\" for a bzImage);\n"
	"                             a multiboot kernel's is \"KERNEL STRING\", its path\n"
	"                             first, as GRUB and QEMU write it\n"
	"      --initrd FILE          an initrd (initramfs) for the kernel: a bzImage's\n"
	"                             ramdisk, a PVH or multiboot kernel's first module\n"
	"      --timer-mode MODE      deferrable (default): deferrable guest timers never\n"
	"                             wake the host while their vCPU is halted;\n"
	"                             strict: every timer is hard, the classic baseline\n"
	"      --missed-ticks POLICY  late periodic ticks: one (default: collapse into\n"
	"                             one), all (deliver each), none (drop them)\n"
	"      --slop NS              timer coalescing window in ns (default " TO_STRING(
		LULL_DEFAULT_SLOP_NS) "); not\n"
				      "                             for the APIC timer, which is the guest's own deadline\n"
				      "      --apic-max-defer NS    deferrable mode, for guests that cannot mark their\n"
				      "                             timers: while a vCPU is halted its APIC timer (any\n"
				      "                             mode) may fire up to NS ns late: at the first\n"
				      "                             multiple of NS - NS/16 on the host's clock, which\n"
				      "                             every VM shares (the last sixteenth is the host's\n"
				      "                             wake latency); never early, never late on a running\n"
				      "                             vCPU (late ticks per --missed-ticks); default 0:\n"
				      "                             the APIC timer is hard, on time\n"
				      "      --timer-slots N        timer slots per vCPU, 2..128 (default 64)\n"
				      "      --late-threshold NS    a hard timer delivered more than NS late has\n"
				      "                             its lateness charged to causes in --stats\n"
				      "                             (wake, kick, masked, vmm...; default " TO_STRING(
					      VCPU_LATE_THRESHOLD_NS) ")\n"
								      "      --trace-late           print each such timer on stderr as it is\n"
								      "                             delivered, and tell the time the host kept\n"
								      "                             the vCPU thread waiting for a CPU (preempted)\n"
								      "                             and the time it slept in lull's work (blocked),\n"
								      "                             at a system call per vCPU exit\n"
								      "      --no-timer-advance     wake for a hard timer at its expiry, not ahead of\n"
								      "                             it: by default lull wakes a vCPU early by what its\n"
								      "                             way back to the guest costs (learned per vCPU, at\n"
								      "                             most " TO_STRING(ADVANCE_MAX_US) " us) and holds the vector until the expiry;\n"
								      "                             a halt nearer its hard timer than that spins\n"
								      "                             for it as --halt-poll does, and an exit waits\n"
								      "                             for it before the entry rather than be kicked\n"
								      "      --halt-poll NS         a halted vCPU whose next hard timer is due within\n"
								      "                             NS ns spins for it, sparing it the host's wake\n"
								      "                             latency, and sleeps once another thread wants the\n"
								      "                             CPU; as KVM's halt polling (which polls 200 us);\n"
								      "                             up to 1 ms; default 0: sleep but where the timer\n"
								      "                             advance cannot wake it in time; deferrable timers\n"
								      "                             never make it spin\n"
								      "      --timeout SECONDS      stop the guest after SECONDS; exit status 124\n"
								      "      --console FILE         guest console (COM1, port 0xe9) to FILE, not stdout\n"
								      "      --console-limit SIZE   write at most SIZE bytes of console output (K/M/G);\n"
								      "                             the rest is dropped and counted (default: no limit)\n"
								      "      --stats FILE           write run statistics as JSON to FILE ('-': stdout)\n"
								      "      --no-mem-merge         keep guest RAM from the host's KSM and let the host\n"
								      "                             back it with huge pages (by default lull offers it\n"
								      "                             to KSM, where VMs share their identical pages,\n"
								      "                             and keeps it in small pages)\n"
								      "      --no-x2apic            the local APIC is an xAPIC only: CPUID hides x2APIC\n"
								      "                             and IA32_APIC_BASE refuses to enter it\n"
								      "      --no-pv-eoi            CPUID offers no PV EOI (as QEMU's kvm-pv-eoi=off):\n"
								      "                             every EOI is a register write and an exit\n"
								      "      --test-device          QEMU pc-testdev's I/O APIC lines at ports\n"
								      "                             0x2000-0x2017, for kvm-unit-tests' ioapic test\n"
								      "      --no-seccomp           no system-call filter (to debug a status-159 stop);\n"
								      "                             lull still drops its capabilities\n"
								      "  -h, --help                 this text\n"
								      "  -V, --version              lull's version\n"
								      "\n"
								      "exit status: the guest's debug-exit value; 0 the guest powered off (ACPI S5);\n"
								      "32 the guest asked for a reset (ACPI reset register, 0xfe to port 0x64);\n"
								      "64 bad usage; 65 bad guest image;\n"
								      "69 /dev/kvm missing or not permitted; 71 host refused a resource; 74 the\n"
								      "--stats write failed (when the guest's status was 0); 124 timeout;\n"
								      "125 guest crashed (triple fault, KVM internal error, failed entry);\n"
								      "129/130/143 stopped by SIGHUP/SIGINT/SIGTERM; 159 lull made a system call\n"
								      "its seccomp filter forbids (a lull bug, named on stderr).\n";

enum {
	OPT_CMDLINE = 256,
	OPT_INITRD,
	OPT_TIMER_MODE,
	OPT_MISSED,
	OPT_SLOP,
	OPT_APIC_MAX_DEFER,
	OPT_SLOTS,
	OPT_LATE_THRESHOLD,
	OPT_TRACE_LATE,
	OPT_NO_TIMER_ADVANCE,
	OPT_HALT_POLL,
	OPT_TIMEOUT,
	OPT_CONSOLE,
	OPT_CONSOLE_LIMIT,
	OPT_STATS,
	OPT_NO_MEM_MERGE,
	OPT_NO_X2APIC,
	OPT_NO_PV_EOI,
	OPT_TEST_DEVICE,
	OPT_NO_SECCOMP,
};

static const struct option long_options[] = {
	{ "vcpus", required_argument, NULL, 'c' },
	{ "mem", required_argument, NULL, 'm' },
	{ "cmdline", required_argument, NULL, OPT_CMDLINE },
	{ "initrd", required_argument, NULL, OPT_INITRD },
	{ "timer-mode", required_argument, NULL, OPT_TIMER_MODE },
	{ "missed-ticks", required_argument, NULL, OPT_MISSED },
	{ "slop", required_argument, NULL, OPT_SLOP },
	{ "apic-max-defer", required_argument, NULL, OPT_APIC_MAX_DEFER },
	{ "timer-slots", required_argument, NULL, OPT_SLOTS },
	{ "late-threshold", required_argument, NULL, OPT_LATE_THRESHOLD },
	{ "trace-late", no_argument, NULL, OPT_TRACE_LATE },
	{ "no-timer-advance", no_argument, NULL, OPT_NO_TIMER_ADVANCE },
	{ "halt-poll", required_argument, NULL, OPT_HALT_POLL },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "console", required_argument, NULL, OPT_CONSOLE },
	{ "console-limit", required_argument, NULL, OPT_CONSOLE_LIMIT },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "no-mem-merge", no_argument, NULL, OPT_NO_MEM_MERGE },
	{ "no-x2apic", no_argument, NULL, OPT_NO_X2APIC },
	{ "no-pv-eoi", no_argument, NULL, OPT_NO_PV_EOI },
	{ "test-device", no_argument, NULL, OPT_TEST_DEVICE },
	{ "no-seccomp", no_argument, NULL, OPT_NO_SECCOMP },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("lull: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(see 'lull --help')\n", stderr);
	return LULL_EXIT_USAGE;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	/* strtoull would skip blanks and take a sign: " -1" must not wrap */
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* "16M", "16MiB", "16MB", "512K", "1G", "4096": binary units. */
static bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	/* strtoull would skip blanks and take a sign: " -1" must not wrap */
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	/* K, M, G, T: binary units, as the help says; then "iB" or "B" */
	if (*end && strchr("kKmMgGtT", *end)) {
		shift = 10 *
			(unsigned)(strchr("KMGT", toupper(*end)) - "KMGT" + 1);
		end++;
		if (end[0] == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

/* An option in nanoseconds, 0..max: 0 and *out set, or the usage error. */
static int ns_option(const char *name, const char *arg, uint64_t max,
		     uint64_t *out)
{
	uint64_t n;

	if (!parse_u64(arg, &n) || n > max)
		return usage_error("--%s '%s': give nanoseconds from 0 to %llu",
				   name, arg, (unsigned long long)max);
	*out = n;
	return 0;
}

static int parse_run(int argc, char **argv, struct vm_config *cfg)
{
	uint64_t n;
	int opt, r;

	*cfg = (struct vm_config){
		.mem_size = 0, /* by the kernel's format: vm.h */
		.nr_vcpus = 1,
		.timer_mode = LULL_MODE_DEFERRABLE,
		.missed_ticks = LULL_MISSED_ONE,
		.slop_ns = LULL_DEFAULT_SLOP_NS,
		.nr_slots = LULL_DEFAULT_SLOTS,
		.late_threshold_ns = VCPU_LATE_THRESHOLD_NS,
	};
	optind = 1;
	opterr = 0; /* we say it ourselves, in one sentence */
	while ((opt = getopt_long(argc, argv, ":c:m:hV", long_options, NULL)) !=
	       -1) {
		switch (opt) {
		case 'c':
			/* The upper bound is KVM's, checked once /dev/kvm is open. */
			if (!parse_u64(optarg, &n) || n < 1 || n > UINT32_MAX)
				return usage_error(
					"--vcpus '%s': give a whole number from 1 up",
					optarg);
			cfg->nr_vcpus = (unsigned)n;
			break;
		case 'm':
			if (!parse_size(optarg, &n))
				return usage_error(
					"--mem '%s' is not a size (use e.g. 16M, 512K, 1G)",
					optarg);
			if (n < (1ull << 20) || n % 4096)
				return usage_error(
					"--mem %s: guest RAM must be at least 1M and a multiple of 4K",
					optarg);
			/* RAM is one flat mapping from 0; the I/O APIC and
			 * the local APIC page are above it */
			if (n > PLATFORM_IOAPIC_GPA)
				return usage_error(
					"--mem %s: guest RAM ends below the I/O APIC at 0x%x, so at most %uM",
					optarg, PLATFORM_IOAPIC_GPA,
					PLATFORM_IOAPIC_GPA >> 20);
			cfg->mem_size = n;
			break;
		case OPT_CMDLINE:
			if (strlen(optarg) >= LULL_CMDLINE_MAX)
				return usage_error(
					"--cmdline is %zu bytes; the limit is %d",
					strlen(optarg), LULL_CMDLINE_MAX - 1);
			cfg->cmdline = optarg;
			break;
		case OPT_INITRD:
			cfg->initrd_path = optarg;
			break;
		case OPT_TIMER_MODE:
			if (!strcmp(optarg, "deferrable"))
				cfg->timer_mode = LULL_MODE_DEFERRABLE;
			else if (!strcmp(optarg, "strict"))
				cfg->timer_mode = LULL_MODE_STRICT;
			else
				return usage_error(
					"--timer-mode '%s': choose deferrable or strict",
					optarg);
			break;
		case OPT_MISSED:
			if (!strcmp(optarg, "one"))
				cfg->missed_ticks = LULL_MISSED_ONE;
			else if (!strcmp(optarg, "all"))
				cfg->missed_ticks = LULL_MISSED_ALL;
			else if (!strcmp(optarg, "none"))
				cfg->missed_ticks = LULL_MISSED_NONE;
			else
				return usage_error(
					"--missed-ticks '%s': choose one, all or none",
					optarg);
			break;
		case OPT_SLOP:
			r = ns_option("slop", optarg, 1000000000ull,
				      &cfg->slop_ns);
			if (r)
				return r;
			break;
		case OPT_APIC_MAX_DEFER:
			r = ns_option("apic-max-defer", optarg, LULL_HORIZON_NS,
				      &cfg->apic_max_defer_ns);
			if (r)
				return r;
			break;
		case OPT_SLOTS:
			if (!parse_u64(optarg, &n) || n < 2 ||
			    n > LULL_MAX_SLOTS)
				return usage_error(
					"--timer-slots '%s': give a number from 2 to %d",
					optarg, LULL_MAX_SLOTS);
			cfg->nr_slots = (unsigned)n;
			break;
		case OPT_LATE_THRESHOLD:
			r = ns_option("late-threshold", optarg, LULL_HORIZON_NS,
				      &cfg->late_threshold_ns);
			if (r)
				return r;
			break;
		case OPT_TRACE_LATE:
			cfg->trace_late = true;
			break;
		case OPT_NO_TIMER_ADVANCE:
			cfg->no_timer_advance = true;
			break;
		case OPT_HALT_POLL:
			r = ns_option("halt-poll", optarg, VCPU_MAX_HALT_POLL_NS,
				      &cfg->halt_poll_ns);
			if (r)
				return r;
			break;
		case OPT_TIMEOUT: {
			char *end;
			double s;

			errno = 0;
			s = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(s > 0) ||
			    s > 1e9)
				return usage_error(
					"--timeout '%s': give a positive number of seconds",
					optarg);
			cfg->timeout_s = s;
			break;
		}
		case OPT_CONSOLE:
			cfg->console_path = optarg;
			break;
		case OPT_CONSOLE_LIMIT:
			if (!parse_size(optarg, &n) || !n)
				return usage_error(
					"--console-limit '%s' is not a size above 0 (use e.g. 64K, 10M)",
					optarg);
			cfg->console_limit = n;
			break;
		case OPT_STATS:
			cfg->stats_path = optarg;
			break;
		case OPT_NO_MEM_MERGE:
			cfg->no_mem_merge = true;
			break;
		case OPT_NO_X2APIC:
			cfg->no_x2apic = true;
			break;
		case OPT_NO_PV_EOI:
			cfg->no_pv_eoi = true;
			break;
		case OPT_TEST_DEVICE:
			cfg->test_device = true;
			break;
		case OPT_NO_SECCOMP:
			cfg->no_seccomp = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			puts("lull " LULL_VERSION);
			exit(0);
		case ':':
		case '?': {
			/* getopt sets optopt for long options too: go by argv */
			const char *arg = argv[optind - 1];
			char shortopt[3] = { '-', (char)optopt, 0 };
			const char *name =
				!strncmp(arg, "--", 2) ? arg : shortopt;

			if (opt == ':')
				return usage_error("option %s needs a value",
						   name);
			return usage_error("unknown option '%s'", name);
		}
		}
	}
	if (cfg->apic_max_defer_ns && cfg->timer_mode == LULL_MODE_STRICT)
		return usage_error(
			"--apic-max-defer defers APIC ticks, which --timer-mode strict never does: use one or the other");
	if (optind >= argc)
		return usage_error(
			"run: no kernel (guest ELF or bzImage) given");
	if (optind + 1 < argc)
		return usage_error("run: one kernel only ('%s' is extra)",
				   argv[optind + 1]);
	cfg->guest_path = argv[optind];
	return 0;
}

/* Whether a and b name one file: writing a would then destroy b. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* `lull info`: the facts --stats gives under "kvm", for a person. */
static int info(void)
{
	struct kvm_host h = { 0 };
	char err[200];
	int fd = kvm_host_open(err, sizeof(err));
	const char *warning;

	if (fd < 0) {
		fprintf(stderr, "lull: %s\n", err);
		return LULL_EXIT_NO_KVM;
	}
	kvm_host_probe(&h, fd);
	close(fd);
	printf("kvm: %s\nhardware virtualization: %s\nmax vcpus: %d\n",
	       kvm_module_name(h.module), h.hardware ? "yes" : "no",
	       h.max_vcpus);
	for (int f = 0; f < KVM_FEATURES; f++)
		printf("feature %s: %s\n", kvm_feature_name(f),
		       h.features[f] > 0 ? "yes" : "no");
	warning = kvm_host_warning(&h);
	if (warning)
		printf("note: %s\n", warning);
	return 0;
}

/* One line on stderr, unless the guest wrote its status to debug-exit. */
static void report_stop(const struct vm *vm)
{
	if (vm->stop_cause == VM_STOP_CRASH)
		fprintf(stderr, "lull: guest crashed: %s\n", vm->stop_reason);
	else if (vm->stop_cause != VM_STOP_GUEST_EXIT)
		fprintf(stderr, "lull: %s\n", vm->stop_reason);
}

int main(int argc, char **argv)
{
	uint64_t process_start = clock_now_ns();
	struct vm_config cfg;
	struct stats_out stats = { NULL, -1 };
	const char *warning;
	static struct vm vm; /* zeroed, and untouched where unused */
	int r, status;

	if (argc < 2)
		return usage_error("no command given");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		puts("lull " LULL_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "info")) {
		if (argc > 2)
			return usage_error("info takes no arguments ('%s')",
					   argv[2]);
		return info();
	}
	if (strcmp(argv[1], "run"))
		return usage_error(
			"unknown command '%s' (the commands are 'run' and 'info')",
			argv[1]);
	r = parse_run(argc - 1, argv + 1, &cfg);
	if (r)
		return r;
	if (cfg.console_path && same_file(cfg.console_path, cfg.guest_path))
		return usage_error("--console %s is the guest image",
				   cfg.console_path);
	if (cfg.stats_path && same_file(cfg.stats_path, cfg.guest_path))
		return usage_error("--stats %s is the guest image",
				   cfg.stats_path);
	if (cfg.initrd_path && cfg.console_path &&
	    same_file(cfg.console_path, cfg.initrd_path))
		return usage_error("--console %s is the initrd",
				   cfg.console_path);
	if (cfg.initrd_path && cfg.stats_path &&
	    same_file(cfg.stats_path, cfg.initrd_path))
		return usage_error("--stats %s is the initrd", cfg.stats_path);
	if (cfg.stats_path && (r = stats_open(&stats, cfg.stats_path)) < 0)
		return usage_error("cannot write --stats to %s: %s",
				   cfg.stats_path, strerror(-r));
	/* A reader that went away is the console's to note, not fatal. */
	signal(SIGPIPE, SIG_IGN);
	r = vcpu_signals_init();
	if (r < 0) {
		fprintf(stderr,
			"lull: cannot set up the vCPU kick signal: %s\n",
			strerror(-r));
		return LULL_EXIT_HOST;
	}
	r = sandbox_init(!cfg.no_seccomp);
	if (r < 0) {
		fprintf(stderr, "lull: cannot set up the seccomp report: %s\n",
			strerror(-r));
		return LULL_EXIT_HOST;
	}
	r = vm_create(&vm, &cfg);
	if (r < 0) {
		fprintf(stderr, "lull: %s\n", vm.error);
		vm_destroy(&vm);
		return -r;
	}
	warning = kvm_host_warning(&vm.kvm);
	if (warning)
		fprintf(stderr, "lull: note: %s\n", warning);
	status = vm_run(&vm);
	report_stop(&vm);
	if (stats.f) {
		r = stats_write(&vm, &stats, process_start);
		if (r < 0) {
			fprintf(stderr,
				"lull: cannot write --stats to %s: %s\n",
				cfg.stats_path, strerror(-r));
			/* the guest's own failure, if any, says more */
			if (!status)
				status = LULL_EXIT_IO;
		}
	}
	vm_destroy(&vm);
	return status;
}
