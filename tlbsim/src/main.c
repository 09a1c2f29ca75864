// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * tlbsim: the command-line tool.
 *
 *   tlbsim run [options]          one run; prints its summary as JSON
 *   tlbsim presets                the built-in machine names
 *   tlbsim preset NAME            a preset's geometry file
 *   tlbsim version                controller source and its SHA-256
 *   tlbsim lackey2trace [--skip N] [--max N] [--instr]   lackey log -> trace
 *   tlbsim trace-info FILE        accesses, records, regions of a trace
 *   tlbsim trace-regions [--shift S] FILE   accesses per region
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: tlbsim run [--machine NAME|FILE] [--workload SPEC]\n"
"                  [--model native|vz|combined] [--thp-guest 0|1]\n"
"                  [--thp-host 0|1] [--hva-offset BYTES]\n"
"                  (--model default: the machine's two_stage)\n"
"                  [--controller off|monitor|balance] [--param NAME=VALUE]\n"
"                  [--accesses N] [--seconds S]\n"
"                  [--split-order high|low|random|heat] [--series FILE.csv]\n"
"                  [--huge-limit N] (host huge pages held, no controller)\n"
"                  [--huge-limit-at SECONDS] (held from then on, not from\n"
"                  the start: the pages fault in huge, then are split)\n"
"                  [--access-ns NS] [--refill-ns NS] (override the machine)\n"
"       tlbsim presets | preset NAME | version\n"
"       tlbsim lackey2trace [--skip N] [--max N] [--instr]\n"
"                  < lackey.log > out.trc\n"
"       tlbsim trace-info FILE\n"
"       tlbsim trace-regions [--shift S] FILE (default S 25: 32 MiB)\n"
"Workload SPECs: mcf, chase:size=1600M[,hot_pages=N,hot_frac=F],\n"
"  seq:size=S[,stride=B], hotcold:size=S,hot=H[,hot_frac=F],\n"
"  phases:size=S,period=N, trace:PATH (see docs/simulator.md)\n");
}

static int parse_count(const char *opt, const char *s, u64 *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	switch (*end) {
	case 'K': case 'k':
		v *= 1e3; end++; break;
	case 'M': case 'm':
		v *= 1e6; end++; break;
	case 'G': case 'g':
		v *= 1e9; end++; break;
	}
	if (errno || end == s || *end || v < 0 || v > 1e18) {
		fprintf(stderr, "tlbsim: %s '%s': need a count like 300M\n",
			opt, s);
		return -1;
	}
	*out = (u64)v;
	return 0;
}

static int parse_bool(const char *opt, const char *s, int *out)
{
	if (!strcmp(s, "1") || !strcmp(s, "on") || !strcmp(s, "yes"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcmp(s, "off") || !strcmp(s, "no"))
		*out = 0;
	else {
		fprintf(stderr, "tlbsim: %s '%s': use 0 or 1\n", opt, s);
		return -1;
	}
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "machine", required_argument, NULL, 'm' },
		{ "workload", required_argument, NULL, 'w' },
		{ "model", required_argument, NULL, 'M' },
		{ "thp-guest", required_argument, NULL, 'g' },
		{ "thp-host", required_argument, NULL, 'h' },
		{ "hva-offset", required_argument, NULL, 'o' },
		{ "controller", required_argument, NULL, 'c' },
		{ "param", required_argument, NULL, 'p' },
		{ "accesses", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "split-order", required_argument, NULL, 'S' },
		{ "series", required_argument, NULL, 'T' },
		{ "access-ns", required_argument, NULL, 'A' },
		{ "refill-ns", required_argument, NULL, 'R' },
		{ "huge-limit", required_argument, NULL, 'L' },
		{ "huge-limit-at", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	const char *machine = "gs464v", *workload = "mcf", *series = NULL;
	const char *model = NULL, *ctrl = "off", *split = NULL;
	const char *params[64];
	int nparams = 0, thp1 = 1, thp2 = 1, opt, i, rc = 1;
	u64 accesses = 0, hva = 0, fixed_limit = ~0ULL;
	double seconds = 0, access_ns = 0, refill_ns = -1, limit_at = 0;
	struct tlbs_machine m;
	struct tlbs_workload w;
	struct tlbs_run r;
	char err[512];
	char *end;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'm': machine = optarg; break;
		case 'w': workload = optarg; break;
		case 'M': model = optarg; break;
		case 'g':
			if (parse_bool("--thp-guest", optarg, &thp1))
				return 2;
			break;
		case 'h':
			if (parse_bool("--thp-host", optarg, &thp2))
				return 2;
			break;
		case 'o':
			errno = 0;
			hva = strtoull(optarg, &end, 0);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "tlbsim: --hva-offset '%s': "
					"need bytes\n", optarg);
				return 2;
			}
			break;
		case 'c': ctrl = optarg; break;
		case 'L':
			errno = 0;
			fixed_limit = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-') {
				fprintf(stderr, "tlbsim: --huge-limit '%s': "
					"need a number of huge pages\n",
					optarg);
				return 2;
			}
			break;
		case 'l':
			limit_at = strtod(optarg, &end);
			if (*end || !*optarg || limit_at < 0) {
				fprintf(stderr, "tlbsim: --huge-limit-at '%s': "
					"need seconds >= 0\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (nparams == 64) {
				fprintf(stderr, "tlbsim: too many --param\n");
				return 2;
			}
			params[nparams++] = optarg;
			break;
		case 'n':
			if (parse_count("--accesses", optarg, &accesses))
				return 2;
			break;
		case 's':
			seconds = strtod(optarg, &end);
			if (*end || seconds <= 0) {
				fprintf(stderr, "tlbsim: --seconds '%s': need "
					"a positive number\n", optarg);
				return 2;
			}
			break;
		case 'A':
		case 'R': {
			double v = strtod(optarg, &end);

			if (*end || !*optarg || v < 0 || (opt == 'A' && !v)) {
				fprintf(stderr, "tlbsim: --%s '%s': need a "
					"number of ns%s\n", opt == 'A' ?
					"access-ns" : "refill-ns", optarg,
					opt == 'A' ? " > 0" : " >= 0");
				return 2;
			}
			if (opt == 'A')
				access_ns = v;
			else
				refill_ns = v;
			break;
		}
		case 'S': split = optarg; break;
		case 'T': series = optarg; break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "tlbsim: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	if (tlbs_machine_load(&m, machine, err, sizeof(err))) {
		fprintf(stderr, "tlbsim: %s\n", err);
		return 2;
	}
	if (access_ns > 0)
		m.access_ns = access_ns;	/* 1 / access rate */
	if (refill_ns >= 0)	/* one cost for every refill */
		m.refill_ns = m.guest_refill_ns = m.host_refill_ns =
			m.huge_refill_ns = refill_ns;
	if (tlbs_workload_parse(&w, workload, m.huge_shift, err,
				sizeof(err))) {
		fprintf(stderr, "tlbsim: %s\n", err);
		tlbs_machine_free(&m);
		return 2;
	}
	tlbs_run_defaults(&r, &m, &w);
	r.thp1 = thp1;
	r.thp2 = thp2;
	r.hva_offset = hva;
	r.max_accesses = accesses;
	r.max_seconds = seconds;
	if (!accesses && !seconds)
		r.max_accesses = w.trace ? tlbs_trace_accesses(w.trace)
					 : 100000000ULL;
	if (!model)
		r.model = (enum tlbs_model)m.two_stage;
	else if (!strcmp(model, "native"))
		r.model = TLBS_NATIVE;
	else if (!strcmp(model, "vz"))
		r.model = TLBS_VZ;
	else if (!strcmp(model, "combined"))
		r.model = TLBS_COMBINED;
	else {
		fprintf(stderr, "tlbsim: --model '%s': use native, vz or "
			"combined\n", model);
		goto out;
	}
	if (!strcmp(ctrl, "off"))
		r.ctrl = TLBS_CTRL_OFF;
	else if (!strcmp(ctrl, "monitor"))
		r.ctrl = TLBS_CTRL_MONITOR;
	else if (!strcmp(ctrl, "balance"))
		r.ctrl = TLBS_CTRL_BALANCE;
	else {
		fprintf(stderr, "tlbsim: --controller '%s': use off, monitor "
			"or balance\n", ctrl);
		goto out;
	}
	if (r.ctrl != TLBS_CTRL_OFF && r.model == TLBS_NATIVE) {
		fprintf(stderr, "tlbsim: --controller needs a VM model (vz or "
			"combined): it limits the host's huge pages\n");
		goto out;
	}
	r.fixed_limit = fixed_limit;
	r.fixed_limit_at_s = limit_at;
	if (split && tlbs_split_order_parse(split, &r.split_order)) {
		fprintf(stderr, "tlbsim: --split-order '%s': use high "
			"(address), low, random or heat\n", split);
		goto out;
	}
	for (i = 0; i < nparams; i++) {
		char name[64], *eq = strchr(params[i], '=');

		if (!eq || eq - params[i] >= (long)sizeof(name)) {
			fprintf(stderr, "tlbsim: --param '%s': use NAME=VALUE\n",
				params[i]);
			goto out;
		}
		memcpy(name, params[i], eq - params[i]);
		name[eq - params[i]] = 0;
		if (tlbs_run_set_param(&r, name, eq + 1, err, sizeof(err))) {
			fprintf(stderr, "tlbsim: %s\n", err);
			goto out;
		}
	}
	/* the module's tunable as the method reads it (tlbb_split_order()),
	 * unless --split-order says otherwise */
	if (!split)
		r.split_order = tlbs_split_order_of_param(tlbb_split_order(&r.p));
	if (series) {
		r.series = fopen(series, "w");
		if (!r.series) {
			fprintf(stderr, "tlbsim: --series %s: %s\n", series,
				strerror(errno));
			goto out;
		}
	}
	if (tlbs_run_exec(&r, err, sizeof(err))) {
		fprintf(stderr, "tlbsim: %s\n", err);
		goto out;
	}
	tlbs_run_json(&r, stdout);
	rc = 0;
out:
	if (r.series)
		fclose(r.series);
	tlbs_run_free(&r);
	tlbs_workload_free(&w);
	tlbs_machine_free(&m);
	return rc ? 2 : 0;
}

static int cmd_lackey(int argc, char **argv)
{
	u64 skip = 0, max = 0, acc = 0, rec = 0;
	int i, instr = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--instr")) {
			instr = 1;
		} else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
			if (parse_count("--max", argv[++i], &max))
				return 2;
		} else if (!strcmp(argv[i], "--skip") && i + 1 < argc) {
			if (parse_count("--skip", argv[++i], &skip))
				return 2;
		} else {
			fprintf(stderr, "tlbsim lackey2trace: unexpected '%s'\n",
				argv[i]);
			return 2;
		}
	}
	if (tlbs_lackey_convert(stdin, stdout, skip, max, instr, &acc, &rec)) {
		fprintf(stderr, "tlbsim lackey2trace: write failed\n");
		return 1;
	}
	fprintf(stderr, "tlbsim lackey2trace: %llu accesses, %llu records\n",
		(unsigned long long)acc, (unsigned long long)rec);
	return acc ? 0 : 1;
}

static int cmd_trace_info(const char *path)
{
	char err[512];
	struct tlbs_trace_reader *t = tlbs_trace_open(path, err, sizeof(err));

	if (!t) {
		fprintf(stderr, "tlbsim: %s\n", err);
		return 2;
	}
	printf("{\"path\": \"%s\", \"accesses\": %llu, "
	       "\"span_2m_bytes\": %llu}\n", path,
	       (unsigned long long)tlbs_trace_accesses(t),
	       (unsigned long long)tlbs_trace_span(t));
	tlbs_trace_free(t);
	return 0;
}

static int cmd_trace_regions(int argc, char **argv)
{
	char err[512], *end;
	unsigned long shift = 25;

	if (argc == 4 && !strcmp(argv[1], "--shift")) {
		errno = 0;
		shift = strtoul(argv[2], &end, 10);
		if (errno || *end || !*argv[2] || shift > 40) {
			fprintf(stderr, "tlbsim: --shift '%s': need 9..40\n",
				argv[2]);
			return 2;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (tlbs_trace_regions(argv[1], (u32)shift, stdout, err,
			       sizeof(err))) {
		fprintf(stderr, "tlbsim: %s\n", err);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "presets")) {
		for (i = 0; tlbs_preset_names[i]; i++)
			printf("%s\n", tlbs_preset_names[i]);
		return 0;
	}
	if (!strcmp(argv[1], "preset") && argc == 3) {
		for (i = 0; tlbs_preset_names[i]; i++)
			if (!strcmp(tlbs_preset_names[i], argv[2])) {
				fputs(tlbs_preset_texts[i], stdout);
				return 0;
			}
		fprintf(stderr, "tlbsim: no preset '%s'\n", argv[2]);
		return 2;
	}
	if (!strcmp(argv[1], "version")) {
		printf("{\"ctrl_source\": \"%s\", \"ctrl_sha256\": \"%s\"}\n",
		       tlbs_ctrl_source, tlbs_ctrl_sha256);
		return 0;
	}
	if (!strcmp(argv[1], "lackey2trace"))
		return cmd_lackey(argc - 1, argv + 1);
	if (!strcmp(argv[1], "trace-info") && argc == 3)
		return cmd_trace_info(argv[2]);
	if (!strcmp(argv[1], "trace-regions"))
		return cmd_trace_regions(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
