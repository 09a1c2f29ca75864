#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Guard the install script: packages installed by hand since boot.

A test run on a developer's machine can pass because somebody installed a
package by hand that tools/ci/system-packages.txt does not name; on a fresh
machine (CI's) the same run then fails. This check reads apt's history since
the machine booted, takes every package someone asked for (apt marks the
rest "automatic"), and fails when one of them is still installed but is not
in system-packages.txt. The packages the install script pulled in are in the
list by construction, so on a fresh machine the check passes.

Exit 0 when every package asked for since boot is listed, 1 otherwise; the
last line is "hand-installed: N passed, N failed" for run-tests.sh.

Environment:
  TLBB_HAND_INSTALLED_OK  space-separated packages to accept anyway (tools a
                          developer installed for debugging, never needed by
                          a test); say why in the commit that uses it.
"""
import argparse
import datetime
import gzip
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def listed_packages(path):
    names = set()
    with open(path) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                names.add(line.split()[0])
    return names


def boot_time():
    with open('/proc/uptime') as f:
        up = float(f.read().split()[0])
    return datetime.datetime.now() - datetime.timedelta(seconds=up)


def history_files(logdir):
    """apt's history, oldest file first (rotated .N.gz before the live one)."""
    names = []
    for name in os.listdir(logdir):
        m = re.match(r'^history\.log(?:\.(\d+)(?:\.gz)?)?$', name)
        if m:
            names.append((-(int(m.group(1)) if m.group(1) else 0), name))
    return [os.path.join(logdir, n) for _, n in sorted(names)]


def read_entries(path):
    opener = gzip.open if path.endswith('.gz') else open
    entry = {}
    with opener(path, 'rt', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line.strip():
                if entry:
                    yield entry
                entry = {}
                continue
            key, _, value = line.partition(': ')
            entry[key] = value
    if entry:
        yield entry


def asked_for(install_field):
    """Packages of an Install: line that were not pulled in automatically."""
    out = []
    for m in re.finditer(r'([^\s,()]+?)(?::[a-z0-9]+)? \(([^)]*)\)',
                         install_field):
        if 'automatic' not in m.group(2):
            out.append(m.group(1))
    return out


def installed(pkg):
    r = subprocess.run(['dpkg-query', '-W', '-f=${Status}', pkg],
                       capture_output=True, text=True)
    return r.returncode == 0 and 'ok installed' in r.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--log-dir', default='/var/log/apt')
    ap.add_argument('--list', default=os.path.join(HERE,
                                                   'system-packages.txt'))
    ap.add_argument('--baseline', default=os.path.join(
        HERE, 'machine-baseline.txt'),
        help="what the machine kind installs at boot, before any session")
    ap.add_argument('--since', help='ISO time to start from (default: boot)')
    args = ap.parse_args(argv)

    since = (datetime.datetime.fromisoformat(args.since) if args.since
             else boot_time())
    listed = listed_packages(args.list)
    if os.path.exists(args.baseline):
        listed |= listed_packages(args.baseline)
    ok = set(os.environ.get('TLBB_HAND_INSTALLED_OK', '').split())
    asked = {}
    if os.path.isdir(args.log_dir):
        for path in history_files(args.log_dir):
            for e in read_entries(path):
                try:
                    start = datetime.datetime.strptime(
                        e.get('Start-Date', ''), '%Y-%m-%d  %H:%M:%S')
                except ValueError:
                    continue
                if start < since or 'Install' not in e:
                    continue
                for p in asked_for(e['Install']):
                    asked.setdefault(p, e.get('Commandline', '?'))
    missing = sorted(p for p in asked
                     if p not in listed and p not in ok and installed(p))
    print('hand-installed: %d package(s) asked for since %s'
          % (len(asked), since.strftime('%Y-%m-%d %H:%M:%S')))
    for p in missing:
        print('hand-installed: %s is installed (by "%s") but not named in %s:'
              ' a fresh machine will not have it' % (p, asked[p], args.list))
    print('hand-installed: %d passed, %d failed'
          % (len(asked) - len(missing), len(missing)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
