// SPDX-License-Identifier: MIT
/* cmdline.c: see cmdline.h. */
#include <lull_abi.h>

#include "cmdline.h"
#include "string.h"

static char line[LULL_CMDLINE_MAX];

void cmdline_init(const char *src)
{
	size_t i = 0;

	if (src)
		for (; i < sizeof(line) - 1 && src[i]; i++)
			line[i] = src[i];
	line[i] = '\0';
}

const char *cmdline(void)
{
	return line;
}

/* Start of the value of "key=" (or end of "key" for a bare word), or NULL. */
static const char *find(const char *key, bool want_value)
{
	size_t klen = strlen(key);
	const char *p = line;

	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!memcmp(p, key, klen)) {
			char c = p[klen];

			if (want_value && c == '=')
				return p + klen + 1;
			if (!want_value && (c == '\0' || c == ' ' || c == '=' ||
					    c == '\t'))
				return p + klen;
		}
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	return NULL;
}

uint64_t cmdline_u64(const char *key, uint64_t def)
{
	const char *p = find(key, true);
	unsigned base = 10;
	uint64_t v = 0;
	bool any = false;

	if (!p)
		return def;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	for (;; p++, any = true) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		v = v * base + d;
	}
	if (!any || (*p && *p != ' ' && *p != '\t'))
		return def;
	return v;
}

bool cmdline_has(const char *key)
{
	return find(key, false) != NULL;
}

bool cmdline_is(const char *key, const char *value)
{
	const char *p = find(key, true);
	size_t n = strlen(value);

	return p && !memcmp(p, value, n) &&
	       (p[n] == '\0' || p[n] == ' ' || p[n] == '\t');
}
