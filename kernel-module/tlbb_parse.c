// SPDX-License-Identifier: GPL-2.0
/*
 * Parsing of what user space writes: numbers, ids, names and the lines of
 * the ranges and heat attributes (tlbb_configfs.c) and of the injection
 * file (tlbb_debugfs.c). Pure functions of their input: no VM, no lock.
 */
#include <linux/ctype.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "tlbb.h"
#include "tlbb_compat.h"
#include "tlbb_parse.h"

/*
 * The one number parser of every attribute (and of the injection file):
 * decimal digits, or with @hex also "0x"/"0X" followed by hexadecimal
 * digits. Nothing else: no sign, no space, no second prefix ("0x0x1",
 * "0x+1", "+5", "-0" are all EINVAL). One trailing newline is allowed (the
 * number is a whole write: "echo 5 > file"). -ERANGE on overflow.
 */
int tlbb_parse_u64(const char *s, bool hex, u64 *val)
{
	unsigned int base = 10;
	size_t i, n;

	if (hex && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
	}
	n = strlen(s);
	if (n && s[n - 1] == '\n')
		n--;
	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (base == 16 ? !isxdigit(s[i]) : !isdigit(s[i]))
			return -EINVAL;
	return kstrtou64(s, base, val);
}

/* A decimal id (pid, tid) that fits an int. */
int tlbb_parse_id(const char *s, int *id)
{
	u64 v;
	int ret = tlbb_parse_u64(s, false, &v);

	if (ret)
		return ret;
	if (v > INT_MAX)
		return -ERANGE;
	*id = v;
	return 0;
}

int tlbb_range_cmp(const void *a, const void *b)
{
	const struct tlbb_range *x = a, *y = b;

	return x->hva < y->hva ? -1 : x->hva > y->hva;
}

/*
 * Split @line (modified) into exactly @n numbers, separated by blanks;
 * bit i of @hex_mask lets the i-th be written in hex. -EINVAL for a
 * missing or an extra field.
 */
static int tlbb_parse_fields(char *line, u64 *v, int n,
			     unsigned int hex_mask)
{
	char *tok;
	int i, ret;

	for (i = 0; i < n; i++) {
		do {
			tok = strsep(&line, " \t");
		} while (tok && !*tok);
		if (!tok)
			return -EINVAL;
		ret = tlbb_parse_u64(tok, hex_mask & (1U << i), &v[i]);
		if (ret)
			return ret;
	}
	do {
		tok = strsep(&line, " \t");
	} while (tok && !*tok);
	return tok ? -EINVAL : 0;	/* a field too many */
}

/* Parse one "<hva> <length> <gpa>" line; the line is modified. */
int tlbb_parse_range(char *line, struct tlbb_range *r)
{
	u64 v[3];
	int ret = tlbb_parse_fields(line, v, 3, 0x7);

	if (ret)
		return ret;
	if (!v[1] || !IS_ALIGNED(v[0], PAGE_SIZE) ||
	    !IS_ALIGNED(v[1], PAGE_SIZE) || !IS_ALIGNED(v[2], PAGE_SIZE))
		return -EINVAL;
	if (v[0] + v[1] < v[0] || v[2] + v[1] < v[2])
		return -ERANGE;
	if (v[0] + v[1] > TASK_SIZE_MAX)
		return -EFAULT;	/* a kernel address */
	r->hva = v[0];
	r->len = v[1];
	r->gpa = v[2];
	return 0;
}

/* Parse one "<hva> <length> <heat>" line; the line is modified. */
int tlbb_parse_heat(char *line, struct tlbb_heat_line *h)
{
	u64 v[3];
	int ret = tlbb_parse_fields(line, v, 3, 0x3);

	if (ret)
		return ret;
	if (!v[1])
		return -EINVAL;
	if (v[2] > U8_MAX || v[0] + v[1] < v[0] ||
	    v[0] + v[1] > TASK_SIZE_MAX)
		return -ERANGE;
	h->hva = v[0];
	h->len = v[1];
	h->heat = v[2];
	return 0;
}

/*
 * A VM name: [A-Za-z0-9._-]{1,NAME_MAX}, but not "." or ".." (which name
 * vms/ itself and the subsystem root in a path). Also the injection
 * file's names.
 */
bool tlbb_name_ok(const char *name)
{
	size_t i, len = strlen(name);

	if (!len || len > TLBB_NAME_MAX)
		return false;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum(name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

/*
 * Parse the non-blank lines of a store (@page, @len bytes) with @parse
 * into a new array of at most @max elements of @size bytes each: *@out
 * (the caller kfree()s it, also after an error) holding *@n of them.
 * -ENOMEM, -ERANGE for more than @max lines, or @parse's error.
 */
int tlbb_parse_lines(const char *page, size_t len, unsigned int max,
		     size_t size, int (*parse)(char *line, void *elem),
		     void **out, unsigned int *n)
{
	char *buf, *p, *line;
	u8 *a;
	int ret = 0;

	*n = 0;
	*out = a = kcalloc(max, size, GFP_KERNEL);
	buf = kmemdup_nul(page, len, GFP_KERNEL);
	if (!buf || !a) {
		kfree(buf);
		return -ENOMEM;
	}
	p = buf;
	while ((line = strsep(&p, "\n")) != NULL) {
		line = strim(line);
		if (!*line)
			continue;
		if (*n == max) {
			ret = -ERANGE;
			break;
		}
		ret = parse(line, a + *n * size);
		if (ret)
			break;
		(*n)++;
	}
	kfree(buf);
	return ret;
}
