// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Geometry files, workload specs, the trace format and lackey conversion:
 * good input parses to the expected values, bad input fails with a message
 * naming the culprit.
 */
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "tlbsim.h"

static void test_presets(void)
{
	struct tlbs_machine m;
	char err[256];
	int i, n = 0;

	for (i = 0; tlbs_preset_names[i]; i++, n++) {
		int rc = tlbs_machine_load(&m, tlbs_preset_names[i], err,
					   sizeof(err));

		CHECK(rc == 0, "preset %s: %s", tlbs_preset_names[i], err);
		if (!rc)
			tlbs_machine_free(&m);
	}
	CHECK_EQ(n, 4);
	CHECK_EQ(tlbs_machine_load(&m, "gs464v", err, sizeof(err)), 0);
	CHECK_EQ(m.base_shift, 14);
	CHECK_EQ(m.huge_shift, 25);
	CHECK_EQ(m.ngroups, 2);
	CHECK_EQ(m.g[0].entries, 64);
	CHECK_EQ(m.g[0].sets, 1);
	CHECK_EQ(m.g[1].entries, 2048);
	CHECK_EQ(m.g[1].ways, 8);
	CHECK_EQ(m.g[1].repl, TLBS_RANDOM);
	CHECK_EQ(m.path[TLBS_HUGE][0], 0);
	CHECK_EQ(m.path[TLBS_BASE][0], 1);
	CHECK_EQ(m.ctrl_huge_entries, 64);
	CHECK_EQ(m.ctrl_small_entries, 2048);
	CHECK_EQ(m.two_stage, TLBS_VZ);
	tlbs_machine_free(&m);
	CHECK_EQ(tlbs_machine_load(&m, "intel", err, sizeof(err)), 0);
	CHECK_EQ(m.pathlen[TLBS_BASE], 2);
	CHECK_EQ(m.two_stage, TLBS_COMBINED);
	tlbs_machine_free(&m);
	CHECK(tlbs_machine_load(&m, "nosuch", err, sizeof(err)) != 0,
	      "unknown preset");
	CHECK(strstr(err, "nosuch") && strstr(err, "gs464v"),
	      "message names it and lists presets: %s", err);
}

/* Parse @text; expect failure with @needle in the message. */
static void bad_geometry(const char *text, const char *needle)
{
	struct tlbs_machine m;
	char err[256] = "";

	CHECK(tlbs_machine_parse(&m, text, "geo", err, sizeof(err)) != 0,
	      "accepted: %s", text);
	CHECK(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err,
	      needle);
}

static void test_geometry_errors(void)
{
	const char *ok = "name x\nbase_page 4K\nhuge_page 2M\n"
			 "group T entries=64 ways=4 sizes=base,huge\n"
			 "access_ns 1\n";
	struct tlbs_machine m;
	char err[256], buf[512];

	CHECK_EQ(tlbs_machine_parse(&m, ok, "geo", err, sizeof(err)), 0);
	CHECK_EQ(m.pathlen[TLBS_BASE], 1);
	CHECK_EQ(m.pathlen[TLBS_HUGE], 1);
	CHECK_EQ(m.g[0].repl, TLBS_LRU);
	tlbs_machine_free(&m);
	bad_geometry("base_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=base,huge\n"
		     "access_ns 1\n", "'name' missing");
	snprintf(buf, sizeof(buf), "%sfrobnicate 3\n", ok);
	bad_geometry(buf, "unknown key 'frobnicate'");
	/* the line number counts blank and comment lines */
	bad_geometry("# a comment\n\nname x\n\nbogus 1\n",
		     "geo:5: unknown key 'bogus'");
	bad_geometry("name x\nbase_page 5K\n", "base_page '5K'");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=60 ways=8 sizes=base\n", "group T");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 replace=plru sizes=base\n",
		     "replace=plru");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=giant\n", "sizes=giant");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=base\npath huge U\n",
		     "no group 'U'");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=base\npath huge T\n",
		     "does not accept huge");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=base\naccess_ns 1\n",
		     "no group accepts huge");
	bad_geometry("name x\nbase_page 2M\nhuge_page 4K\n"
		     "group T entries=64 ways=4 sizes=base\n", "larger");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=base,huge\n"
		     "access_ns -3\n", "access_ns '-3'");
	bad_geometry("name x\nbase_page 4K\nhuge_page 2M\n"
		     "group T entries=64 ways=4 sizes=base,huge\n"
		     "two_stage magic\n", "two_stage 'magic'");
}

static void bad_workload(const char *spec, const char *needle)
{
	struct tlbs_workload w;
	char err[256] = "";

	CHECK(tlbs_workload_parse(&w, spec, 25, err, sizeof(err)) != 0,
	      "accepted %s", spec);
	CHECK(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err,
	      needle);
	tlbs_workload_free(&w);
}

static void test_workloads(void)
{
	struct tlbs_workload w;
	char err[256];
	u64 off[4096];
	u32 i, hot = 0, outside = 0;

	CHECK_EQ(tlbs_workload_parse(&w, "mcf", 25, err, sizeof(err)), 0);
	CHECK_EQ(w.size, 1600ULL << 20);
	CHECK_EQ(tlbs_workload_fill(&w, off, 4096), 4096);
	for (i = 0; i < 4096; i++)
		outside += off[i] >= w.size;
	CHECK_EQ(outside, 0);
	tlbs_workload_free(&w);

	CHECK_EQ(tlbs_workload_parse(&w, "seq:size=1M,stride=4096", 25, err,
				     sizeof(err)), 0);
	tlbs_workload_fill(&w, off, 300);
	CHECK_EQ(off[0], 0);
	CHECK_EQ(off[1], 4096);
	CHECK_EQ(off[256], 0);		/* wrapped at 1 MiB */
	tlbs_workload_free(&w);

	CHECK_EQ(tlbs_workload_parse(&w, "hotcold:size=1G,hot=1M,hot_frac=0.9",
				     25, err, sizeof(err)), 0);
	tlbs_workload_fill(&w, off, 4096);
	for (i = 0; i < 4096; i++)
		hot += off[i] < (1 << 20);
	CHECK(hot > 3500 && hot < 3900, "hot share %u/4096", hot);
	tlbs_workload_free(&w);

	/* the hot set moves by 1 MiB every 100 accesses, wrapping at 4 MiB */
	CHECK_EQ(tlbs_workload_parse(&w, "hotcold:size=4M,hot=1M,hot_frac=1,"
				     "hot_at=3M,drift=1M,drift_every=100",
				     25, err, sizeof(err)), 0);
	tlbs_workload_fill(&w, off, 300);
	for (i = 0; i < 100; i++)
		CHECK(off[i] >= (3 << 20) && off[i] < (4 << 20), "at %u", i);
	for (i = 100; i < 200; i++)
		CHECK(off[i] < (1 << 20), "wrapped, at %u: %llu", i,
		      (unsigned long long)off[i]);
	for (i = 200; i < 300; i++)
		CHECK(off[i] >= (1 << 20) && off[i] < (2 << 20), "at %u", i);
	CHECK_EQ(w.hot_at, 2 << 20);
	tlbs_workload_free(&w);
	/* a hot set across the end of the footprint wraps to its start */
	CHECK_EQ(tlbs_workload_parse(&w, "hotcold:size=4M,hot=2M,hot_frac=1,"
				     "hot_at=2M,drift=1M,drift_every=10",
				     25, err, sizeof(err)), 0);
	tlbs_workload_fill(&w, off, 4096);
	for (i = 10, hot = 0; i < 20; i++)
		hot += off[i] < (1 << 20);
	CHECK(hot > 0, "no access wrapped to the start");
	for (i = 0; i < 4096; i++)
		CHECK(off[i] < (4 << 20), "outside at %u", i);
	tlbs_workload_free(&w);

	CHECK_EQ(tlbs_workload_parse(&w, "phases:size=64M,period=100", 25, err,
				     sizeof(err)), 0);
	tlbs_workload_fill(&w, off, 300);
	/* accesses 100..199 are the sequential phase */
	CHECK_EQ(off[101] - off[100], 64);
	CHECK_EQ(off[150] - off[100], 50 * 64);
	tlbs_workload_free(&w);

	bad_workload("zipf:size=1G", "unknown kind 'zipf'");
	bad_workload("chase:size=lots", "size=lots");
	bad_workload("chase:size=1G,colour=red", "unknown key 'colour'");
	bad_workload("chase:size=1G,hot_frac=1.5", "hot_frac=1.5");
	bad_workload("hotcold:size=1G", "hot=BYTES");
	bad_workload("phases:size=1G", "period=N");
	bad_workload("chase:size=1G,drift=1M", "hotcold only");
	bad_workload("chase:size=1M,hot_pages=100,hot_page=16K", "hot_page");
	bad_workload("chase:size=64G,hot_pages=1,hot_page=8G", "up to 4G");
	bad_workload("chase:size=1G,hot_pages=10,hot_page=12K",
		     "power of two");
	bad_workload("trace:/nonexistent/x.trc", "/nonexistent/x.trc");
}

static void test_trace_roundtrip(void)
{
	char path[] = "/tmp/tlbsim-test-XXXXXX", gz[64], err[256];
	/* pages of 4 KiB: a heap near 0x5555..., a stack near 0x7ffd... */
	u64 addrs[] = { 0x555555554000ULL, 0x555555554010ULL,
			0x555555554ff8ULL, 0x555555555000ULL,
			0x7ffd00001000ULL, 0x555555554000ULL,
			0x555555554000ULL, 0x555557554000ULL };
	u64 acc, rec, out[32];
	struct tlbs_trace_writer *w;
	struct tlbs_trace_reader *t;
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "wb");
	gzFile z;
	u32 n, i;

	w = tlbs_trace_create(f, 12);
	for (i = 0; i < 8; i++)
		CHECK_EQ(tlbs_trace_put(w, addrs[i]), 0);
	CHECK_EQ(tlbs_trace_close(w, &acc, &rec), 0);
	fclose(f);
	CHECK_EQ(acc, 8);
	CHECK_EQ(rec, 5);	/* runs of 3 and 2 on one page: 1 record each */

	/* regions of 2 MiB: 0x5555554 region, 0x5555575 region, stack */
	t = tlbs_trace_open_regions(path, 21, err, sizeof(err));
	CHECK(t != NULL, "open: %s", err);
	if (!t)
		return;
	CHECK_EQ(tlbs_trace_accesses(t), 8);
	CHECK_EQ(tlbs_trace_span(t), 3ULL << 21);
	n = tlbs_trace_read(t, out, 32);
	CHECK_EQ(n, 8);
	/* packed in address order: heap region -> 0, next -> 2M, stack 4M */
	CHECK_EQ(out[0], 0x554000ULL & 0x1fffff);
	CHECK_EQ(out[1], out[0]);
	CHECK_EQ(out[3], out[0] + 4096);
	CHECK_EQ(out[4], (2ULL << 21) | (0x7ffd00001000ULL & 0x1fffff));
	CHECK_EQ(out[7], (1ULL << 21) | (0x555557554000ULL & 0x1fffff));
	CHECK_EQ(tlbs_trace_read(t, out, 32), 0);
	CHECK_EQ(tlbs_trace_rewind(t), 0);
	CHECK_EQ(tlbs_trace_read(t, out, 3), 3);
	tlbs_trace_free(t);

	/* the same bytes gzip-compressed read the same */
	snprintf(gz, sizeof(gz), "%s.gz", path);
	f = fopen(path, "rb");
	z = gzopen(gz, "wb");
	for (;;) {
		char b[256];
		size_t k = fread(b, 1, sizeof(b), f);

		if (!k)
			break;
		gzwrite(z, b, (unsigned)k);
	}
	fclose(f);
	gzclose(z);
	t = tlbs_trace_open_regions(gz, 21, err, sizeof(err));
	CHECK(t != NULL, "open gz: %s", err);
	if (t) {
		CHECK_EQ(tlbs_trace_read(t, out, 32), 8);
		CHECK_EQ(out[4], (2ULL << 21) | 0x1000);
		tlbs_trace_free(t);
	}
	unlink(gz);

	/* a file that is not a trace */
	f = fopen(path, "wb");
	fputs("hello world, not a trace\n", f);
	fclose(f);
	t = tlbs_trace_open_regions(path, 21, err, sizeof(err));
	CHECK(t == NULL && strstr(err, "not a tlbsim trace"), "err %s", err);
	unlink(path);
}

static void test_lackey(void)
{
	const char *log =
		"==123== Lackey, an example Valgrind tool\n"
		"I  04016d90,3\n"
		" L 1ffefffa40,8\n"
		" S 1ffefffa48,8\n"
		"I  04016d93,4\n"
		" M 0402bd18,4\n"
		" L 0402c000,8\n";
	char in_path[] = "/tmp/tlbsim-lk-XXXXXX", out_path[64], err[256];
	u64 acc, rec, out[8];
	struct tlbs_trace_reader *t;
	FILE *in, *out_f;
	int fd = mkstemp(in_path);

	in = fdopen(fd, "w+");
	fputs(log, in);
	rewind(in);
	snprintf(out_path, sizeof(out_path), "%s.trc", in_path);
	out_f = fopen(out_path, "wb");
	CHECK_EQ(tlbs_lackey_convert(in, out_f, 0, 0, 0, &acc, &rec), 0);
	fclose(out_f);
	CHECK_EQ(acc, 4);	/* data only: L, S, M, L */
	CHECK_EQ(rec, 3);	/* the L and S share a page */
	t = tlbs_trace_open_regions(out_path, 21, err, sizeof(err));
	CHECK(t != NULL, "%s", err);
	if (t) {
		CHECK_EQ(tlbs_trace_read(t, out, 8), 4);
		/* 0x0402bd18 and 0x0402c000: adjacent pages, one region */
		CHECK_EQ(out[3] - out[2], 0x1000);
		tlbs_trace_free(t);
	}
	rewind(in);
	out_f = fopen(out_path, "wb");
	CHECK_EQ(tlbs_lackey_convert(in, out_f, 0, 0, 1, &acc, &rec), 0);
	fclose(out_f);
	CHECK_EQ(acc, 6);	/* with instruction fetches */
	rewind(in);
	out_f = fopen(out_path, "wb");
	CHECK_EQ(tlbs_lackey_convert(in, out_f, 0, 2, 0, &acc, &rec), 0);
	fclose(out_f);
	CHECK_EQ(acc, 2);	/* --max */
	rewind(in);
	out_f = fopen(out_path, "wb");
	CHECK_EQ(tlbs_lackey_convert(in, out_f, 2, 1, 0, &acc, &rec), 0);
	fclose(out_f);
	CHECK_EQ(acc, 1);	/* --skip 2 --max 1: the M only */
	t = tlbs_trace_open_regions(out_path, 21, err, sizeof(err));
	CHECK(t != NULL, "%s", err);
	if (t) {
		CHECK_EQ(tlbs_trace_read(t, out, 8), 1);
		/* the M's page, 0x0402b000, at its offset in its region */
		CHECK_EQ(out[0], 0x2b000);
		tlbs_trace_free(t);
	}
	fclose(in);
	unlink(in_path);
	unlink(out_path);
}

int main(void)
{
	test_presets();
	test_geometry_errors();
	test_workloads();
	test_trace_roundtrip();
	test_lackey();
	return check_done("test_io");
}
