// SPDX-License-Identifier: MIT
/*
 * Reading the guest image: one whole regular file into one malloc'd buffer,
 * with a sentence for every way that can fail. The loader then works on
 * bytes only (pvh.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pvh.h"

static int __attribute__((format(printf, 4, 5)))
fail(char *err, size_t err_len, int errnum, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -errnum;
}

static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "directory";
	if (S_ISCHR(mode))
		return "character device";
	if (S_ISBLK(mode))
		return "block device";
	if (S_ISFIFO(mode))
		return "pipe";
	if (S_ISSOCK(mode))
		return "socket";
	return "special file";
}

static int read_all(int fd, const char *path, uint8_t *buf, size_t size,
		    char *err, size_t err_len)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail(err, err_len, errno,
				    "cannot read guest file %s: %s", path,
				    strerror(errno));
		if (n == 0)
			return fail(
				err, err_len, EIO,
				"guest file %s shrank while it was being read",
				path);
		got += n;
	}
	return 0;
}

static int read_open_file(int fd, const char *path, void **buf, size_t *size,
			  char *err, size_t err_len)
{
	struct stat st;
	void *data;
	int ret;

	if (fstat(fd, &st) < 0)
		return fail(err, err_len, errno,
			    "cannot stat guest file %s: %s", path,
			    strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, err_len, EINVAL,
			    "guest file %s is not a regular file (it is a %s)",
			    path, file_kind(st.st_mode));
	if (st.st_size == 0)
		return fail(err, err_len, EINVAL, "guest file %s is empty",
			    path);
	if ((unsigned long long)st.st_size > PVH_MAX_FILE_SIZE)
		return fail(
			err, err_len, EFBIG,
			"guest file %s is %lld bytes; lull refuses guest images over 1 GiB",
			path, (long long)st.st_size);

	data = malloc(st.st_size);
	if (!data)
		return fail(err, err_len, ENOMEM,
			    "cannot allocate %lld bytes for guest file %s",
			    (long long)st.st_size, path);
	ret = read_all(fd, path, data, st.st_size, err, err_len);
	if (ret) {
		free(data);
		return ret;
	}
	*buf = data;
	*size = st.st_size;
	return 0;
}

int pvh_read_file(const char *path, void **buf, size_t *size, char *err,
		  size_t err_len)
{
	int fd, ret;

	/* O_NONBLOCK: opening a FIFO must not hang; regular files ignore it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return fail(err, err_len, e,
				    "guest file %s does not exist", path);
		return fail(err, err_len, e, "cannot open guest file %s: %s",
			    path, strerror(e));
	}
	ret = read_open_file(fd, path, buf, size, err, err_len);
	close(fd);
	return ret;
}
