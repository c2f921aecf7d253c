// SPDX-License-Identifier: MIT
/*
 * ACPI tables: RSDP -> XSDT -> MADT, laid out one after the other from
 * LULL_ACPI_RSDP_GPA. Layouts are ACPI 6.3's (section 5.2: 5.2.5.3 RSDP,
 * 5.2.6 system description table header, 5.2.8 XSDT, 5.2.12 MADT and
 * 5.2.12.2 Processor Local APIC structure); every field is little-endian
 * and unaligned, hence the packed structs and a little-endian host.
 *
 * The tables are built in a host buffer and copied into guest RAM whole,
 * so a failure leaves RAM untouched and each checksum is computed over the
 * exact bytes the guest reads.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "lull_abi.h"
#include "acpi.h"
#include "boot.h"
#include "errmsg.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ACPI tables are little-endian and are written in host order"
#endif

/* The xAPIC page vcpu/apic.c emulates (APIC_DEFAULT_BASE; vm.c checks). */
#define ACPI_LAPIC_ADDR 0xfee00000u

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
/* 5 is the MADT of ACPI 6.3, the first with the Online Capable flag. */
#define MADT_REVISION 5

#define MADT_TYPE_LOCAL_APIC 0
#define MADT_LAPIC_ENABLED (1u << 0)

/* RSDP on a 16-byte boundary (the legacy scan's step), the rest 8-aligned. */
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

struct acpi_madt {
	struct acpi_header h;
	uint32_t lapic_address;
	uint32_t flags; /* bit 0 PCAT_COMPAT: also a pair of 8259s. Not here */
	/* then the interrupt controller structures */
} __attribute__((packed));

struct acpi_madt_lapic {
	uint8_t type; /* MADT_TYPE_LOCAL_APIC */
	uint8_t length; /* 8 */
	uint8_t processor_uid;
	uint8_t apic_id;
	uint32_t flags;
} __attribute__((packed));

_Static_assert(sizeof(struct acpi_rsdp) == 36, "ACPI 6.3 table 5-27");
_Static_assert(sizeof(struct acpi_header) == 36, "ACPI 6.3 table 5-29");
_Static_assert(sizeof(struct acpi_madt) == 44, "ACPI 6.3 table 5-43");
_Static_assert(sizeof(struct acpi_madt_lapic) == 8, "ACPI 6.3 table 5-46");

#define MADT_MAX_SIZE               \
	(sizeof(struct acpi_madt) + \
	 ACPI_MADT_LAPIC_ID_LIMIT * sizeof(struct acpi_madt_lapic))
#define XSDT_ENTRIES 1
#define XSDT_SIZE (sizeof(struct acpi_header) + XSDT_ENTRIES * sizeof(uint64_t))

/* Where each table goes, relative to the area's start. */
#define ALIGN_UP(x) \
	(((x) + ACPI_TABLE_ALIGN - 1) & ~(size_t)(ACPI_TABLE_ALIGN - 1))
#define RSDP_OFF 0
#define XSDT_OFF ALIGN_UP(RSDP_OFF + sizeof(struct acpi_rsdp))
#define MADT_OFF ALIGN_UP(XSDT_OFF + XSDT_SIZE)
#define TABLES_MAX_SIZE (MADT_OFF + MADT_MAX_SIZE)

_Static_assert(LULL_ACPI_RSDP_GPA % ACPI_TABLE_ALIGN == 0,
	       "the RSDP must sit on a 16-byte boundary");
_Static_assert(LULL_ACPI_RSDP_GPA + TABLES_MAX_SIZE <= LULL_ACPI_AREA_END,
	       "the tables for the most vCPUs must fit the ACPI area");

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

/* Returns the MADT's length. */
static uint32_t build_madt(uint8_t *p, unsigned int nr_vcpus)
{
	struct acpi_madt madt;
	unsigned int n = 0;
	size_t off = sizeof(madt);

	for (unsigned int i = 0; i < nr_vcpus && i < ACPI_MADT_LAPIC_ID_LIMIT;
	     i++, n++) {
		/* UID = APIC ID = vCPU index: CPUID leaf 1 EBX[31:24] (boot.c) */
		struct acpi_madt_lapic e = {
			.type = MADT_TYPE_LOCAL_APIC,
			.length = sizeof(e),
			.processor_uid = (uint8_t)i,
			.apic_id = (uint8_t)i,
			.flags = MADT_LAPIC_ENABLED,
		};

		memcpy(p + off, &e, sizeof(e));
		off += sizeof(e);
	}
	fill_header(&madt.h, "APIC", (uint32_t)off, MADT_REVISION);
	madt.lapic_address = ACPI_LAPIC_ADDR;
	madt.flags = 0;
	memcpy(p, &madt, sizeof(madt));
	p[offsetof(struct acpi_header, checksum)] = checksum(p, off);
	return (uint32_t)off;
}

static void build_xsdt(uint8_t *p, uint64_t madt_gpa)
{
	struct acpi_header h;

	fill_header(&h, "XSDT", XSDT_SIZE, XSDT_REVISION);
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), &madt_gpa, sizeof(madt_gpa));
	p[offsetof(struct acpi_header, checksum)] = checksum(p, XSDT_SIZE);
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

	madt_len = build_madt(buf + MADT_OFF, nr_vcpus);
	build_xsdt(buf + XSDT_OFF, LULL_ACPI_RSDP_GPA + MADT_OFF);
	build_rsdp(buf + RSDP_OFF, LULL_ACPI_RSDP_GPA + XSDT_OFF);
	memcpy((uint8_t *)ram + LULL_ACPI_RSDP_GPA, buf, MADT_OFF + madt_len);
	return LULL_ACPI_RSDP_GPA;
}
