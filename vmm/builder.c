// SPDX-License-Identifier: MIT
/*
 * Building a VM (vm_create): guest RAM, the guest image loaded into it,
 * the devices wired to each other and to the vCPUs, /dev/kvm, the vCPUs in
 * their entry state. Everything that can fail before the guest runs fails
 * here, with one sentence in vm->error; running it is vm.c's.
 */
#include <asm/kvm_para.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loader/acpi.h"
#include "loader/boot.h"
#include "loader/bzimage.h"
#include "loader/guest_file.h"
#include "loader/initrd.h"
#include "loader/multiboot.h"
#include "loader/pvh.h"
#include "timers/clock.h"
#include "vmm/builder.h"
#include "vmm/exits.h"
#include "vmm/sandbox.h"
#include "vmm/vm.h"

#define vm_err(vm, ...) snprintf((vm)->error, sizeof((vm)->error), __VA_ARGS__)

static int open_kvm(struct vm *vm)
{
	vm->kvm_fd = kvm_host_open(vm->error, sizeof(vm->error));
	if (vm->kvm_fd < 0)
		return vm->kvm_fd;
	kvm_host_probe(&vm->kvm, vm->kvm_fd);
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		int e = errno;

		vm_err(vm, "KVM refused to create a VM: %s", strerror(e));
		return -e;
	}
	return 0;
}

/* NORESERVE: untouched guest pages cost the host nothing. */
static int map_ram(struct vm *vm, uint64_t size)
{
	vm->ram = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (vm->ram == MAP_FAILED) {
		int e = errno;

		vm->ram = NULL;
		vm_err(vm,
		       "the host refused %" PRIu64 " MiB of guest memory: %s",
		       size >> 20, strerror(e));
		return -e;
	}
	vm->ram_size = size;
	/*
	 * Idle guests of one kernel hold many identical pages (zeroed RAM,
	 * kernel text): offered to KSM, which runs only where the host turns
	 * it on, they are shared. A kernel without KSM refuses: no merging.
	 * The same policy keeps guest RAM in small pages: KSM merges only
	 * those, and where the host's transparent huge pages are "always",
	 * a guest's first touch of each 2 MiB would take a whole huge page
	 * (an idle VM: 3.1 MiB of RSS instead of 1.35). A kernel without THP
	 * refuses: nothing to keep.
	 */
	if (!vm->cfg.no_mem_merge) {
		vm->mem_merge = madvise(vm->ram, size, MADV_MERGEABLE) == 0;
		madvise(vm->ram, size, MADV_NOHUGEPAGE);
	}
	return 0;
}

static int register_ram(struct vm *vm)
{
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = vm->ram_size,
		.userspace_addr = (uint64_t)(uintptr_t)vm->ram,
	};

	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		int e = errno;

		vm_err(vm, "KVM refused %" PRIu64 " MiB of guest memory: %s",
		       vm->ram_size >> 20, strerror(e));
		return -e;
	}
	return 0;
}

/* What the load step found, for the boot information and the vCPUs. */
struct loaded_guest {
	enum boot_protocol protocol;
	uint64_t entry;
	bool all_vcpus_enter;
	/* the range the kernel occupies while it boots: the initrd keeps off */
	uint64_t kernel_start, kernel_end;
	struct bzimage_kernel bz; /* BOOT_LINUX_64 */
	/* --cmdline, or a bzImage's default; multiboot: the kernel's path
	 * first, then --cmdline (multiboot_cmdline) */
	const char *cmdline;
	char *cmdline_buf; /* what cmdline points to where lull built it */
	uint64_t initrd_addr, initrd_size; /* size 0: no --initrd */
};

static bool is_elf(const void *file, size_t size)
{
	return size >= SELFMAG && memcmp(file, ELFMAG, SELFMAG) == 0;
}

/*
 * A multiboot kernel's command line starts with the kernel's own path, as
 * GRUB and QEMU write it (kvm-unit-tests takes its arguments from the
 * second word on): "KERNEL", or "KERNEL --cmdline".
 */
static int multiboot_cmdline(struct vm *vm, struct loaded_guest *g)
{
	const char *path = vm->cfg.guest_path;
	const char *args = vm->cfg.cmdline;
	size_t len = strlen(path) + (args ? 1 + strlen(args) : 0) + 1;

	g->cmdline_buf = malloc(len);
	if (!g->cmdline_buf) {
		vm_err(vm, "out of memory for the multiboot command line");
		return -LULL_EXIT_HOST;
	}
	snprintf(g->cmdline_buf, len, "%s%s%s", path, args ? " " : "",
		 args ? args : "");
	g->cmdline = g->cmdline_buf;
	return 0;
}

static int load_multiboot(const void *file, size_t size, void *ram,
			  uint64_t ram_size, struct loaded_guest *g, char *err,
			  size_t err_len)
{
	struct multiboot_image img;

	if (multiboot_load(file, size, ram, ram_size, &img, err, err_len) < 0)
		return -LULL_EXIT_BAD_GUEST;
	g->protocol = BOOT_MULTIBOOT;
	g->entry = img.entry;
	g->kernel_start = img.load_start;
	g->kernel_end = img.load_end;
	return 0;
}

/*
 * The image's format comes from its first bytes: an ELF with a PVH note
 * is a PVH guest, a kernel with a multiboot header (ELF or not) a
 * multiboot one, a bzImage boots by Linux's 64-bit protocol. PVH goes
 * first, as in QEMU, for an ELF that offers both. A bzImage with no
 * --cmdline gets BZ_DEFAULT_CMDLINE. Returns 0 or a negative exit status.
 */
static int load_kernel(struct vm *vm, const void *file, size_t size,
		       struct loaded_guest *g, char *err, size_t err_len)
{
	bool multiboot = multiboot_detect(file, size, NULL);
	struct pvh_image img;
	int r;

	g->cmdline = vm->cfg.cmdline;
	if (is_elf(file, size)) {
		r = pvh_load_elf(file, size, vm->ram, vm->ram_size, &img, err,
				 err_len);
		if (r < 0 && multiboot)
			r = load_multiboot(file, size, vm->ram, vm->ram_size, g,
					   err, err_len);
		else if (r == 0) {
			g->protocol = BOOT_PVH;
			g->entry = img.entry;
			g->all_vcpus_enter = img.all_vcpus_enter;
			g->kernel_start = img.load_start;
			g->kernel_end = img.load_end;
		}
		if (r < 0)
			return -LULL_EXIT_BAD_GUEST;
		return g->protocol == BOOT_MULTIBOOT ?
			       multiboot_cmdline(vm, g) :
			       0;
	}
	if (!bzimage_detect(file, size)) {
		if (multiboot) {
			r = load_multiboot(file, size, vm->ram, vm->ram_size, g,
					   err, err_len);
			return r < 0 ? r : multiboot_cmdline(vm, g);
		}
		snprintf(
			err, err_len,
			"not a PVH ELF, a multiboot kernel or a bzImage: no ELF magic, no multiboot header in the first %u bytes, and no boot flag 0xAA55 with \"HdrS\" at 0x1fe",
			MULTIBOOT_SEARCH_END);
		return -LULL_EXIT_BAD_GUEST;
	}
	r = bzimage_load(file, size, vm->ram, vm->ram_size, &g->bz, err,
			 err_len);
	if (r < 0)
		return -LULL_EXIT_BAD_GUEST;
	g->protocol = BOOT_LINUX_64;
	g->entry = g->bz.entry;
	g->kernel_start = g->bz.load_addr;
	g->kernel_end = g->bz.load_addr + g->bz.init_size;
	if (!g->cmdline)
		g->cmdline = BZ_DEFAULT_CMDLINE;
	if (bzimage_check_cmdline(&g->bz, g->cmdline, err, err_len) < 0)
		return -LULL_EXIT_USAGE;
	return 0;
}

/* --initrd: read like the kernel, put as high as the kernel allows. */
static int load_initrd(struct vm *vm, struct loaded_guest *g)
{
	const char *path = vm->cfg.initrd_path;
	/* multiboot: a module's end, one past its last byte, is 32 bits */
	uint64_t limit = g->protocol == BOOT_LINUX_64  ? g->bz.initrd_limit :
			 g->protocol == BOOT_MULTIBOOT ? UINT32_MAX :
							 UINT64_MAX;
	char err[200] = "";
	void *file;
	size_t size;
	int r;

	r = guest_file_read(path, &file, &size, err, sizeof(err));
	if (r < 0)
		goto fail;
	r = initrd_place(vm->ram_size, size, limit, g->kernel_start,
			 g->kernel_end, &g->initrd_addr, err, sizeof(err));
	if (r == 0) {
		memcpy(vm->ram + g->initrd_addr, file, size);
		g->initrd_size = size;
	}
	free(file);
	if (r == 0)
		return 0;
fail:
	vm_err(vm, "--initrd %s: %s", path, err);
	return -LULL_EXIT_BAD_GUEST;
}

/* Reads the kernel, maps RAM (its size may depend on the format), loads. */
static int load_guest(struct vm *vm, struct loaded_guest *g)
{
	char err[200] = "";
	uint64_t mem;
	void *file;
	size_t size;
	int r;

	r = guest_file_read(vm->cfg.guest_path, &file, &size, err, sizeof(err));
	if (r < 0) {
		vm_err(vm, "%s: %s", vm->cfg.guest_path, err);
		return -LULL_EXIT_BAD_GUEST;
	}
	mem = vm->cfg.mem_size;
	if (!mem)
		mem = bzimage_detect(file, size) ? VM_DEFAULT_MEM_BZIMAGE :
						   VM_DEFAULT_MEM_PVH;
	if (map_ram(vm, mem) < 0) {
		free(file);
		return -LULL_EXIT_HOST;
	}
	r = load_kernel(vm, file, size, g, err, sizeof(err));
	free(file);
	if (r < 0) {
		vm_err(vm, "%s: %s", vm->cfg.guest_path, err);
		return r;
	}
	return vm->cfg.initrd_path ? load_initrd(vm, g) : 0;
}

/*
 * What the guest reads at its entry: hvm_start_info (PVH) or boot_params
 * (bzImage) and, where the VM has lull's local APIC, the ACPI tables that
 * tell an unmodified OS about it (Linux finds its CPUs and their APICs
 * only in a MADT). Written once KVM has said whether there is an APIC
 * (route_msrs). The CLI and the load step have already refused what could
 * fail here (a command line too long, RAM below 1 MiB).
 */
static int write_boot_info(struct vm *vm, const struct loaded_guest *g,
			   struct boot_entry *entry)
{
	char err[200] = "";
	int64_t rsdp = 0, info;

	if (vm->has_apic) {
		rsdp = acpi_write_tables(vm->ram, vm->ram_size,
					 vm->cfg.nr_vcpus, err, sizeof(err));
		if (rsdp < 0) {
			vm_err(vm, "%s", err);
			return (int)rsdp;
		}
	}
	if (power_write_reset_vector(vm->ram, vm->ram_size) < 0) {
		vm_err(vm, "guest RAM ends before the reset vector at 0x%x",
		       LULL_RESET_VECTOR_GPA);
		return -ERANGE;
	}
	if (g->protocol == BOOT_LINUX_64) {
		info = bzimage_write_boot_params(vm->ram, vm->ram_size, &g->bz,
						 g->cmdline, g->initrd_addr,
						 g->initrd_size, (uint64_t)rsdp,
						 err, sizeof(err));
	} else if (g->protocol == BOOT_MULTIBOOT) {
		info = multiboot_write_info(
			vm->ram, vm->ram_size, g->cmdline, g->initrd_addr,
			g->initrd_size, vm->cfg.initrd_path, err, sizeof(err));
	} else {
		info = pvh_write_start_info(vm->ram, vm->ram_size, g->cmdline,
					    (uint64_t)rsdp, err, sizeof(err));
		if (info >= 0 && g->initrd_size) {
			int r = pvh_add_initrd(vm->ram, vm->ram_size,
					       g->initrd_addr, g->initrd_size,
					       err, sizeof(err));

			if (r < 0)
				info = r;
		}
	}
	if (info < 0) {
		vm_err(vm, "%s", err);
		return (int)info;
	}
	*entry = (struct boot_entry){ .protocol = g->protocol,
				      .rip = g->entry,
				      .info = (uint64_t)info };
	return 0;
}

/*
 * The local APIC's MSRs come to lull (vcpu/apic.h): IA32_APIC_BASE,
 * IA32_TSC_DEADLINE, the x2APIC range and PV EOI's through a filter (KVM
 * without an APIC of its own would otherwise take them: it quietly drops
 * TSC-deadline writes, and keeps a PV EOI address it never reads), and every access KVM would fault as an exit too,
 * since some KVMs never filter the x2APIC range and fault it instead.
 * A KVM without user-space MSR exits leaves the VM without an APIC.
 */
static int route_msrs(struct vm *vm)
{
	static uint8_t deny[256 / 8]; /* a clear bit sends the MSR to us */
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_X86_USER_SPACE_MSR,
		.args[0] = KVM_MSR_EXIT_REASON_FILTER |
			   KVM_MSR_EXIT_REASON_INVAL |
			   KVM_MSR_EXIT_REASON_UNKNOWN,
	};
	struct kvm_msr_filter filter = {
		.flags = KVM_MSR_FILTER_DEFAULT_ALLOW,
		.ranges = {
			{ KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, 1,
			  MSR_IA32_APIC_BASE, deny },
			{ KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, 1,
			  MSR_IA32_TSC_DEADLINE, deny },
			{ KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE,
			  MSR_X2APIC_LAST - MSR_X2APIC_FIRST + 1,
			  MSR_X2APIC_FIRST, deny },
			{ KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE, 1,
			  MSR_KVM_PV_EOI_EN, deny },
		},
	};
	int r = ioctl(vm->vm_fd, KVM_CHECK_EXTENSION,
		      KVM_CAP_X86_USER_SPACE_MSR);

	if (r <= 0) {
		fprintf(stderr,
			"lull: KVM on this host has no user-space MSR exits (KVM_CAP_X86_USER_SPACE_MSR, Linux 5.10): the guest gets no local APIC\n");
		return 0;
	}
	if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0 ||
	    ioctl(vm->vm_fd, KVM_X86_SET_MSR_FILTER, &filter) < 0) {
		int e = errno;

		vm_err(vm, "KVM refused to route the APIC's MSRs to lull: %s",
		       strerror(e));
		return -e;
	}
	vm->has_apic = true;
	return 0;
}

/*
 * KVM's own verdict on the host TSC, once every vCPU exists (its master
 * clock needs them all in step). KVM decides on its master clock when the
 * VM is made, with no vCPU in step yet, and again only when a vCPU enters
 * or the VM's clock is set; setting the clock to what it reads (before
 * any vCPU ran, nothing sees the microseconds between) has it decide now,
 * so the answer can shape the vCPUs' CPUID. Without it, guest clocks are
 * re-measured at each anchor (pvclock.h).
 */
static bool kvm_tsc_stable(int vm_fd)
{
	struct kvm_clock_data d = { 0 };

	if (ioctl(vm_fd, KVM_GET_CLOCK, &d) < 0)
		return false;
	d = (struct kvm_clock_data){ .clock = d.clock };
	if (ioctl(vm_fd, KVM_SET_CLOCK, &d) < 0)
		return false;
	d = (struct kvm_clock_data){ 0 };
	return ioctl(vm_fd, KVM_GET_CLOCK, &d) == 0 &&
	       (d.flags & KVM_CLOCK_TSC_STABLE);
}

static int create_vcpus(struct vm *vm, const struct boot_entry *entry,
			bool all_vcpus_enter)
{
	struct boot_leaves leaves = {
		.nr_vcpus = vm->cfg.nr_vcpus,
		.nr_slots = vm->cfg.nr_slots,
		.missed_ticks = vm->cfg.missed_ticks,
		.timer_mode = vm->cfg.timer_mode,
		.no_x2apic = vm->cfg.no_x2apic,
		.no_pv_eoi = vm->cfg.no_pv_eoi,
	};
	struct kvm_cpuid2 *cpuid;
	uint64_t tsc_zero_raw_ns = 0;
	bool tsc_stable, tsc_held;
	int r = 0;

	vm->cpus = calloc(vm->cfg.nr_vcpus, sizeof(*vm->cpus));
	if (!vm->cpus) {
		vm_err(vm, "out of memory for %u vCPUs", vm->cfg.nr_vcpus);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vm_cpu *cpu = &vm->cpus[i];
		struct vcpu *v = &cpu->vcpu;

		r = vcpu_init(v, i, vm->kvm_fd, vm->vm_fd, &vm_vcpu_ops, vm,
			      &vm->stop, vm->cfg.slop_ns, clock_now_ns());
		vm->nr_cpus_made = i + 1;
		if (r < 0) {
			vm_err(vm, "cannot create vCPU %u: %s", i,
			       strerror(-r));
			return r;
		}
		if (i == 0) /* KVM set its TSC to 0 as it made it: pvclock.h */
			tsc_zero_raw_ns = v->created_raw_ns;
		pvtimer_init(&cpu->pv, v, vm->cfg.nr_slots,
			     vm->cfg.timer_mode == LULL_MODE_STRICT,
			     vm->cfg.missed_ticks);
		apic_set_timer_policy(v, vm->cfg.apic_max_defer_ns,
				      vm->cfg.missed_ticks);
		vcpu_set_lateness(v, vm->cfg.late_threshold_ns,
				  vm->cfg.trace_late);
		vcpu_set_advance(v, !vm->cfg.no_timer_advance);
		vcpu_set_halt_poll(v, vm->cfg.halt_poll_ns);
		if (vm->cfg.no_x2apic)
			apic_hide_x2apic(v);
		if (vm->cfg.no_pv_eoi)
			apic_hide_pv_eoi(v);
		/* an unmodified OS starts its APs itself, with INIT and SIPI */
		v->wait_for_sipi = i > 0 && !all_vcpus_enter;
	}
	/* What CPUID says of the TSC rests on KVM's verdict: boot.h. */
	tsc_stable = kvm_tsc_stable(vm->vm_fd);
	leaves.tsc_invariant = tsc_stable;
	r = boot_supported_cpuid(vm->kvm_fd, &cpuid);
	if (r < 0) {
		vm_err(vm, "KVM_GET_SUPPORTED_CPUID failed: %s", strerror(-r));
		return r;
	}
	for (unsigned i = 0; i < vm->cfg.nr_vcpus; i++) {
		struct vm_cpu *cpu = &vm->cpus[i];
		struct vcpu *v = &cpu->vcpu;

		r = boot_setup_vcpu(v->fd, cpuid, i, &leaves, vm->has_apic,
				    entry);
		if (r < 0) {
			vm_err(vm, "cannot put vCPU %u in its entry state: %s",
			       i, strerror(-r));
			break;
		}
		if (!vm->tsc_khz) {
			int khz = ioctl(v->fd, KVM_GET_TSC_KHZ, 0);

			vm->tsc_khz = khz > 0 ? (uint32_t)khz : 0;
		}
		r = pvclock_init(&cpu->pv.clock, v->fd, vm->tsc_khz,
				 tsc_zero_raw_ns);
		if (r < 0) {
			vm_err(vm,
			       "cannot read vCPU %u's TSC for its pvclock: %s",
			       i, strerror(-r));
			break;
		}
	}
	free(cpuid);
	if (r < 0)
		return r;
	tsc_held = !tsc_stable &&
		   pvclock_tsc_held(vm->cpus[0].vcpu.fd, vm->tsc_khz);
	for (unsigned i = 0; i < vm->cfg.nr_vcpus; i++) {
		vm->cpus[i].pv.clock.tsc_stable = tsc_stable;
		vm->cpus[i].pv.clock.tsc_held = tsc_held;
	}
	return 0;
}

static int build(struct vm *vm, const struct vm_config *cfg,
		 struct loaded_guest *guest)
{
	struct boot_entry entry;
	char err[200];
	int r;

	vm->cfg = *cfg;
	vm->kvm_fd = vm->vm_fd = -1;
	atomic_init(&vm->stop, false);
	atomic_init(&vm->stopped_once, false);
	atomic_init(&vm->main_thread_known, false);
	serial_init(&vm->serial, &vm->console);
	ioapic_init(&vm->ioapic, vm_ioapic_deliver, vm);
	serial_set_irq(&vm->serial, vm_serial_irq, vm);
	unclaimed_init(&vm->unclaimed);
	power_init(&vm->power);
	vm->start_ns = clock_now_ns();
	vm->console.fd = -1;

	/*
	 * The guest image is read and loaded before /dev/kvm is opened, into
	 * memory KVM is told about afterwards: a wrong path or a broken image
	 * is reported as such (65) on any host, with or without KVM. The
	 * console, which truncates its file, is opened only after.
	 * start_info and the ACPI tables wait for KVM's answer on the APIC.
	 */
	r = load_guest(vm, guest);
	if (r < 0)
		return r;
	fw_cfg_init(&vm->fw_cfg, vm->ram_size, (uint16_t)cfg->nr_vcpus);
	r = console_open(&vm->console, cfg->console_path, cfg->console_limit,
			 err, sizeof(err));
	if (r < 0) {
		vm_err(vm, "%s", err);
		return vm->console.fd < 0 ? -LULL_EXIT_USAGE : -LULL_EXIT_HOST;
	}
	console_set_room_callback(&vm->console, serial_console_room,
				  &vm->serial);
	if (open_kvm(vm) < 0)
		return -LULL_EXIT_NO_KVM;
	r = vm->kvm.max_vcpus;
	if (r > 0 && cfg->nr_vcpus > (unsigned)r) {
		vm_err(vm,
		       "--vcpus %u: KVM on this host allows at most %d vCPUs per VM",
		       cfg->nr_vcpus, r);
		return -LULL_EXIT_USAGE;
	}
	if (cfg->nr_vcpus > LULL_MAX_VCPUS) {
		vm_err(vm,
		       "--vcpus %u: lull numbers vCPUs by their 8-bit initial APIC ID, so at most %u",
		       cfg->nr_vcpus, LULL_MAX_VCPUS);
		return -LULL_EXIT_USAGE;
	}
	if (register_ram(vm) < 0 || route_msrs(vm) < 0)
		return -LULL_EXIT_HOST;
	if (write_boot_info(vm, guest, &entry) < 0)
		return -LULL_EXIT_USAGE;
	if (create_vcpus(vm, &entry, guest->all_vcpus_enter) < 0)
		return -LULL_EXIT_HOST;
	return 0;
}

int vm_create(struct vm *vm, const struct vm_config *cfg)
{
	struct loaded_guest guest = { 0 };
	int r = build(vm, cfg, &guest);

	free(guest.cmdline_buf);
	return r;
}
