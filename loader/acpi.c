// SPDX-License-Identifier: MIT
/*
 * ACPI tables: RSDP -> XSDT -> FADT (-> DSDT), MADT, laid out one after the
 * other from LULL_ACPI_RSDP_GPA. Layouts are ACPI 6.3's (section 5.2:
 * 5.2.5.3 RSDP, 5.2.6 system description table header, 5.2.8 XSDT, 5.2.9
 * FADT, 5.2.11.1 DSDT, 5.2.12 MADT, 5.2.12.3 I/O APIC and 5.2.12.12
 * Processor Local x2APIC structures, 5.2.3.2 Generic Address Structure);
 * every field is little-endian and unaligned, hence the packed structs and
 * a little-endian host. The DSDT's AML comes from aml.c.
 *
 * The tables are built in a host buffer and copied into guest RAM whole,
 * so a failure leaves RAM untouched and each checksum is computed over the
 * exact bytes the guest reads.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "loader/acpi.h"
#include "loader/aml.h"
#include "loader/boot.h"
#include "loader/errmsg.h"
#include "lull_abi.h"
#include "platform.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ACPI tables are little-endian and are written in host order"
#endif

/*
 * Who made the tables: the OEM fields of every header. Linux prints them
 * ("ACPI: APIC 0x00000000000E0060 00003C (v05 LULL   LULLVMM  00000001
 * LULL 00000001)" for two vCPUs).
 */
#define ACPI_OEM_ID "LULL  " /* 6 bytes, space-padded */
#define ACPI_OEM_TABLE_ID "LULLVMM " /* 8 bytes */
#define ACPI_OEM_REVISION 1u
#define ACPI_CREATOR_ID "LULL"
#define ACPI_CREATOR_REVISION 1u

/* ACPI 6.3 5.2.5.3: revision 2 is every RSDP since ACPI 2.0 (it has an XSDT). */
#define RSDP_REVISION 2
/* Its first checksum covers the ACPI 1.0 part only: the first 20 bytes. */
#define RSDP_V1_LENGTH 20
#define XSDT_REVISION 1
/* FADT 6.3: revision 6, minor version 3 (the layout of table 5-33). */
#define FADT_REVISION 6
#define FADT_MINOR_REVISION 3
/* DSDT revision 2 and up: AML integers are 64-bit. */
#define DSDT_REVISION 2
/* 5 is the MADT of ACPI 6.3, the first with the Online Capable flag. */
#define MADT_REVISION 5

#define MADT_TYPE_IO_APIC 1
#define MADT_TYPE_LOCAL_X2APIC 9
#define MADT_LAPIC_ENABLED (1u << 0)

/* FADT flags (table 5-34) */
#define FADT_RESET_REG_SUP (1u << 10)
#define FADT_HW_REDUCED_ACPI (1u << 20)
/*
 * IA-PC boot architecture flags (table 5-35), set where they tell the OS
 * what is not there: no VGA, no MSI (no PCI at all), no CMOS RTC. Left
 * clear: LEGACY_DEVICES (no user-visible ISA devices: Linux then skips
 * the PnP BIOS) and 8042 (no keyboard controller: Linux then does not
 * probe ports 0x60/0x64, which only take the reset command here).
 */
#define FADT_BOOT_NO_VGA (1u << 2)
#define FADT_BOOT_MSI_NOT_SUPPORTED (1u << 3)
#define FADT_BOOT_NO_CMOS_RTC (1u << 5)
#define FADT_HYPERVISOR_VENDOR "LULL\0\0\0\0" /* 8 bytes */

/* Generic Address Structure (table 5-25) */
#define GAS_SPACE_SYSTEM_IO 1
#define GAS_ACCESS_BYTE 1

/* RSDP on a 16-byte boundary (the legacy scan's step), the rest 16-aligned. */
#define ACPI_TABLE_ALIGN 16

struct acpi_rsdp {
	char signature[8]; /* "RSD PTR " */
	uint8_t checksum; /* bytes 0..19 sum to 0 */
	char oem_id[6];
	uint8_t revision;
	uint32_t rsdt_address; /* 0: no RSDT; a revision 2 OS reads the XSDT */
	uint32_t length; /* of the whole RSDP: 36 */
	uint64_t xsdt_address;
	uint8_t extended_checksum; /* all 36 bytes sum to 0 */
	uint8_t reserved[3];
} __attribute__((packed));

struct acpi_header {
	char signature[4];
	uint32_t length; /* of the whole table, header included */
	uint8_t revision;
	uint8_t checksum; /* the whole table sums to 0 */
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));

struct acpi_gas {
	uint8_t space_id;
	uint8_t bit_width;
	uint8_t bit_offset;
	uint8_t access_size;
	uint64_t address;
} __attribute__((packed));

/*
 * The FADT. Hardware-reduced ACPI (5.2.9 with HW_REDUCED_ACPI) leaves the
 * whole fixed hardware block at zero: no SCI, no SMI command port, no PM1
 * event/control blocks, no PM timer, no GPEs, no FACS. What it keeps: the
 * DSDT, the reset register and the sleep control/status registers.
 */
struct acpi_fadt {
	struct acpi_header h;
	uint32_t firmware_ctrl;
	uint32_t dsdt; /* 0: X_DSDT holds the address */
	uint8_t reserved0;
	uint8_t preferred_pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable;
	uint8_t acpi_disable;
	uint8_t s4bios_req;
	uint8_t pstate_cnt;
	uint32_t pm1a_evt_blk, pm1b_evt_blk;
	uint32_t pm1a_cnt_blk, pm1b_cnt_blk;
	uint32_t pm2_cnt_blk;
	uint32_t pm_tmr_blk;
	uint32_t gpe0_blk, gpe1_blk;
	uint8_t pm1_evt_len, pm1_cnt_len, pm2_cnt_len, pm_tmr_len;
	uint8_t gpe0_blk_len, gpe1_blk_len, gpe1_base;
	uint8_t cst_cnt;
	uint16_t p_lvl2_lat, p_lvl3_lat;
	uint16_t flush_size, flush_stride;
	uint8_t duty_offset, duty_width;
	uint8_t day_alrm, mon_alrm, century;
	uint16_t iapc_boot_arch;
	uint8_t reserved1;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_revision;
	uint64_t x_firmware_ctrl;
	uint64_t x_dsdt;
	struct acpi_gas x_pm1a_evt_blk, x_pm1b_evt_blk;
	struct acpi_gas x_pm1a_cnt_blk, x_pm1b_cnt_blk;
	struct acpi_gas x_pm2_cnt_blk;
	struct acpi_gas x_pm_tmr_blk;
	struct acpi_gas x_gpe0_blk, x_gpe1_blk;
	struct acpi_gas sleep_control_reg;
	struct acpi_gas sleep_status_reg;
	char hypervisor_vendor[8];
} __attribute__((packed));

struct acpi_madt {
	struct acpi_header h;
	uint32_t lapic_address;
	uint32_t flags; /* bit 0 PCAT_COMPAT: also a pair of 8259s. Not here */
	/* then the interrupt controller structures */
} __attribute__((packed));

struct acpi_madt_io_apic {
	uint8_t type; /* MADT_TYPE_IO_APIC */
	uint8_t length; /* 12 */
	uint8_t io_apic_id;
	uint8_t reserved;
	uint32_t address;
	uint32_t gsi_base;
} __attribute__((packed));

struct acpi_madt_x2apic {
	uint8_t type; /* MADT_TYPE_LOCAL_X2APIC */
	uint8_t length; /* 16 */
	uint16_t reserved;
	uint32_t x2apic_id;
	uint32_t flags;
	uint32_t processor_uid;
} __attribute__((packed));

_Static_assert(sizeof(struct acpi_rsdp) == 36, "ACPI 6.3 table 5-27");
_Static_assert(sizeof(struct acpi_header) == 36, "ACPI 6.3 table 5-29");
_Static_assert(sizeof(struct acpi_gas) == 12, "ACPI 6.3 table 5-25");
_Static_assert(sizeof(struct acpi_fadt) == 276, "ACPI 6.3 table 5-33");
_Static_assert(offsetof(struct acpi_fadt, flags) == 112, "table 5-33");
_Static_assert(offsetof(struct acpi_fadt, x_dsdt) == 140, "table 5-33");
_Static_assert(offsetof(struct acpi_fadt, sleep_control_reg) == 244,
	       "table 5-33");
_Static_assert(sizeof(struct acpi_madt) == 44, "ACPI 6.3 table 5-43");
_Static_assert(sizeof(struct acpi_madt_io_apic) == 12, "ACPI 6.3 table 5-48");
_Static_assert(sizeof(struct acpi_madt_x2apic) == 16, "ACPI 6.3 table 5-64");

#define MADT_MAX_SIZE                                                  \
	(sizeof(struct acpi_madt) + sizeof(struct acpi_madt_io_apic) + \
	 LULL_MAX_VCPUS * sizeof(struct acpi_madt_x2apic))
#define XSDT_ENTRIES 2 /* the FADT and the MADT */
#define XSDT_SIZE (sizeof(struct acpi_header) + XSDT_ENTRIES * sizeof(uint64_t))
/* Room for the DSDT's AML: _S5 and COM1 take about 80 bytes. */
#define DSDT_MAX_SIZE 512

/* Where each table goes, relative to the area's start. */
#define ALIGN_UP(x) \
	(((x) + ACPI_TABLE_ALIGN - 1) & ~(size_t)(ACPI_TABLE_ALIGN - 1))
#define RSDP_OFF 0
#define XSDT_OFF ALIGN_UP(RSDP_OFF + sizeof(struct acpi_rsdp))
#define FADT_OFF ALIGN_UP(XSDT_OFF + XSDT_SIZE)
#define DSDT_OFF ALIGN_UP(FADT_OFF + sizeof(struct acpi_fadt))
#define MADT_OFF ALIGN_UP(DSDT_OFF + DSDT_MAX_SIZE)
#define TABLES_MAX_SIZE (MADT_OFF + MADT_MAX_SIZE)

_Static_assert(LULL_ACPI_RSDP_GPA % ACPI_TABLE_ALIGN == 0,
	       "the RSDP must sit on a 16-byte boundary");
_Static_assert(LULL_ACPI_RSDP_GPA + TABLES_MAX_SIZE <= LULL_ACPI_AREA_END,
	       "the tables for the most vCPUs must fit the ACPI area");
_Static_assert(PLATFORM_COM1_GSI < 16,
	       "the DSDT gives COM1 an ISA IRQ descriptor: IRQ 0-15");

/* The byte that makes len bytes at p sum to zero, modulo 256. */
static uint8_t checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += b[i];
	return (uint8_t)-sum;
}

static void fill_header(struct acpi_header *h, const char sig[4],
			uint32_t length, uint8_t revision)
{
	memcpy(h->signature, sig, sizeof(h->signature));
	h->length = length;
	h->revision = revision;
	h->checksum = 0;
	memcpy(h->oem_id, ACPI_OEM_ID, sizeof(h->oem_id));
	memcpy(h->oem_table_id, ACPI_OEM_TABLE_ID, sizeof(h->oem_table_id));
	h->oem_revision = ACPI_OEM_REVISION;
	memcpy(h->creator_id, ACPI_CREATOR_ID, sizeof(h->creator_id));
	h->creator_revision = ACPI_CREATOR_REVISION;
}

/* The table at p, `len` bytes with its header first, gets its checksum. */
static void seal(uint8_t *p, uint32_t len)
{
	p[offsetof(struct acpi_header, checksum)] = checksum(p, len);
}

/* Returns the MADT's length. */
static uint32_t build_madt(uint8_t *p, unsigned int nr_vcpus)
{
	struct acpi_madt madt;
	struct acpi_madt_io_apic ioapic = {
		.type = MADT_TYPE_IO_APIC,
		.length = sizeof(ioapic),
		.io_apic_id = PLATFORM_IOAPIC_ID,
		.address = PLATFORM_IOAPIC_GPA,
		.gsi_base = 0,
	};
	size_t off = sizeof(madt);

	for (unsigned int i = 0; i < nr_vcpus; i++) {
		/* UID = x2APIC ID = vCPU index: CPUID leaf 1 EBX[31:24]
		 * and leaf 0xb EDX (boot.c) */
		struct acpi_madt_x2apic e = {
			.type = MADT_TYPE_LOCAL_X2APIC,
			.length = sizeof(e),
			.x2apic_id = i,
			.flags = MADT_LAPIC_ENABLED,
			.processor_uid = i,
		};

		memcpy(p + off, &e, sizeof(e));
		off += sizeof(e);
	}
	memcpy(p + off, &ioapic, sizeof(ioapic));
	off += sizeof(ioapic);
	fill_header(&madt.h, "APIC", (uint32_t)off, MADT_REVISION);
	madt.lapic_address = PLATFORM_LAPIC_GPA;
	madt.flags = 0;
	memcpy(p, &madt, sizeof(madt));
	seal(p, (uint32_t)off);
	return (uint32_t)off;
}

/*
 * The DSDT's AML, as ASL:
 *
 *   Name (_S5, Package (4) { PLATFORM_SLP_TYP_S5, 0, 0, 0 })
 *   Scope (\_SB) {
 *     Device (COM1) {
 *       Name (_HID, EisaId ("PNP0501"))
 *       Name (_UID, 1)
 *       Name (_CRS, ResourceTemplate () {
 *         IO (Decode16, LULL_COM1_PORT, LULL_COM1_PORT, 1, 8)
 *         IRQNoFlags () { PLATFORM_COM1_GSI }
 *       })
 *     }
 *   }
 *
 * _S5's first value is the SLP_TYP an OS writes to the sleep control
 * register to power off (7.4.2); the second is SLP_TYPb, which only the
 * PM1b block of full ACPI hardware reads, and the last two are reserved.
 * COM1 is named so that Linux's 8250_pnp driver takes the port with its
 * interrupt. Returns the AML's length, or -1 (an emitter misuse: a bug).
 */
static long build_dsdt_aml(uint8_t *p, size_t cap)
{
	struct aml a;

	aml_init(&a, p, cap);
	aml_name(&a, "_S5");
	aml_package_open(&a, 4);
	aml_integer(&a, PLATFORM_SLP_TYP_S5);
	aml_integer(&a, 0);
	aml_integer(&a, 0);
	aml_integer(&a, 0);
	aml_close(&a);

	aml_scope_open(&a, "\\_SB");
	aml_device_open(&a, "COM1");
	aml_name(&a, "_HID");
	aml_eisa_id(&a, "PNP0501");
	aml_name(&a, "_UID");
	aml_integer(&a, 1);
	aml_name(&a, "_CRS");
	aml_buffer_open(&a);
	aml_io16(&a, LULL_COM1_PORT, LULL_COM1_PORT, 1, 8);
	aml_irq_no_flags(&a, PLATFORM_COM1_GSI);
	aml_end_tag(&a);
	aml_close(&a);
	aml_close(&a);
	aml_close(&a);
	return aml_finish(&a);
}

/* Returns the DSDT's length, or -1. */
static long build_dsdt(uint8_t *p)
{
	struct acpi_header h;
	long aml = build_dsdt_aml(p + sizeof(h), DSDT_MAX_SIZE - sizeof(h));
	uint32_t len;

	if (aml < 0)
		return -1;
	len = (uint32_t)(sizeof(h) + (size_t)aml);
	fill_header(&h, "DSDT", len, DSDT_REVISION);
	memcpy(p, &h, sizeof(h));
	seal(p, len);
	return len;
}

static struct acpi_gas system_io_byte(uint16_t port)
{
	return (struct acpi_gas){
		.space_id = GAS_SPACE_SYSTEM_IO,
		.bit_width = 8,
		.bit_offset = 0,
		.access_size = GAS_ACCESS_BYTE,
		.address = port,
	};
}

static void build_fadt(uint8_t *p, uint64_t dsdt_gpa)
{
	struct acpi_fadt f;

	memset(&f, 0, sizeof(f));
	fill_header(&f.h, "FACP", sizeof(f), FADT_REVISION);
	f.minor_revision = FADT_MINOR_REVISION;
	f.flags = FADT_HW_REDUCED_ACPI | FADT_RESET_REG_SUP;
	f.iapc_boot_arch = FADT_BOOT_NO_VGA | FADT_BOOT_MSI_NOT_SUPPORTED |
			   FADT_BOOT_NO_CMOS_RTC;
	f.x_dsdt = dsdt_gpa;
	f.reset_reg = system_io_byte(PLATFORM_RESET_PORT);
	f.reset_value = PLATFORM_RESET_VALUE;
	f.sleep_control_reg = system_io_byte(PLATFORM_SLEEP_CONTROL_PORT);
	f.sleep_status_reg = system_io_byte(PLATFORM_SLEEP_STATUS_PORT);
	memcpy(f.hypervisor_vendor, FADT_HYPERVISOR_VENDOR,
	       sizeof(f.hypervisor_vendor));
	memcpy(p, &f, sizeof(f));
	seal(p, sizeof(f));
}

static void build_xsdt(uint8_t *p, const uint64_t entries[XSDT_ENTRIES])
{
	struct acpi_header h;

	fill_header(&h, "XSDT", XSDT_SIZE, XSDT_REVISION);
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), entries, XSDT_ENTRIES * sizeof(uint64_t));
	seal(p, XSDT_SIZE);
}

static void build_rsdp(uint8_t *p, uint64_t xsdt_gpa)
{
	struct acpi_rsdp r = {
		.revision = RSDP_REVISION,
		.rsdt_address = 0,
		.length = sizeof(r),
		.xsdt_address = xsdt_gpa,
	};

	memcpy(r.signature, "RSD PTR ", sizeof(r.signature));
	memcpy(r.oem_id, ACPI_OEM_ID, sizeof(r.oem_id));
	/* The first sum must hold on its own, before the extended one. */
	r.checksum = checksum(&r, RSDP_V1_LENGTH);
	r.extended_checksum = checksum(&r, sizeof(r));
	memcpy(p, &r, sizeof(r));
}

int64_t acpi_write_tables(void *ram, uint64_t ram_size, unsigned int nr_vcpus,
			  char *err, size_t err_len)
{
	uint8_t buf[TABLES_MAX_SIZE] = { 0 };
	const uint64_t xsdt_entries[XSDT_ENTRIES] = {
		LULL_ACPI_RSDP_GPA + FADT_OFF,
		LULL_ACPI_RSDP_GPA + MADT_OFF,
	};
	uint32_t madt_len;

	if (nr_vcpus == 0 || nr_vcpus > LULL_MAX_VCPUS)
		return errmsg(
			err, err_len, EINVAL,
			"ACPI tables for %u vCPUs: lull describes 1 to %u",
			nr_vcpus, LULL_MAX_VCPUS);
	if (ram_size < LULL_ACPI_AREA_END)
		return errmsg(
			err, err_len, ERANGE,
			"guest RAM (%llu bytes) ends before the ACPI area, which ends at 0x%x",
			(unsigned long long)ram_size, LULL_ACPI_AREA_END);
	if (build_dsdt(buf + DSDT_OFF) < 0)
		return errmsg(err, err_len, EINVAL,
			      "lull's DSDT does not fit its %u bytes (a lull bug)",
			      DSDT_MAX_SIZE);

	build_fadt(buf + FADT_OFF, LULL_ACPI_RSDP_GPA + DSDT_OFF);
	madt_len = build_madt(buf + MADT_OFF, nr_vcpus);
	build_xsdt(buf + XSDT_OFF, xsdt_entries);
	build_rsdp(buf + RSDP_OFF, LULL_ACPI_RSDP_GPA + XSDT_OFF);
	memcpy((uint8_t *)ram + LULL_ACPI_RSDP_GPA, buf, MADT_OFF + madt_len);
	return LULL_ACPI_RSDP_GPA;
}
