#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge one kernel's test run from its serial console log.

Usage: check-log.py <console.log> <label> <qemu-exit-status>

Counts the in-guest tests' KTAP "ok"/"not ok" lines between the markers
guest-init.sh prints; "ok N what # SKIP why" (a capability this machine
lacks: no hardware PMU, no /dev/kvm) is counted as a skip, never a pass,
and listed with its reason.  Adds the harness's own checks, each one line:
  - every test that began also ended (no hang or panic in the middle),
  - the guest printed its summary and it agrees with the host's count,
  - QEMU ended through isa-debug-exit with the guest's verdict (33 = pass),
  - the kernel log holds no BUG/WARNING/Oops/KASAN/panic/Call Trace line,
    nor a debug checker's report (lockdep, KFENCE, DEBUG_VM, atomic
    sleep), whatever its prefix,
  - for a debug kernel (a label ending in "-debug", built by
    tools/kernels/build-debug.sh): KASAN, lockdep and KFENCE said at boot
    that they were on (0 reports from a checker that is off prove nothing).
Prints "# <label>: N skipped" and one "# <label>: SKIP <test>: <what>:
<why>" line per skip, "# <label>: checker reports: KASAN N, ..." (each
report counted once, though the live console and the final dmesg dump both
show it), then "<label>: N passed, N failed" last; exits 1 on any failure.
"""

import re
import sys

BAD = re.compile(r'BUG:|WARNING:|Oops|KASAN|UBSAN|Kernel panic|Call Trace|'
                 r'general protection fault|kernel BUG|'
                 r'rcu: INFO: .*detected stalls|INFO: task .* blocked for|'
                 r'unreferenced object|Unable to handle kernel|'
                 # Debug kernels' reports, also when a line comes without
                 # its "BUG:"/"WARNING:" header (cut by the ring buffer).
                 r'possible (circular|recursive) locking|'
                 r'inconsistent lock state|suspicious RCU usage|'
                 r'trying to register non-static key|'
                 r'locking correctness validator|lockdep is turned off|'
                 r'sleeping function called from invalid context|'
                 r'page dumped because|Bad page|Bad rss-counter|KFENCE')
# The debug checkers' report headers, by checker (each header once a
# report).
REPORTS = (
    ('KASAN', re.compile(r'BUG: KASAN:')),
    ('KFENCE', re.compile(r'BUG: KFENCE:')),
    ('lockdep', re.compile(
        r'WARNING: (possible (circular|recursive) locking|'
        r'inconsistent lock state|possible irq lock inversion|'
        r'\S+-safe -> \S+-unsafe lock order|bad unlock balance|'
        r'bad contention|held lock freed|lock held when returning|'
        r'Nested lock was not taken|suspicious RCU usage|'
        r'.* still has locks held)|'
        r'INFO: trying to register non-static key|BUG: MAX_LOCK|'
        r'turning off the locking correctness validator')),
    ('DEBUG_VM', re.compile(r'page dumped because|BUG: Bad page|'
                            r'Bad rss-counter|kernel BUG at mm/|'
                            r'WARNING: .* at mm/')),
    ('atomic-sleep', re.compile(
        r'BUG: sleeping function called from invalid context|'
        r'BUG: scheduling while atomic')),
    ('preempt', re.compile(r'BUG: using (__)?\S*smp_processor_id\(\) in '
                           r'preemptible|BUG: using __this_cpu')),
)
# What a debug kernel prints at boot when its checkers are on.
CHECKERS_ON = (
    ('KASAN', 'KernelAddressSanitizer initialized'),
    ('lockdep', 'Lock dependency validator'),
    ('KFENCE', 'kfence: initialized'),
)
BEGIN = re.compile(r'^TLBB-TEST-BEGIN (\S+)')
END = re.compile(r'^TLBB-TEST-END (\S+) rc=(\d+) ok=(\d+) notok=(\d+)'
                 r'(?: secs=(\d+))?(?: skip=(\d+))?')
SUMMARY = re.compile(r'^TLBB-SUMMARY passed=(\d+) failed=(\d+)')
# KTAP: "ok 3 counting backend is a PMU # SKIP no PMU" (TAP's "- " and any
# case of SKIP accepted).
SKIP = re.compile(r'^ok \d+\s*(?:- )?(.*?)\s*#\s*SKIP\b\s*(.*)$', re.I)
# A kernel line on the console: "[   12.345678] text".
STAMP = re.compile(r'^\[\s*\d+\.\d+\] ')


def main():
    if len(sys.argv) != 4:
        sys.exit('usage: check-log.py <console.log> <label> <qemu-status>')
    path, label, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(path, errors='replace') as f:
        lines = [ln.rstrip('\r\n').replace('\r', '') for ln in f]

    passed = failed = 0
    current = None
    per_test = {}
    guest = None
    bad = []
    skips = []
    reports = {kind: set() for kind, _ in REPORTS}
    for ln in lines:
        if BAD.search(ln):
            bad.append(ln)
            for kind, pattern in REPORTS:
                if pattern.search(ln):
                    reports[kind].add(ln)
        m = BEGIN.match(ln)
        if m:
            current = m.group(1)
            per_test[current] = [0, 0, None]
            continue
        m = END.match(ln)
        if m and current == m.group(1):
            rc, ok, notok = (int(x) for x in m.group(2, 3, 4))
            counted = per_test[current]
            # The guest adds a failure for a silent non-zero exit.
            counted[1] = max(counted[1], notok)
            counted[2] = rc
            if m.group(5) is not None:
                print('# %s: %s took %s s (%d ok, %d not ok, %s skipped)'
                      % (label, current, m.group(5), ok, notok,
                         m.group(6) or 0))
            current = None
            continue
        m = SUMMARY.match(ln)
        if m:
            guest = (int(m.group(1)), int(m.group(2)))
            continue
        if current and not STAMP.match(ln):
            skip = SKIP.match(ln)
            if skip:
                skips.append((current, skip.group(1),
                              skip.group(2) or '(no reason given)'))
            elif ln.startswith('ok '):
                per_test[current][0] += 1
            elif ln.startswith('not ok '):
                per_test[current][1] += 1

    for name, (ok, notok, rc) in per_test.items():
        passed += ok
        failed += notok
        if rc is None:
            print('not ok - %s: %s never ended (hang, panic or reboot)'
                  % (label, name))
            failed += 1

    def harness(cond, what):
        nonlocal passed, failed
        print('%s - %s: %s' % ('ok' if cond else 'not ok', label, what))
        if cond:
            passed += 1
        else:
            failed += 1

    counted = (sum(v[0] for v in per_test.values()),
               sum(v[1] for v in per_test.values()))
    harness(guest is not None and guest == counted,
            'guest summary %s matches the console count %s'
            % (guest, counted))
    harness(status == 33,
            'QEMU exit status %d (33: guest reported success)' % status)
    harness(not bad, 'kernel log free of BUG/WARNING/Oops/KASAN/panic/'
            'Call Trace (%d bad lines)' % len(bad))
    for ln in bad[:20]:
        print('#   ' + ln)
    if label.endswith('-debug'):
        text = '\n'.join(lines)
        off = [kind for kind, said in CHECKERS_ON if said not in text]
        harness(not off, 'debug checkers on (%s)%s'
                % (', '.join(kind for kind, _ in CHECKERS_ON),
                   ': no boot message of ' + ', '.join(off) if off else ''))
    print('# %s: checker reports: %s' % (label, ', '.join(
        '%s %d' % (kind, len(reports[kind])) for kind, _ in REPORTS)))
    print('# %s: %d skipped' % (label, len(skips)))
    for test, what, why in skips:
        print('# %s: SKIP %s: %s: %s' % (label, test, what, why))
    print('%s: %d passed, %d failed' % (label, passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
