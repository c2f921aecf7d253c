// SPDX-License-Identifier: MIT
/* guest_file_read: reads regular files whole, refuses the rest clearly. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "loader/guest_file.h"

static char dir[] = "/tmp/lull-loader-test-XXXXXX";

static void make_dir(void)
{
	cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		cr_log_warn("could not remove %s", dir);
}

TestSuite(read_file, .init = make_dir, .fini = remove_dir);

static const char *path_in_dir(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void expect_refused(const char *path, int want_errno, const char *word)
{
	void *buf = (void *)0x1;
	size_t size = 12345;
	char err[512] = "";

	cr_assert_eq(guest_file_read(path, &buf, &size, err, sizeof(err)),
		     -want_errno, "%s: %s", path, err);
	cr_expect(strstr(err, word), "message \"%s\" lacks \"%s\"", err, word);
	/* The caller prints "<path>: <err>", so the path is not in err. */
	cr_expect(!strstr(err, path), "message \"%s\" repeats the path", err);
	cr_expect_eq(buf, (void *)0x1, "buffer set on error");
	cr_expect_eq(size, 12345, "size set on error");
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	cr_assert(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

Test(read_file, reads_whole_file)
{
	const char *path = path_in_dir("guest.elf");
	uint8_t data[10000];
	char err[256] = "";
	void *buf;
	size_t size;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = i * 13;
	write_file(path, data, sizeof(data));
	cr_assert_eq(guest_file_read(path, &buf, &size, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(size, sizeof(data));
	cr_expect_arr_eq(buf, data, sizeof(data));
	free(buf);
}

Test(read_file, missing_file)
{
	expect_refused(path_in_dir("nope.elf"), ENOENT, "no such file");
}

Test(read_file, directory)
{
	expect_refused(dir, EINVAL, "not a regular file (it is a directory)");
}

Test(read_file, empty_file)
{
	const char *path = path_in_dir("empty.elf");

	write_file(path, "", 0);
	expect_refused(path, EINVAL, "empty");
}

Test(read_file, fifo_does_not_hang)
{
	const char *path = path_in_dir("fifo");

	cr_assert_eq(mkfifo(path, 0600), 0);
	expect_refused(path, EINVAL, "pipe");
}

Test(read_file, larger_than_1gib)
{
	const char *path = path_in_dir("huge.elf");
	int fd = open(path, O_CREAT | O_WRONLY, 0600);

	cr_assert_geq(fd, 0);
	/* Sparse: no disk space used. */
	cr_assert_eq(ftruncate(fd, GUEST_FILE_MAX_SIZE + 1), 0);
	close(fd);
	expect_refused(path, EFBIG, "over 1 GiB");
}

Test(read_file, unreadable_file)
{
	const char *path = path_in_dir("secret.elf");

	if (geteuid() == 0)
		cr_skip_test(
			"running as root: file permissions do not stop reads");
	write_file(path, "x", 1);
	cr_assert_eq(chmod(path, 0), 0);
	expect_refused(path, EACCES, "Permission denied");
}
