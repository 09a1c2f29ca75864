#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
"""Check that the unit tests can fail: break tlbb_ctrl.c on purpose.

Each mutant changes one decision of the method (a comparison, a rounding, a
branch of the state machine) in a copy of kernel-module/core in a temporary
folder, builds it and runs the unit tests there. A mutant the tests do not
kill shows a behaviour no test pins down. Prints one line per mutant and
"N killed, N survived"; exits non-zero if any survived.

Usage: python3 tests/mutants.py   (from kernel-module/core; `make mutants`)
"""

import os
import shutil
import subprocess
import sys
import tempfile

# (what to find in tlbb_ctrl.c, exactly once; what to put instead)
MUTANTS = [
    ('c->y_milli <= c->p.imbalance_threshold * 1000 ||',
     'c->y_milli < c->p.imbalance_threshold * 1000 ||'),
    ('c->load_pm_milli <= c->p.load_threshold_pm * 1000',
     'c->load_pm_milli < c->p.load_threshold_pm * 1000'),
    ('(c->run_dir != TLBB_G_NONE && g != c->run_dir)', '0'),
    ('if (c->load_count >= trig)', 'if (0)'),
    ('return (ms + iv - 1) / iv;', 'return ms / iv;'),
    ('u64 ms = p->method != TLBB_METHOD_PAPER ? p->hill_sustain_ms :',
     'u64 ms = 0 ? p->hill_sustain_ms :'),
    # method hill
    ('if (c->p.method == TLBB_METHOD_HILL)\n\t\tdec', 'if (0)\n\t\tdec'),
    ('c->hill_best_cost * (1000 - c->p.hill_gain_pm)) {',
     'c->hill_best_cost * 1000) {'),
    ('if (c->cost * 1000 <', 'if (c->cost * 1000 <='),
    ('c->hill_step >>= 1;\n\t\t\tif (!c->hill_step)\n'
     '\t\t\t\treturn tlbb_hill_hold',
     'c->hill_step = 0;\n\t\t\tif (!c->hill_step)\n'
     '\t\t\t\treturn tlbb_hill_hold'),
    ('if (held && dist * 1000 <= held * c->p.hill_retry_pm) {',
     'if (held && dist * 1000 < held * c->p.hill_retry_pm) {'),
    ('dist = c->cost > held ? c->cost - held : held - c->cost;',
     'dist = c->cost - held;'),
    ('c->hill_best_limit = tlbb_min(c->limit, huge_in_use);',
     'c->hill_best_limit = c->limit;'),
    ('if (c->hill_best_limit < tlbb_floor(c))', 'if (0)'),
    ('} else if (huge_in_use < c->limit) {', '} else if (0) {'),
    ('if (!c->hill_step)\n\t\tc->hill_step = 1;', ''),
    ('if (target >= base)\t\t/* at the floor */', 'if (target > base)'),
    ('c->hill_held_cost = c->hill_best_cost;', 'c->hill_held_cost = 0;'),
    ('c->hill_step = 0;\t/* a search ends; its limit holds */', ''),
    ('c->win_cost += tlbb_min(in->refills_huge, TLBB_REFILLS_MAX) +',
     'c->win_cost += 0 * tlbb_min(in->refills_huge, TLBB_REFILLS_MAX) +'),
    ('c->cost = c->win_cost / c->nsamples;',
     'c->cost = c->win_cost / (c->nsamples + 1);'),
    ('c->y_milli <= c->p.imbalance_threshold * 1000)\n\t\treturn tlbb_hill_hold',
     'c->y_milli < c->p.imbalance_threshold * 1000)\n\t\treturn tlbb_hill_hold'),
    ('u64 base = tlbb_min(c->limit, huge_in_use);',
     'u64 base = c->limit + 0 * huge_in_use;'),
    ('\tif (huge_in_use < c->limit) {', '\tif (huge_in_use + 1 < c->limit) {'),
    ('c->limit += tlbb_min(room, c->p.step_pages);',
     'c->limit += c->p.step_pages;'),
    ('else if (g != c->win_group)', 'else if (0)'),
    ('c->y_milli = sum / c->nsamples;',
     'c->y_milli = sum / (c->nsamples + 1);'),
    ('if (c->load_count < trig) {', 'if (c->load_count + 1 < trig) {'),
    ('fh = fh >> 1 | fh_hi << 63;', 'fh = fh >> 1;'),
    ('refills = refills >> 1 | 1ULL << 63;', 'refills = ~0ULL;'),
    ('\n\tif (target < tlbb_floor(c))', '\n\tif (0)'),
    ('\t\tif (target < tlbb_floor(c))', '\t\tif (0)'),
    ('if (target >= c->limit) {', 'if (target > c->limit) {'),
    ('c->state = c->load_count ? TLBB_ST_SUSTAIN : TLBB_ST_IDLE;',
     'c->state = TLBB_ST_IDLE;'),
    ('if (fh == fs) {', 'if (0) {'),
    ('if (!c->monitor_only && c->limit < tlbb_floor(c)) {', 'if (0) {'),
    ('if (!room) {', 'if (room < 1 && 0) {'),
    ('(in->nr_vcpus ? in->nr_vcpus : 1)', 'in->nr_vcpus'),
    ('if (c->load_count > c->trigger)\n\t\tc->load_count = c->trigger;',
     ''),
    ('return tlbb_min(prod / d, cap);', 'return prod / d;'),
    ('if (c->nsamples < c->p.samples && c->nsamples < TLBB_MAX_SAMPLES &&',
     'if (c->nsamples < c->p.samples &&'),
    # method safe
    ('c->p.cost_small_ns;', 'c->p.cost_huge_ns;'),
    ('return tlbb_safe_next(c, true);\t/* undo */',
     'return tlbb_safe_next(c, false);'),
    ('!tlbb_safe_clearly_worse(c))', '1)'),
    ('c->safe_probe * 2;', 'c->safe_probe;'),
    ('if (c->safe_phase == TLBB_SAFE_SEARCH)\n\t\t\tact',
     'if (0)\n\t\t\tact'),
    ('if (dist > tlbb_mul_div_cap(held, c->p.hill_retry_pm, 1000,',
     'if (0 && dist > tlbb_mul_div_cap(held, c->p.hill_retry_pm, 1000,'),
]


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = open(os.path.join(here, 'tlbb_ctrl.c')).read()
    killed = survived = 0
    with tempfile.TemporaryDirectory(prefix='tlbb-mutants-') as tmp:
        work = os.path.join(tmp, 'core')
        shutil.copytree(here, work,
                        ignore=shutil.ignore_patterns('build', '*.o'))
        for old, new in MUTANTS:
            if src.count(old) != 1:
                print('stale mutant (found %d times): %r'
                      % (src.count(old), old))
                return 2
            with open(os.path.join(work, 'tlbb_ctrl.c'), 'w') as f:
                f.write(src.replace(old, new))
            try:
                r = subprocess.run(['make', '-s', '-C', work, 'test-unit'],
                                   capture_output=True, text=True,
                                   timeout=120)
                dead = r.returncode != 0
                out = (r.stdout.strip().splitlines() or ['(no output)'])[-1]
            except subprocess.TimeoutExpired:
                dead, out = True, 'timed out'
            if ' passed, ' not in out and out != 'timed out':
                # Killed by the compiler, not by a test: a broken mutant.
                print("mutant does not build: %r\n%s\n%s" % (old, r.stdout[-2000:], r.stderr))
                return 2
            killed += dead
            survived += not dead
            print('%-8s %-24s %s -> %s' % ('killed' if dead else 'SURVIVED',
                                           out[:24], old.split('\n')[0],
                                           new.split('\n')[0] or '(gone)'))
    print('mutants: %d killed, %d survived' % (killed, survived))
    return 1 if survived else 0


if __name__ == '__main__':
    sys.exit(main())
