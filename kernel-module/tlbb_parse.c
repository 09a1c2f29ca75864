// SPDX-License-Identifier: GPL-2.0
/*
 * Parsing of what user space writes: numbers, ids, names and the lines of
 * the ranges and heat attributes (tlbb_configfs.c) and of the injection
 * file (tlbb_debugfs.c). Pure functions of their input: no VM, no lock.
 */
#include <linux/ctype.h>
#include <linux/kernel.h>
#include <linux/mm.h>
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

/* Parse one "<hva> <length> <gpa>" line; the line is modified. */
int tlbb_parse_range(char *line, struct tlbb_range *r)
{
	u64 v[3];
	char *tok;
	int i, ret;

	for (i = 0; i < 3; i++) {
		do {
			tok = strsep(&line, " \t");
		} while (tok && !*tok);
		if (!tok)
			return -EINVAL;
		ret = tlbb_parse_u64(tok, true, &v[i]);
		if (ret)
			return ret;
	}
	do {
		tok = strsep(&line, " \t");
	} while (tok && !*tok);
	if (tok)
		return -EINVAL;		/* a fourth field */

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
	char *tok;
	int i, ret;

	for (i = 0; i < 3; i++) {
		do {
			tok = strsep(&line, " \t");
		} while (tok && !*tok);
		if (!tok)
			return -EINVAL;
		ret = tlbb_parse_u64(tok, i < 2, &v[i]);
		if (ret)
			return ret;
	}
	do {
		tok = strsep(&line, " \t");
	} while (tok && !*tok);
	if (tok)
		return -EINVAL;		/* a fourth field */
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
