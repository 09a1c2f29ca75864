// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Machines: TLB groups, page sizes and costs, read from a geometry file.
 * The presets are the files under tlbsim/presets/, embedded at build time;
 * docs/simulator.md describes the format.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tlbsim.h"

static int fail(char *err, size_t len, const char *origin, int line,
		const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, len, "%s:%d: ", origin, line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(err + n, len - n, fmt, ap);
	va_end(ap);
	return -1;
}

int tlbs_parse_size(const char *s, u64 *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'K': case 'k':
		v <<= 10; end++; break;
	case 'M': case 'm':
		v <<= 20; end++; break;
	case 'G': case 'g':
		v <<= 30; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int log2_exact(u64 v)
{
	int s = 0;

	if (!v || (v & (v - 1)))
		return -1;
	while ((1ULL << s) != v)
		s++;
	return s;
}

static int parse_classes(const char *s, u32 *out)
{
	char buf[64], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", s);
	*out = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "base"))
			*out |= 1u << TLBS_BASE;
		else if (!strcmp(tok, "huge"))
			*out |= 1u << TLBS_HUGE;
		else
			return -1;
	}
	return *out ? 0 : -1;
}

static int find_group(const struct tlbs_machine *m, const char *name)
{
	u32 i;

	for (i = 0; i < m->ngroups; i++)
		if (!strcmp(m->g[i].name, name))
			return (int)i;
	return -1;
}

static int parse_group(struct tlbs_machine *m, char *args, const char *origin,
		       int ln, char *err, size_t errlen)
{
	char *save, *tok, *name = strtok_r(args, " \t", &save);
	unsigned long entries = 0, ways = 0;
	enum tlbs_repl repl = TLBS_LRU;
	u32 classes = 0;

	if (!name || strlen(name) >= sizeof(m->g[0].name))
		return fail(err, errlen, origin, ln, "group needs a name "
			    "(at most 15 characters)");
	if (find_group(m, name) >= 0)
		return fail(err, errlen, origin, ln, "group %s defined twice",
			    name);
	if (m->ngroups == TLBS_MAX_GROUPS)
		return fail(err, errlen, origin, ln, "more than %d groups",
			    TLBS_MAX_GROUPS);
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *val = strchr(tok, '=');

		if (!val)
			return fail(err, errlen, origin, ln,
				    "group %s: '%s' is not key=value", name,
				    tok);
		*val++ = 0;
		if (!strcmp(tok, "entries")) {
			entries = strtoul(val, NULL, 10);
		} else if (!strcmp(tok, "ways")) {
			ways = strtoul(val, NULL, 10);
		} else if (!strcmp(tok, "replace")) {
			if (!strcmp(val, "lru"))
				repl = TLBS_LRU;
			else if (!strcmp(val, "fifo"))
				repl = TLBS_FIFO;
			else if (!strcmp(val, "random"))
				repl = TLBS_RANDOM;
			else
				return fail(err, errlen, origin, ln,
					    "group %s: replace=%s: use lru, "
					    "fifo or random", name, val);
		} else if (!strcmp(tok, "sizes")) {
			if (parse_classes(val, &classes))
				return fail(err, errlen, origin, ln,
					    "group %s: sizes=%s: use base, "
					    "huge or base,huge", name, val);
		} else {
			return fail(err, errlen, origin, ln,
				    "group %s: unknown key '%s'", name, tok);
		}
	}
	if (!entries || !ways || ways > entries || entries % ways ||
	    entries > (1u << 24))
		return fail(err, errlen, origin, ln, "group %s: entries=%lu "
			    "ways=%lu: need 1 <= ways <= entries, entries a "
			    "multiple of ways", name, entries, ways);
	if (!classes)
		return fail(err, errlen, origin, ln, "group %s: sizes= missing",
			    name);
	if (tlbs_group_init(&m->g[m->ngroups], name, entries, ways, repl,
			    classes))
		return fail(err, errlen, origin, ln, "group %s: %lu entries / "
			    "%lu ways: need a power-of-two number of sets and, "
			    "unless fully associative, at most 32 ways",
			    name, entries, ways);
	m->ngroups++;
	return 0;
}

static int parse_path(struct tlbs_machine *m, char *args, const char *origin,
		      int ln, char *err, size_t errlen)
{
	char *save, *tok, *cls = strtok_r(args, " \t", &save);
	u32 c, n = 0;
	int gi;

	if (!cls || (strcmp(cls, "base") && strcmp(cls, "huge")))
		return fail(err, errlen, origin, ln,
			    "path needs 'base' or 'huge' then group names");
	c = strcmp(cls, "base") ? TLBS_HUGE : TLBS_BASE;
	while ((tok = strtok_r(NULL, " \t", &save))) {
		gi = find_group(m, tok);
		if (gi < 0)
			return fail(err, errlen, origin, ln,
				    "path %s: no group '%s' defined above",
				    cls, tok);
		if (!(m->g[gi].classes & (1u << c)))
			return fail(err, errlen, origin, ln, "path %s: group "
				    "%s does not accept %s pages", cls, tok,
				    cls);
		if (n == TLBS_MAX_PATH)
			return fail(err, errlen, origin, ln,
				    "path %s: more than %d groups", cls,
				    TLBS_MAX_PATH);
		m->path[c][n++] = (u32)gi;
	}
	if (!n)
		return fail(err, errlen, origin, ln, "path %s: no groups", cls);
	m->pathlen[c] = n;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || *out < 0) ? -1 : 0;
}

/* The cost-model field a geometry key names, or NULL. */
static double *cost_field(struct tlbs_machine *m, const char *key)
{
	if (!strcmp(key, "access_ns"))
		return &m->access_ns;
	if (!strcmp(key, "refill_ns"))
		return &m->refill_ns;
	if (!strcmp(key, "l1_miss_ns"))
		return &m->l1_miss_ns;
	if (!strcmp(key, "guest_refill_ns"))
		return &m->guest_refill_ns;
	if (!strcmp(key, "host_refill_ns"))
		return &m->host_refill_ns;
	if (!strcmp(key, "huge_refill_ns"))
		return &m->huge_refill_ns;
	return NULL;
}

int tlbs_machine_parse(struct tlbs_machine *m, const char *text,
		       const char *origin, char *err, size_t errlen)
{
	char *copy = strdup(text), *line, *next;
	int ln = 0, rc = 0, s;
	u32 c, i;
	u64 v;

	memset(m, 0, sizeof(*m));
	m->guest_refill_ns = m->host_refill_ns = m->huge_refill_ns = -1;
	m->two_stage = TLBS_VZ;
	if (!copy)
		return fail(err, errlen, origin, 0, "out of memory");
	for (line = copy; line && !rc; line = next) {
		char *key, *args, *p;

		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ln++;
		p = strchr(line, '#');
		if (p)
			*p = 0;
		key = line + strspn(line, " \t");
		if (!*key)
			continue;
		args = key + strcspn(key, " \t");
		if (*args)
			*args++ = 0;
		args += strspn(args, " \t");
		for (p = args + strlen(args); p > args && (p[-1] == ' ' ||
		     p[-1] == '\t' || p[-1] == '\r'); p--)
			p[-1] = 0;

		if (!strcmp(key, "name")) {
			snprintf(m->name, sizeof(m->name), "%s", args);
		} else if (!strcmp(key, "description")) {
			snprintf(m->description, sizeof(m->description), "%s",
				 args);
		} else if (!strcmp(key, "base_page") ||
			   !strcmp(key, "huge_page")) {
			if (tlbs_parse_size(args, &v))
				v = 0;
			s = log2_exact(v);
			if (s < 12 || s > 40)
				rc = fail(err, errlen, origin, ln, "%s '%s': "
					  "need a power of two from 4K to 1T",
					  key, args);
			else if (key[0] == 'b')
				m->base_shift = (u32)s;
			else
				m->huge_shift = (u32)s;
		} else if (!strcmp(key, "group")) {
			rc = parse_group(m, args, origin, ln, err, errlen);
		} else if (!strcmp(key, "path")) {
			rc = parse_path(m, args, origin, ln, err, errlen);
		} else if (cost_field(m, key)) {
			double d;

			if (parse_double(args, &d))
				rc = fail(err, errlen, origin, ln,
					  "%s '%s': need a number >= 0", key,
					  args);
			else
				*cost_field(m, key) = d;
		} else if (!strcmp(key, "two_stage")) {
			if (!strcmp(args, "vz"))
				m->two_stage = TLBS_VZ;
			else if (!strcmp(args, "combined"))
				m->two_stage = TLBS_COMBINED;
			else
				rc = fail(err, errlen, origin, ln, "two_stage "
					  "'%s': use vz or combined", args);
		} else if (!strcmp(key, "ctrl_huge_entries") ||
			   !strcmp(key, "ctrl_small_entries")) {
			v = strtoull(args, &p, 10);
			if (!v || *p)
				rc = fail(err, errlen, origin, ln,
					  "%s '%s': need a positive integer",
					  key, args);
			else if (key[5] == 'h')
				m->ctrl_huge_entries = v;
			else
				m->ctrl_small_entries = v;
		} else {
			rc = fail(err, errlen, origin, ln, "unknown key '%s'",
				  key);
		}
	}
	free(copy);
	if (rc)
		goto bad;
	rc = -1;
	if (!m->name[0]) {
		fail(err, errlen, origin, ln, "'name' missing");
		goto bad;
	}
	if (!m->base_shift || !m->huge_shift ||
	    m->huge_shift <= m->base_shift) {
		fail(err, errlen, origin, ln, "need base_page and a larger "
		     "huge_page");
		goto bad;
	}
	if (!m->ngroups) {
		fail(err, errlen, origin, ln, "no group defined");
		goto bad;
	}
	for (c = 0; c < TLBS_NCLASS; c++) {
		if (m->pathlen[c])
			continue;
		/* default path: every group accepting the class, in order */
		for (i = 0; i < m->ngroups && m->pathlen[c] < TLBS_MAX_PATH;
		     i++)
			if (m->g[i].classes & (1u << c))
				m->path[c][m->pathlen[c]++] = i;
		if (!m->pathlen[c]) {
			fail(err, errlen, origin, ln, "no group accepts %s "
			     "pages", c ? "huge" : "base");
			goto bad;
		}
	}
	if (!m->ctrl_huge_entries)
		m->ctrl_huge_entries =
			m->g[m->path[TLBS_HUGE][m->pathlen[TLBS_HUGE] - 1]]
			.entries;
	if (!m->ctrl_small_entries)
		m->ctrl_small_entries =
			m->g[m->path[TLBS_BASE][m->pathlen[TLBS_BASE] - 1]]
			.entries;
	if (m->access_ns <= 0) {
		fail(err, errlen, origin, ln, "access_ns must be > 0");
		goto bad;
	}
	if (m->guest_refill_ns < 0)
		m->guest_refill_ns = m->refill_ns;
	if (m->host_refill_ns < 0)
		m->host_refill_ns = m->refill_ns;
	if (m->huge_refill_ns < 0)
		m->huge_refill_ns = m->refill_ns;
	return 0;
bad:
	tlbs_machine_free(m);
	return -1;
}

int tlbs_machine_load(struct tlbs_machine *m, const char *name_or_path,
		      char *err, size_t errlen)
{
	char known[256] = "";
	FILE *f;
	char *text;
	long len;
	int i, rc;

	for (i = 0; tlbs_preset_names[i]; i++) {
		if (!strcmp(tlbs_preset_names[i], name_or_path))
			return tlbs_machine_parse(m, tlbs_preset_texts[i],
						  name_or_path, err, errlen);
		strncat(known, i ? ", " : "", sizeof(known) - strlen(known) - 1);
		strncat(known, tlbs_preset_names[i],
			sizeof(known) - strlen(known) - 1);
	}
	f = fopen(name_or_path, "r");
	if (!f) {
		snprintf(err, errlen, "machine '%s': no such preset (known: %s) "
			 "and no such geometry file", name_or_path, known);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	text = calloc(1, len + 1);
	if (!text || fread(text, 1, len, f) != (size_t)len) {
		fclose(f);
		free(text);
		snprintf(err, errlen, "%s: cannot read", name_or_path);
		return -1;
	}
	fclose(f);
	rc = tlbs_machine_parse(m, text, name_or_path, err, errlen);
	free(text);
	return rc;
}

void tlbs_machine_free(struct tlbs_machine *m)
{
	u32 i;

	for (i = 0; i < TLBS_MAX_GROUPS; i++)
		tlbs_group_free(&m->g[i]);
	m->ngroups = 0;
}

void tlbs_machine_reset_stats(struct tlbs_machine *m)
{
	u32 i;

	for (i = 0; i < m->ngroups; i++) {
		m->g[i].hits = m->g[i].misses = 0;
		m->g[i].fills = m->g[i].invalidations = 0;
	}
}
