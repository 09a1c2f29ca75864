#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check the PMU backend's event tables against the kernel's event database.

Usage: check-pmu-events.py [--def FILE] DBDIR [DBDIR...]

FILE is kernel-module/core/tlbb_pmu_events.def (the default); each DBDIR is
a tools/perf/pmu-events/arch directory (holding x86/ and arm64/) of a kernel
source, e.g. as printed by tools/kernels/fetch-pmu-events.sh.  The last one
given is taken as the newest.

For every x86 CPU the .def matches (vendor, family, each model of a range,
each stepping), the database's own mapfile.csv picks the event directory
perf would use, exactly as perf does (first regex that matches the whole
CPUID string).  Then every event of the CPU's table must be there: each
database event named has the table's EventCode, the OR of their UMasks is
the table's umask, none is bound to a hybrid PMU (Unit), and a 4K event is
counted as small, a 2M/4M/1G one as huge.  A CPU the newest database does
not know fails.  Every CPU whose database directory has page-size-split
walk events must be in the table, unless its directory is listed in
EXCLUDED with the reason.  The Arm events have no entry in the database
(6.1, 6.12): the check fails as soon as one appears there, so that their
encodings and the cores that have them get checked.

Prints one line per disagreement and a summary; exits 1 on any.
"""

import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DEF = os.path.join(HERE, '..', '..', 'kernel-module', 'core',
                           'tlbb_pmu_events.def')

# Database directories with size-split walk events the table leaves out.
EXCLUDED = {
    'alderlake': 'hybrid: P-core (cpu_core) and E-core (cpu_atom) events '
                 'differ; a raw config would need the PMU type',
    'meteorlake': 'hybrid: P-core (cpu_core) and E-core (cpu_atom) events '
                  'differ; a raw config would need the PMU type',
}
VENDORS = {'INTEL': 'GenuineIntel', 'AMD': 'AuthenticAMD'}
# The x86 CPUs enumerated for the coverage check.
FAMILIES = {'GenuineIntel': [6], 'AuthenticAMD': [0x17, 0x19, 0x1a]}

MODEL_RE = re.compile(r'^TLBB_PMU_MODEL\((\w+), "([^"]+)",$')
EV_RE = re.compile(r'^TLBB_PMU_EV\((0x[0-9a-fA-F]+), (0x[0-9a-fA-F]+), '
                   r'([01]), "([^"]+)"\)$')
X86_RE = re.compile(r'^TLBB_PMU_X86\((\w+), (INTEL|AMD), (0x[0-9a-fA-F]+|\d+),'
                    r' (0x[0-9a-fA-F]+), (0x[0-9a-fA-F]+)\)')
ARM_RE = re.compile(r'^TLBB_PMU_ARM_ANY\((\w+), "([^"]+)"\)$')


class DefError(Exception):
    pass


def parse_def(path):
    """{id: (name, [(event, umask, huge, [names], lineno)])}, x86, arm."""
    models, x86, arm = {}, [], []
    current = None
    with open(path) as f:
        text = f.read()
    # Comments out (the .def's own explanation mentions the macros).
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'),
                  text, flags=re.S)
    for no, line in enumerate(text.split('\n'), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        where = '%s:%d' % (os.path.basename(path), no)
        m = MODEL_RE.match(line)
        if m:
            if current:
                raise DefError('%s: model %s inside %s' % (where, m.group(1),
                                                           current))
            current = m.group(1)
            models[current] = (m.group(2), [])
            continue
        m = EV_RE.match(line)
        if m:
            if not current:
                raise DefError('%s: TLBB_PMU_EV outside a model' % where)
            models[current][1].append(
                (int(m.group(1), 16), int(m.group(2), 16),
                 m.group(3) == '1', m.group(4).split('|'), where))
            continue
        if line == ')':
            if not current:
                raise DefError('%s: ")" without a model' % where)
            current = None
            continue
        m = X86_RE.match(line)
        if m:
            x86.append((m.group(1), VENDORS[m.group(2)],
                        int(m.group(3), 0), int(m.group(4), 16),
                        int(m.group(5), 16), where))
            continue
        m = ARM_RE.match(line)
        if m:
            arm.append((m.group(1), m.group(2), where))
            continue
        raise DefError('%s: cannot parse %r' % (where, line))
    if current:
        raise DefError('%s: model %s not closed' % (path, current))
    for mid, *_, where in x86 + arm:
        if mid not in models:
            raise DefError('%s: unknown model %s' % (where, mid))
    return models, x86, arm


def posix_to_python(regex):
    return regex.replace('[:xdigit:]', '0-9A-Fa-f')


class Database:
    def __init__(self, path):
        self.path = path
        self.label = path
        pkg = os.path.join(os.path.dirname(path), 'package.txt')
        if os.path.exists(pkg):
            with open(pkg) as f:
                self.label = f.read().strip()
        self.mapfile = []
        with open(os.path.join(path, 'x86', 'mapfile.csv')) as f:
            for line in f:
                fields = line.strip().split(',')
                if len(fields) < 4 or fields[0] == 'Family-model' or \
                        fields[0].startswith('#'):
                    continue
                cpuid = posix_to_python(fields[0])
                # vendor-family-model[-stepping]: count the separators
                # outside bracket expressions ("[0-9A-F]" holds a '-').
                fields_ = re.sub(r'\[[^]]*\]', '', cpuid).count('-') + 1
                self.mapfile.append((re.compile(cpuid), fields_ >= 4,
                                     fields[2]))
        self._events = {}

    def x86_dir(self, vendor, family, model, stepping):
        """The event directory perf picks for this CPU, or None."""
        full = '%s-%d-%X-%X' % (vendor, family, model, stepping)
        short = full.rsplit('-', 1)[0]
        for regex, with_stepping, name in self.mapfile:
            # perf: the (POSIX, leftmost-longest) match must cover the
            # whole CPUID string, without the stepping when the mapfile
            # entry has none.
            if regex.fullmatch(full if with_stepping else short):
                return name
        return None

    def x86_events(self, d):
        """{EventName: [(code, umask, unit)]} of one x86 directory."""
        if d not in self._events:
            evs = {}
            for path in glob.glob(os.path.join(self.path, 'x86', d,
                                               '*.json')):
                with open(path) as f:
                    data = json.load(f)
                if not isinstance(data, list):
                    continue
                for e in data:
                    if 'EventName' in e and 'EventCode' in e:
                        evs.setdefault(e['EventName'], []).append(
                            (int(e['EventCode'].split(',')[0], 16),
                             int(e.get('UMask', '0'), 16), e.get('Unit')))
            self._events[d] = evs
        return self._events[d]

    def arm64_events(self):
        """{name: set(codes)} over every arm64 JSON file."""
        evs = {}
        for path in glob.glob(os.path.join(self.path, 'arm64', '**',
                                           '*.json'), recursive=True):
            with open(path) as f:
                data = json.load(f)
            if not isinstance(data, list):
                continue
            for e in data:
                name = e.get('EventName') or e.get('ArchStdEvent')
                if name:
                    code = e.get('EventCode')
                    evs.setdefault(name, set())
                    if code:
                        evs[name].add(int(code, 16))
        return evs


def size_split(names):
    """The x86 directory has page-size-split walk (or reload) events."""
    return any(n.upper().endswith(
        ('WALK_COMPLETED_4K', 'TLB_RELOAD_4K_L2_HIT')) for n in names)


def ranges(values):
    """'0x00-0x2f, 0x31' for a sorted list of numbers."""
    out = []
    for v in values:
        if out and out[-1][1] == v - 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return ', '.join('%#04x' % a if a == b else '%#04x-%#04x' % (a, b)
                     for a, b in out)


def first_match(x86, vendor, family, model):
    for mid, v, f, lo, hi, where in x86:
        if v == vendor and f == family and lo <= model <= hi:
            return mid, where
    return None, None


def check(def_path, db_paths):
    models, x86, arm = parse_def(def_path)
    dbs = [Database(p) for p in db_paths]
    bad = []
    checked = set()
    events_checked = 0

    def disagree(msg):
        bad.append(msg)
        print('DISAGREE: ' + msg)

    # Every CPU of the table, every database.
    cpus = {}
    unknown = {}
    for mid, vendor, family, lo, hi, where in x86:
        for model in range(lo, hi + 1):
            if first_match(x86, vendor, family, model)[1] == where:
                cpus[(vendor, family, model)] = (mid, where)
    for (vendor, family, model), (mid, where) in sorted(cpus.items()):
        cpu = '%s family 0x%x model 0x%02x' % (vendor, family, model)
        name, evs = models[mid]
        found = False
        for db in dbs:
            dirs = {db.x86_dir(vendor, family, model, s) for s in range(16)}
            if None in dirs and len(dirs) > 1:
                disagree('%s (%s): %s maps only some steppings: %s'
                         % (cpu, where, db.label, sorted(dirs - {None})))
            dirs.discard(None)
            found = found or bool(dirs)
            for d in sorted(dirs):
                checked.add((db.label, d))
                dbevs = db.x86_events(d)
                for code, umask, huge, names, evwhere in evs:
                    events_checked += 1
                    got_umask = 0
                    for n in names:
                        if n not in dbevs:
                            disagree('%s %s (%s): %s/%s has no %s'
                                     % (evwhere, name, cpu, db.label, d, n))
                            continue
                        for c, u, unit in dbevs[n]:
                            if c != code:
                                disagree('%s %s (%s): %s is EventCode %#x in '
                                         '%s/%s, the table has %#x'
                                         % (evwhere, name, cpu, n, c,
                                            db.label, d, code))
                            if unit:
                                disagree('%s %s (%s): %s is bound to PMU %s '
                                         'in %s/%s' % (evwhere, name, cpu, n,
                                                       unit, db.label, d))
                            got_umask |= u
                        size_huge = not n.upper().rstrip('B').endswith(
                            ('4K', '4K_L2_HIT', '4K_L2_MISS'))
                        if size_huge != huge:
                            disagree('%s %s: %s counted as %s'
                                     % (evwhere, name, n,
                                        'huge' if huge else 'small'))
                    if got_umask != umask:
                        disagree('%s %s (%s): UMask of %s in %s/%s is %#x, '
                                 'the table has %#x'
                                 % (evwhere, name, cpu, '|'.join(names),
                                    db.label, d, got_umask, umask))
        if not found:
            unknown.setdefault((where, vendor, family, name), []).append(model)
    for (where, vendor, family, name), models_ in sorted(unknown.items()):
        disagree('%s %s family 0x%x model%s %s (%s): in none of the '
                 'databases (%s)'
                 % (where, vendor, family, 's' if len(models_) > 1 else '',
                    ranges(models_), name,
                    ', '.join(db.label for db in dbs)))

    # Every CPU the newest database gives size-split walk events is covered.
    newest = dbs[-1]
    missing = {}
    for vendor, families in FAMILIES.items():
        for family in families:
            for model in range(256):
                if (vendor, family, model) in cpus:
                    continue
                for s in range(16):
                    d = newest.x86_dir(vendor, family, model, s)
                    if d and d not in EXCLUDED and \
                            size_split(newest.x86_events(d)):
                        missing.setdefault(d, set()).add(
                            '%s-%d-%X' % (vendor, family, model))
    for d, ids in sorted(missing.items()):
        disagree('%s/%s has page-size-split walk events but the table '
                 'does not cover %s' % (newest.label, d,
                                        ', '.join(sorted(ids))))
    for d, why in sorted(EXCLUDED.items()):
        print('# left out: %s (%s)' % (d, why))

    # Arm: not in the database; fail once it appears there.
    for mid, why, where in arm:
        name, evs = models[mid]
        for db in dbs:
            armevs = db.arm64_events()
            codes = {c: n for n, cs in armevs.items() for c in cs}
            for code, umask, huge, names, evwhere in evs:
                events_checked += 1
                for n in names:
                    if n in armevs:
                        disagree('%s %s: %s is in %s now (codes %s): check '
                                 'the encoding and list the cores that have '
                                 'it instead of TLBB_PMU_ARM_ANY'
                                 % (evwhere, name, n, db.label,
                                    sorted(armevs[n])))
                if code in codes:
                    disagree('%s %s: event %#x is %s in %s'
                             % (evwhere, name, code, codes[code], db.label))
        print('# unverified: %s (%s): %s; no arm64 core in %s has '
              'DTLB/ITLB_WALK_BLOCK/PAGE' % (name, where, why,
                                             ', '.join(d.label for d in dbs)))

    for db in dbs:
        print('# checked: %s: %s' % (db.label, ' '.join(
            sorted(d for label, d in checked if label == db.label))))
    print('check-pmu-events: %d CPU models, %d database directories, '
          '%d event checks against %s: %d disagreements'
          % (len(cpus), len(checked), events_checked,
             ', '.join(db.label for db in dbs), len(bad)))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--def', dest='def_path', default=DEFAULT_DEF)
    ap.add_argument('db', nargs='+')
    args = ap.parse_args()
    for p in args.db:
        if not os.path.isfile(os.path.join(p, 'x86', 'mapfile.csv')):
            sys.exit('check-pmu-events: %s has no x86/mapfile.csv' % p)
    try:
        return check(args.def_path, args.db)
    except DefError as e:
        sys.exit('check-pmu-events: %s' % e)


if __name__ == '__main__':
    sys.exit(main())
