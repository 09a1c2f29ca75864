/* SPDX-License-Identifier: GPL-2.0 */
/* tlbb_parse.c: parsing of what user space writes. */
#ifndef TLBB_PARSE_H
#define TLBB_PARSE_H

int tlbb_parse_u64(const char *s, bool hex, u64 *val);
int tlbb_parse_id(const char *s, int *id);
int tlbb_range_cmp(const void *a, const void *b);
int tlbb_parse_range(char *line, struct tlbb_range *r);
int tlbb_parse_heat(char *line, struct tlbb_heat_line *h);
int tlbb_parse_lines(const char *page, size_t len, unsigned int max,
		     size_t size, int (*parse)(char *line, void *elem),
		     void **out, unsigned int *n);
bool tlbb_name_ok(const char *name);

#endif /* TLBB_PARSE_H */
