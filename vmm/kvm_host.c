// SPDX-License-Identifier: MIT
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vmm/kvm_host.h"

static const char *const module_names[] = {
	[KVM_MODULE_OTHER] = "other",
	[KVM_MODULE_INTEL] = "kvm_intel",
	[KVM_MODULE_AMD] = "kvm_amd",
	[KVM_MODULE_PVM] = "kvm_pvm",
};

static const struct {
	const char *name;
	int cap;
} features[KVM_FEATURES] = {
	[KVM_FEATURE_USER_SPACE_MSR] = { "user_space_msr",
					 KVM_CAP_X86_USER_SPACE_MSR },
	[KVM_FEATURE_MSR_FILTER] = { "msr_filter", KVM_CAP_X86_MSR_FILTER },
	[KVM_FEATURE_ENFORCE_PV_CPUID] = { "enforce_pv_feature_cpuid",
					   KVM_CAP_ENFORCE_PV_FEATURE_CPUID },
	[KVM_FEATURE_SYNC_REGS] = { "sync_regs", KVM_CAP_SYNC_REGS },
	[KVM_FEATURE_GET_TSC_KHZ] = { "get_tsc_khz", KVM_CAP_GET_TSC_KHZ },
	[KVM_FEATURE_ADJUST_CLOCK] = { "adjust_clock", KVM_CAP_ADJUST_CLOCK },
};

int kvm_host_open(char *err, size_t len)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC), api, e;

	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			snprintf(err, len,
				 "/dev/kvm does not exist: this host has no KVM (load kvm_intel or kvm_amd, or enable nested virtualization)");
		else if (e == EACCES || e == EPERM)
			snprintf(err, len,
				 "no permission to open /dev/kvm: run as root or join the group that owns it (usually 'kvm')");
		else
			snprintf(err, len, "cannot open /dev/kvm: %s",
				 strerror(e));
		return -e;
	}
	api = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION) {
		snprintf(err, len, "/dev/kvm speaks KVM API %d, lull needs %d",
			 api, KVM_API_VERSION);
		close(fd);
		return -ENOTSUP;
	}
	return fd;
}

static bool module_loaded(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return access(path, F_OK) == 0;
}

static bool cpu_has_vmx(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 5));
}

static bool cpu_has_svm(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 2));
}

/*
 * kvm_intel and kvm_amd load only where their CPU feature is; kvm_pvm
 * needs neither. Where PVM may be loaded beside one of them, the vendor
 * module with its feature present is the one lull asks for first.
 */
void kvm_host_probe(struct kvm_host *h, int kvm_fd)
{
	bool vmx = cpu_has_vmx(), svm = cpu_has_svm();

	if (vmx && module_loaded("kvm_intel"))
		h->module = KVM_MODULE_INTEL;
	else if (svm && module_loaded("kvm_amd"))
		h->module = KVM_MODULE_AMD;
	else if (module_loaded("kvm_pvm"))
		h->module = KVM_MODULE_PVM;
	else
		h->module = KVM_MODULE_OTHER;
	h->hardware = h->module == KVM_MODULE_INTEL ||
		      h->module == KVM_MODULE_AMD ||
		      (h->module == KVM_MODULE_OTHER && (vmx || svm));
	for (int f = 0; f < KVM_FEATURES; f++)
		h->features[f] =
			ioctl(kvm_fd, KVM_CHECK_EXTENSION, features[f].cap);
	h->max_vcpus = ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (h->max_vcpus <= 0)
		h->max_vcpus = ioctl(kvm_fd, KVM_CHECK_EXTENSION,
				     KVM_CAP_NR_VCPUS);
}

const char *kvm_module_name(enum kvm_module m)
{
	return module_names[m];
}

const char *kvm_feature_name(enum kvm_feature f)
{
	return features[f].name;
}

const char *kvm_host_warning(const struct kvm_host *h)
{
	if (h->module != KVM_MODULE_PVM)
		return NULL;
	return "/dev/kvm is kvm_pvm, without hardware virtualization: a guest not built for PVM runs in KVM's instruction emulator, slowly, and stops at an instruction it cannot emulate";
}

void kvm_host_json(FILE *f, const struct kvm_host *h)
{
	fprintf(f, "\"kvm\": {\"module\": \"%s\", \"hardware\": %s, "
		   "\"max_vcpus\": %d, \"features\": {",
		kvm_module_name(h->module), h->hardware ? "true" : "false",
		h->max_vcpus);
	for (int i = 0; i < KVM_FEATURES; i++)
		fprintf(f, "%s\"%s\": %s", i ? ", " : "", features[i].name,
			h->features[i] > 0 ? "true" : "false");
	fputs("}}", f);
}
