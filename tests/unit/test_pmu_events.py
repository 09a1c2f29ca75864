# SPDX-License-Identifier: Apache-2.0
"""The PMU backend's event tables against the kernel's perf event database.

kernel-module/core/tlbb_pmu_events.def is the one source of the module's
page-size-split TLB walk events and the CPUs they are used on.  These tests
run tools/kernels/check-pmu-events.py on it against the event databases of
Debian bookworm's linux-source-6.1 and -6.12 (tools/perf/pmu-events/arch,
fetched once by tools/kernels/fetch-pmu-events.sh into
~/.cache/nova-tlbbalance/pmu-events: about 290 MB of .deb files, 15 s on
first use, cached after), and show that the check fails on an altered copy.
The C side's CPU matching has its own unit tests
(kernel-module/core/tests/test_pmu_table.c, `make -C kernel-module/core test`).
"""

import os
import shutil
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
DEF = os.path.join(TOP, 'kernel-module', 'core', 'tlbb_pmu_events.def')
CHECK = os.path.join(TOP, 'tools', 'kernels', 'check-pmu-events.py')
FETCH = os.path.join(TOP, 'tools', 'kernels', 'fetch-pmu-events.sh')


@pytest.fixture(scope='module')
def dbs():
    """Both databases, oldest first (Debian only: apt-get download)."""
    out = subprocess.run([FETCH, '6.1', '6.12'], stdout=subprocess.PIPE,
                         universal_newlines=True, timeout=900)
    assert out.returncode == 0, 'fetch-pmu-events.sh failed (see stderr)'
    paths = out.stdout.split()
    assert len(paths) == 2
    return paths


def run_check(def_path, dbs):
    return subprocess.run([sys.executable, CHECK, '--def', def_path] + dbs,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=120)


def test_tables_agree_with_kernel_database(dbs):
    r = run_check(DEF, dbs)
    print(r.stdout)
    assert r.returncode == 0, r.stdout
    assert ': 0 disagreements' in r.stdout
    # The current server and client cores were really looked up in 6.12.
    checked = [ln for ln in r.stdout.splitlines()
               if ln.startswith('# checked: linux-source-6.12')]
    assert len(checked) == 1, r.stdout
    for d in ('haswellx', 'skylakex', 'cascadelakex', 'icelakex',
              'sapphirerapids', 'emeraldrapids', 'graniterapids',
              'sierraforest', 'tigerlake', 'rocketlake', 'amdzen1',
              'amdzen2', 'amdzen3', 'amdzen4', 'amdzen5'):
        assert ' %s' % d in checked[0], d
    assert '# unverified: arm-walk-block-page' in r.stdout


# One alteration of the .def each, and the words the failure must name.
MUTANTS = [
    ('umask', 'TLBB_PMU_EV(0x12, 0x0c, 1,', 'TLBB_PMU_EV(0x12, 0x04, 1,',
     'UMask of DTLB_LOAD_MISSES.WALK_COMPLETED_2M_4M|'
     'DTLB_LOAD_MISSES.WALK_COMPLETED_1G in'),
    ('event code', 'TLBB_PMU_EV(0x13, 0x02, 0, "DTLB_STORE',
     'TLBB_PMU_EV(0x12, 0x02, 0, "DTLB_STORE',
     'DTLB_STORE_MISSES.WALK_COMPLETED_4K is EventCode 0x13'),
    ('size class', 'TLBB_PMU_EV(0x45, 0x11, 0,', 'TLBB_PMU_EV(0x45, 0x11, 1,',
     'ls_l1_d_tlb_miss.tlb_reload_4k_l2_hit counted as huge'),
    ('1G where the core has none', 'TLBB_PMU_EV(0x11, 0x04, 1, '
     '"ITLB_MISSES.WALK_COMPLETED_2M_4M")', 'TLBB_PMU_EV(0x11, 0x0c, 1, '
     '"ITLB_MISSES.WALK_COMPLETED_2M_4M|ITLB_MISSES.WALK_COMPLETED_1G")',
     'has no ITLB_MISSES.WALK_COMPLETED_1G'),
    ('model outside the database', 'INTEL, 6, 0x8f, 0x8f)',
     'INTEL, 6, 0x8f, 0x90)', 'model 0x90 (intel-spr): in none'),
    ('model given the wrong table', 'TLBB_PMU_X86(intel_spr, INTEL, 6, 0xcf',
     'TLBB_PMU_X86(intel_icl, INTEL, 6, 0xcf',
     'DTLB_LOAD_MISSES.WALK_COMPLETED_4K is EventCode 0x12 in '
     'linux-source-6.12=6.12.117-1~deb12u1/emeraldrapids'),
    ('core left out', 'TLBB_PMU_X86(intel_icl, INTEL, 6, 0xa7, 0xa7)',
     '', 'rocketlake has page-size-split walk events but the table does '
     'not cover GenuineIntel-6-A7'),
    ('Arm event the database has', '"DTLB_WALK_BLOCK"', '"DTLB_WALK"',
     'DTLB_WALK is in'),
]


@pytest.mark.parametrize('what,old,new,expect', MUTANTS,
                         ids=[m[0] for m in MUTANTS])
def test_altered_table_fails(dbs, tmp_path, what, old, new, expect):
    with open(DEF) as f:
        text = f.read()
    assert text.count(old) == 1, 'mutant %r does not apply' % what
    path = tmp_path / 'tlbb_pmu_events.def'
    path.write_text(text.replace(old, new))
    r = run_check(str(path), dbs)
    assert r.returncode == 1, r.stdout
    assert expect in r.stdout, r.stdout
    assert 'DISAGREE: ' in r.stdout


def test_unparsable_line_names_it(dbs, tmp_path):
    with open(DEF) as f:
        text = f.read()
    path = tmp_path / 'tlbb_pmu_events.def'
    path.write_text(text.replace('TLBB_PMU_X86(amd_zen, AMD, 0x19,',
                                 'TLBB_PMU_X86(amd_zen, ARM, 0x19,'))
    r = run_check(str(path), dbs)
    assert r.returncode != 0
    assert 'tlbb_pmu_events.def:' in r.stdout
    assert "cannot parse 'TLBB_PMU_X86(amd_zen, ARM, 0x19" in r.stdout


@pytest.mark.skipif(not shutil.which('gcc'), reason='gcc not installed')
def test_checker_reads_the_def_as_the_compiler_does(tmp_path):
    """The checker's parse and the C tables are the same events."""
    sys.path.insert(0, os.path.dirname(CHECK))
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location('check_pmu', CHECK)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    models, x86, arm = mod.parse_def(DEF)
    want = []
    for mid, (name, evs) in models.items():
        for code, umask, huge, names, _ in evs:
            want.append('%s %s %#x %d %s' % (mid, name, code | umask << 8,
                                             huge, '|'.join(names)))
    for mid, vendor, family, lo, hi, _ in x86:
        want.append('x86 %s %s %#x %#x %#x' % (mid, vendor[:5], family, lo,
                                               hi))
    for mid, _, _ in arm:
        want.append('arm %s' % mid)
    src = tmp_path / 'dump.c'
    src.write_text(r'''
#include <stdio.h>
#define EV(e, u, h, n) printf("%s %s %#llx %d %s\n", id, name, \
    (unsigned long long)((e) | (u) << 8), h, n);
int main(void)
{
    const char *id, *name;
#define TLBB_PMU_MODEL(i, nm, ...) id = #i; name = nm; __VA_ARGS__
#define TLBB_PMU_EV(e, u, h, n) EV(e, u, h, n)
#include "tlbb_pmu_events.def"
#define TLBB_PMU_X86(i, v, f, lo, hi) printf("x86 %s %.5s 0x%x 0x%x 0x%x\n", \
    #i, #v, f, lo, hi);
#include "tlbb_pmu_events.def"
#define TLBB_PMU_ARM_ANY(i, why) printf("arm %s\n", #i);
#include "tlbb_pmu_events.def"
    return 0;
}
''')
    exe = tmp_path / 'dump'
    subprocess.run(['gcc', '-Wall', '-Werror', '-I', os.path.dirname(DEF),
                    '-o', str(exe), str(src)], check=True)
    got = subprocess.run([str(exe)], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    vendors = {'INTEL': 'Genui', 'AMD': 'Authe'}
    got = [' '.join(vendors.get(w, w) for w in ln.split(' '))
           for ln in got.splitlines()]
    assert got == want
