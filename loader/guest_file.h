/* SPDX-License-Identifier: MIT */
/*
 * Reading a guest file (the kernel image, an initrd) from the host: the
 * one part of the loader that touches the host's files. Everything after
 * it works on the bytes it returns.
 */
#ifndef LULL_GUEST_FILE_H
#define LULL_GUEST_FILE_H

#include <stddef.h>

/*
 * Reads a whole regular file into a malloc'd buffer the caller frees.
 * Refuses missing, unreadable, non-regular, empty and
 * larger-than-GUEST_FILE_MAX_SIZE files with errno from the failing call
 * (-ENOENT, -EACCES, ...), -EINVAL (not regular, empty) or -EFBIG. The
 * sentence in err does not repeat the path: print "<path>: <err>".
 */
#define GUEST_FILE_MAX_SIZE (1ull << 30)

int guest_file_read(const char *path, void **buf, size_t *size, char *err,
		    size_t err_len);

#endif
