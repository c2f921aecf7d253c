// SPDX-License-Identifier: MIT
/*
 * Reading the guest image: one whole regular file into one malloc'd buffer,
 * with a sentence for every way that can fail. The sentences leave out the
 * path because the caller prefixes it ("guest.elf: no such file"). The
 * loader then works on bytes only (pvh.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/errmsg.h"
#include "loader/guest_file.h"

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

static int read_all(int fd, uint8_t *buf, size_t size, char *err,
		    size_t err_len)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errmsg(err, err_len, errno, "cannot read it: %s",
				      strerror(errno));
		if (n == 0)
			return errmsg(
				err, err_len, EIO,
				"the file shrank while it was being read");
		got += n;
	}
	return 0;
}

static int read_open_file(int fd, void **buf, size_t *size, char *err,
			  size_t err_len)
{
	struct stat st;
	void *data;
	int ret;

	if (fstat(fd, &st) < 0)
		return errmsg(err, err_len, errno, "cannot stat it: %s",
			      strerror(errno));
	if (!S_ISREG(st.st_mode))
		return errmsg(err, err_len, EINVAL,
			      "not a regular file (it is a %s)",
			      file_kind(st.st_mode));
	if (st.st_size == 0) {
		char byte;

		/* /proc and /sys files say 0 whatever they hold */
		if (read(fd, &byte, 1) > 0)
			return errmsg(err, err_len, EINVAL,
				      "its size reads 0 but it has content (a /proc or /sys file?): not a guest image");
		return errmsg(err, err_len, EINVAL, "the file is empty");
	}
	if ((unsigned long long)st.st_size > GUEST_FILE_MAX_SIZE)
		return errmsg(
			err, err_len, EFBIG,
			"%lld bytes is too large: lull refuses guest images over 1 GiB",
			(long long)st.st_size);

	data = malloc(st.st_size);
	if (!data)
		return errmsg(err, err_len, ENOMEM,
			      "cannot allocate %lld bytes to read it",
			      (long long)st.st_size);
	ret = read_all(fd, data, st.st_size, err, err_len);
	if (ret) {
		free(data);
		return ret;
	}
	*buf = data;
	*size = st.st_size;
	return 0;
}

int guest_file_read(const char *path, void **buf, size_t *size, char *err,
		    size_t err_len)
{
	int fd, ret;

	/* O_NONBLOCK: opening a FIFO must not hang; regular files ignore it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return errmsg(err, err_len, e, "no such file");
		return errmsg(err, err_len, e, "cannot open it: %s",
			      strerror(e));
	}
	ret = read_open_file(fd, buf, size, err, err_len);
	close(fd);
	return ret;
}
