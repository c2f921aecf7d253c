// SPDX-License-Identifier: MIT
/*
 * lull's ACPI tables read by ACPICA's own disassembler, iasl (Debian's
 * acpica-tools; scripts/install-deps installs it): each table the XSDT
 * lists, and the DSDT, go to a file and `iasl -d` must read them with no
 * error or warning. The DSDT's disassembly must name _S5 and a PNP0501
 * device, and must compile back (`iasl` on the .dsl) with 0 errors and 0
 * warnings: the AML is well-formed as a whole, not only where
 * test_acpi.c looks. Without iasl the tests fail, saying so.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "loader/acpi.h"
#include "lull_abi.h"

extern char **environ;

#define RAM_SIZE (1ull << 20)

static uint8_t *ram;
static char dir[] = "/tmp/lull-acpi-iasl-XXXXXX";

static void setup(void)
{
	ram = calloc(1, RAM_SIZE);
	cr_assert(ram);
	cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

/* The files iasl leaves behind go with the folder. */
static void teardown(void)
{
	char cmd[128];

	free(ram);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(acpi_iasl, .init = setup, .fini = teardown);

static uint32_t u32_at(uint64_t gpa)
{
	uint32_t v;

	memcpy(&v, ram + gpa, sizeof(v));
	return v;
}

static uint64_t u64_at(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, ram + gpa, sizeof(v));
	return v;
}

/* Writes the table at gpa to DIR/SIG.dat; returns the path. */
static char *dump_table(uint64_t gpa)
{
	static char path[8][64];
	static unsigned next;
	char *p = path[next++ % 8];
	FILE *f;

	snprintf(p, sizeof(path[0]), "%s/%.4s.dat", dir,
		 (const char *)ram + gpa);
	f = fopen(p, "w");
	cr_assert(f, "%s: %s", p, strerror(errno));
	cr_assert_eq(fwrite(ram + gpa, 1, u32_at(gpa + 4), f), u32_at(gpa + 4));
	cr_assert_eq(fclose(f), 0);
	return p;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s;
	long n;

	cr_assert(f, "%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = calloc(1, (size_t)n + 1);
	cr_assert(s);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

/* Runs iasl with args in DIR, its output to DIR/iasl.log; returns the log. */
static char *iasl(const char *arg1, const char *arg2)
{
	char log[96];
	char *argv[] = { "iasl", (char *)arg1, (char *)arg2, NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, r;

	snprintf(log, sizeof(log), "%s/iasl.log", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log,
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	r = posix_spawnp(&pid, "iasl", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert_eq(r, 0,
		     "cannot run iasl (%s): scripts/install-deps installs acpica-tools",
		     strerror(r));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "iasl %s %s failed:\n%s", arg1, arg2, slurp(log));
	return slurp(log);
}

static void expect_clean(const char *text, const char *what)
{
	const char *bad[] = { "Error", "Warning", "error", "warning",
			      "Remark", "Invalid", "****" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_null(strstr(text, bad[i]), "%s says \"%s\":\n%s", what,
			       bad[i], text);
}

/* `iasl -d` on the table; returns the disassembly (.dsl). */
static char *disassemble(const char *dat)
{
	char dsl[80];
	char *log = iasl("-d", dat), *text;

	expect_clean(log, dat);
	free(log);
	snprintf(dsl, sizeof(dsl), "%.*s.dsl", (int)(strlen(dat) - 4), dat);
	text = slurp(dsl);
	expect_clean(text, dsl);
	return text;
}

static uint64_t write_tables(unsigned nr_vcpus)
{
	char err[256] = "";
	int64_t rsdp = acpi_write_tables(ram, RAM_SIZE, nr_vcpus, err,
					 sizeof(err));

	cr_assert_gt(rsdp, 0, "%s", err);
	return u64_at((uint64_t)rsdp + 24);
}

Test(acpi_iasl, every_table_disassembles_cleanly)
{
	uint64_t xsdt = write_tables(2);
	unsigned n = (u32_at(xsdt + 4) - 36) / 8;

	free(disassemble(dump_table(xsdt)));
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = u64_at(xsdt + 36 + 8 * i);
		char *text = disassemble(dump_table(t));

		if (!memcmp(ram + t, "FACP", 4)) {
			cr_expect(strstr(text, "Hardware Reduced (V5) : 1"),
				  "%s", text);
			cr_expect(strstr(text, "Reset Register Supported (V2) : 1"),
				  "%s", text);
		}
		if (!memcmp(ram + t, "APIC", 4))
			cr_expect(strstr(text, "[I/O APIC]"), "%s", text);
		free(text);
	}
}

Test(acpi_iasl, dsdt_parses_and_compiles_back)
{
	uint64_t xsdt = write_tables(1);
	uint64_t fadt = u64_at(xsdt + 36);
	char *text, *log;

	cr_assert_eq(memcmp(ram + fadt, "FACP", 4), 0);
	text = disassemble(dump_table(u64_at(fadt + 140)));
	cr_expect(strstr(text, "Name (_S5, Package (0x04)"), "%s", text);
	cr_expect(strstr(text, "Device (COM1)"), "%s", text);
	cr_expect(strstr(text, "EisaId (\"PNP0501\")"), "%s", text);
	cr_expect(strstr(text, "IRQNoFlags ()"), "%s", text);
	free(text);

	/* -p: the output's name; compiled in DIR, so the path is DIR's */
	char dsl[80], out[80];

	snprintf(dsl, sizeof(dsl), "%s/DSDT.dsl", dir);
	snprintf(out, sizeof(out), "-p%s/recompiled", dir);
	log = iasl(out, dsl);
	cr_expect(strstr(log, "0 Errors, 0 Warnings, 0 Remarks"), "%s", log);
	free(log);
}
