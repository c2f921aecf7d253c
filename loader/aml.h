/* SPDX-License-Identifier: MIT */
/*
 * A tiny AML emitter: the few ACPI Machine Language terms lull's DSDT
 * needs, written the way ASL reads (ACPI 6.3 section 20, "ACPI Machine
 * Language Specification", and 6.4 for resource descriptors).
 *
 *   aml_scope_open(&a, "\\_SB");
 *     aml_device_open(&a, "COM1");
 *       aml_name(&a, "_HID"); aml_eisa_id(&a, "PNP0501");
 *     aml_close(&a);
 *   aml_close(&a);
 *
 * Terms with a PkgLength (Scope, Device, Package, Buffer) are opened and
 * closed: the length is known only at the close, which writes it in the
 * fewest bytes. Names are ASL paths: an optional "\\" root prefix and
 * dot-separated segments of 1 to 4 characters ('_'-padded).
 *
 * Contract: the emitter writes into the caller's buffer and never past
 * its end. Any misuse (a full buffer, a bad name, a close with nothing
 * open, nesting deeper than AML_MAX_DEPTH) sets `failed` and turns every
 * later call into a no-op; aml_finish() reports it. lull's DSDT is
 * fixed, so a failure is a lull bug that the unit tests catch, but the
 * emitter still stays inside the buffer.
 */
#ifndef LULL_AML_H
#define LULL_AML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Scope in Device in Buffer is lull's deepest; a little room on top. */
#define AML_MAX_DEPTH 8

struct aml {
	uint8_t *buf;
	size_t cap, len;
	size_t open[AML_MAX_DEPTH]; /* where each open term's PkgLength goes */
	bool open_buffer[AML_MAX_DEPTH]; /* a Buffer: its size comes first */
	unsigned depth;
	bool failed;
};

void aml_init(struct aml *a, void *buf, size_t cap);
/* The bytes written, or -1 if anything failed or a term is still open. */
long aml_finish(const struct aml *a);

/* DefScope: Scope (path) { ... } */
void aml_scope_open(struct aml *a, const char *path);
/* DefDevice: Device (path) { ... } */
void aml_device_open(struct aml *a, const char *path);
/* DefPackage: Package (nr_elements) { ... } */
void aml_package_open(struct aml *a, uint8_t nr_elements);
/* DefBuffer of what follows, its size counted at the close. */
void aml_buffer_open(struct aml *a);
/* Ends the innermost open term. */
void aml_close(struct aml *a);

/* DefName: Name (path, ...); the object follows. */
void aml_name(struct aml *a, const char *path);
/* An integer in the shortest encoding (Zero, One, Byte..QWordConst). */
void aml_integer(struct aml *a, uint64_t value);
/* EisaId ("PNP0501"): 3 capitals and 4 hex digits, compressed. */
void aml_eisa_id(struct aml *a, const char *id);
/* A raw byte of a buffer's content (resource descriptors). */
void aml_byte(struct aml *a, uint8_t b);

/*
 * ResourceTemplate items, inside aml_buffer_open()/aml_close():
 * IO (Decode16, min, max, align, len), IRQNoFlags () {irq}, and the end
 * tag every template ends with (checksum 0: "not computed").
 */
void aml_io16(struct aml *a, uint16_t min, uint16_t max, uint8_t align,
	      uint8_t len);
void aml_irq_no_flags(struct aml *a, uint8_t irq);
void aml_end_tag(struct aml *a);

#endif
