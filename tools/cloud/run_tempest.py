#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""``tox -e tempest``: the cloud in a box up, tempest against it, down.

1. ``cloud.py up`` (MariaDB, RabbitMQ, keystone, placement, glance,
   neutron, nova, two compute hosts with the driver plugin and hook), as
   docs/first-hour.md's first line, then the lines of that page's block
   up to its last (``cloud.py down``): a flavor tagged, a bad value
   refused, a server booted and checked on its host (first_hour.py);
2. a tempest workspace whose tempest.conf describes that cloud, with
   ``[tlbbalance] host_access = local``;
3. ``tempest run``: this repository's plugin (tlbbalance_tempest_plugin,
   its own distribution in tempest-plugin/, which cloud.py installs into
   the cloud's virtualenv) and a slice of tempest's own compute API
   tests;
4. a watchdog (watchdog.py) beside it: a process of the cloud that dies
   mid-run (a service, a libvirtd, the kvm host's node) stops the run
   within seconds, named, with the end of its log; the same check once
   more after the run;
5. ``cloud.py down`` (the page's last line), whatever happened; a last
   ``N passed, N failed`` (the walkthrough counts as one test).

The kvm host (a node with the real tlbbalance.ko, kvmhost.py) is part of
the run unless TLBB_CLOUD_KVM_HOST=0 (a machine with little RAM: the node
takes ~0.9 GiB more); then the module tests skip, saying why.

Then, unless TLBB_TEMPEST_SSH=0, the host-state tests once more with
``[tlbbalance] host_access = ssh`` (sshaccess.py: an sshd in each fast
host's namespace, a throwaway key), so the SSH backend is tested too.

tlbb-fast-2 runs release N-1 (tools/releases.py) unless
TLBB_CLOUD_RELEASE_N1 says otherwise (empty: none), so every test that
lands there runs against N-1's driver and hook, and the mixed-version
test moves servers between it and tlbb-fast-1.

Environment: TLBB_TEMPEST_REGEX (tests to run), TLBB_TEMPEST_CONCURRENCY
(default 2), TLBB_CLOUD_KEEP=1 (leave the cloud up afterwards), and those
of cloud.py.
"""

import configparser
import io
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cloud  # noqa: E402
import configs  # noqa: E402
import first_hour  # noqa: E402
import procs  # noqa: E402
import sshaccess  # noqa: E402
import watchdog  # noqa: E402

# tempest's own tests run beside the plugin's: flavors and server creation
# (the API as any user sees it, with the plugin's driver underneath)
DEFAULT_REGEX = (r'^tlbbalance_tempest_plugin\.|'
                 r'^tempest\.api\.compute\.flavors\.|'
                 r'^tempest\.api\.compute\.servers\.test_create_server\.'
                 r'ServersTestJSON\.')

# Two workers, by hand: stestr has no timings in a new workspace and
# deals classes out blindly (one worker got every scenario class: 680 s
# against 10 s). The kvm host's tests (~350 s, each host probe a command
# under TCG) and the mixed-version test (~220 s: two servers, four moves)
# get one worker, everything else the other (2026-11-27 at load ~20, the
# mixed-version test on the other: 607 s against 945 s).
KVM_TESTS = (r'^tlbbalance_tempest_plugin\.tests\.scenario\.'
             r'(test_module|test_mixed_versions)\.')
WORKERS = '- worker:\n  - %s\n- worker:\n  - %s\n' % (
    "'%s'" % KVM_TESTS, "'^(?!%s)'" % KVM_TESTS[1:])

# The SSH pass (sshaccess.py): the host-state assertions through the SSH
# backend (the hook-log test needs the box's hook log: local only).
SSH_REGEX = (r'^tlbbalance_tempest_plugin\.tests\.scenario\.test_host_state'
             r'\.TaggedServerHostStateTest\.test_(tagged_server_xml|'
             r'untagged_server)')


def kvm_host_wanted():
    """The kvm host is on unless TLBB_CLOUD_KVM_HOST=0, as in cloud.py,
    which reads the same variable."""
    v = os.environ.setdefault('TLBB_CLOUD_KVM_HOST', '1')
    if v not in ('0', '1'):
        raise SystemExit('TLBB_CLOUD_KVM_HOST=%r: 1 (the default in tox -e '
                         'tempest) or 0' % v)
    return v == '1'


def mixed_version_hosts(facts):
    """[the first host on release N-1, the first fast host on this
    checkout], or [] when the cloud has no N-1 host."""
    n1 = [h['name'] for h in facts['hosts'] if h.get('release')]
    n = [h['name'] for h in facts['hosts']
         if h['kind'] == 'fast' and not h.get('release')]
    return [n1[0], n[0]] if n1 and n else []


def tempest_conf(facts, top, name='tempest.conf', **tlbbalance):
    """Write tempest.conf (or ``name``) for the cloud in the workspace's
    etc/; ``tlbbalance`` overrides the [tlbbalance] options."""
    c = configparser.RawConfigParser()
    c.optionxform = str
    imgs, flv = facts['images'], facts['flavors']

    def sec(name, **opts):
        if name != 'DEFAULT':
            c.add_section(name)
        for k, v in opts.items():
            c.set(name, k, str(v).lower() if isinstance(v, bool) else
                  str(v))
    sec('DEFAULT', log_file=os.path.join(facts['logs'], 'tempest.log'),
        debug=False)
    sec('auth', admin_username='admin',
        admin_password=facts['admin']['password'],
        admin_project_name='admin', admin_domain_name='Default',
        use_dynamic_credentials=True, create_isolated_networks=False)
    sec('identity', uri_v3=facts['auth_url'], auth_version='v3',
        region=facts['region'], disable_ssl_certificate_validation=True)
    sec('compute', image_ref=imgs['tlbb-payload'],
        image_ref_alt=imgs['tlbb-payload'],
        flavor_ref=flv['tlbb.tiny'], flavor_ref_alt=flv['tlbb.tiny.alt'],
        min_compute_nodes=len(facts['hosts']), max_microversion='latest',
        build_timeout=300, build_interval=1)
    sec('compute-feature-enabled', resize=True, cold_migration=True,
        live_migration=True, console_output=False, snapshot=False,
        vnc_console=False, spice_console=False, serial_console=False,
        rescue=False, change_password=False, interface_attach=False,
        shelve=False, suspend=False, pause=False, personality=False,
        config_drive=False, metadata_service=False,
        attach_encrypted_volume=False,
        block_migration_for_live_migration=False)
    sec('service_available', nova=True, glance=True, neutron=True,
        cinder=False, swift=False, horizon=False, placement=True)
    sec('placement', min_microversion='1.0', max_microversion='latest')
    sec('validation', run_validation=False)
    sec('image-feature-enabled', api_v2=True)
    sec('tlbbalance', **dict(
        dict(host_access='local',
             local_cloud_facts=os.path.join(top, 'cloud.json'),
             # with the kvm host, a missing module host is a failure
             module_host_required=any(h['kind'] == 'kvm'
                                      for h in facts['hosts']),
             # live migration between the fast hosts (docs/cloud.md,
             # "Live migration"); the kvm host is not set up for it
             live_migration_hosts=','.join(
                 h['name'] for h in facts['hosts'] if h['kind'] == 'fast'),
             # the N-1 host first, then a fast host on this checkout
             mixed_version_hosts=','.join(mixed_version_hosts(facts))),
        **tlbbalance))
    ws = os.path.join(top, 'tempest')
    os.makedirs(os.path.join(ws, 'etc'), exist_ok=True)
    # the admin password is in it: 0600 (configs.write_private)
    buf = io.StringIO()
    c.write(buf)
    configs.write_private(os.path.join(ws, 'etc', name), buf.getvalue())
    return ws


def totals(text):
    """(passed, failed, skipped) from tempest run's 'Totals' block."""
    def n(label):
        m = re.search(r'- %s: (\d+)' % label, text)
        return int(m.group(1)) if m else 0
    return n('Passed'), n('Failed') + n('Unexpected Success'), n('Skipped')


def figures(log_path, since=0):
    """The tests' ``FIGURES`` lines (their measurements) that tempest.log
    got after byte ``since``; each from ``FIGURES`` on."""
    try:
        with open(log_path, 'rb') as f:
            f.seek(since)
            text = f.read().decode('utf-8', 'replace')
    except FileNotFoundError:
        return []
    return [ln[ln.index('FIGURES'):] for ln in text.splitlines()
            if 'FIGURES' in ln]


def log_size(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def tempest_run(tempest, ws, env, regex, conc, state_path, what):
    """One ``tempest run`` with the watchdog beside it; (passed, failed,
    skipped, dead processes)."""
    t0 = time.monotonic()
    log = os.path.join(os.path.dirname(state_path), 'log', 'tempest.log')
    since = log_size(log)
    argv = [tempest, 'run', '--regex', regex]
    if conc == '2':
        path = os.path.join(ws, 'etc', 'workers.yaml')
        with open(path, 'w') as f:
            f.write(WORKERS)
        argv += ['--worker-file', path]
    else:
        argv += ['--concurrency', conc]
    # its own session: the watchdog stops tempest and its workers
    p = subprocess.Popen(argv, cwd=ws,
                         env=dict(os.environ, **env),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    dog = watchdog.Watchdog(state_path, p)
    dog.start()
    out = []
    for line in p.stdout:
        sys.stdout.write(line)
        out.append(line)
    p.wait()
    dog.join()
    passed, failed, skipped = totals(''.join(out))
    for ln in figures(log, since):
        print('tempest: %s' % ln)
    print('tempest run (%s): rc %d in %.0f s: %d passed, %d failed, '
          '%d skipped' % (what, p.returncode, time.monotonic() - t0,
                          passed, failed, skipped))
    if p.returncode and not failed:
        failed = 1
    # a process of the cloud that died mid-run is a failure, named
    dead = dog.dead or watchdog.dead(state_path)
    if dead:
        print('tempest: FAILED: the cloud lost %s during the run%s'
              % (', '.join(dead), '' if dog.dead else
                 '\n' + watchdog.death_report(state_path, dead)))
        failed += 1
    return passed, failed, skipped, dead


def ssh_pass(tempest, ws, env, facts, top, state_path, conc):
    """The host-state tests again, through the SSH backend (sshaccess.py)
    against the fast hosts: (passed, failed, skipped, dead)."""
    state = procs.State(state_path)
    port = facts['ports']['ssh']
    addrs, key = sshaccess.start(top, state, facts, port)
    tempest_conf(facts, top, name='tempest-ssh.conf',
                 **sshaccess.tlbbalance_options(facts, addrs, key, port))
    with sshaccess.OnlyHosts(facts, addrs):
        return tempest_run(tempest, ws,
                           dict(env, TEMPEST_CONFIG='tempest-ssh.conf'),
                           SSH_REGEX, conc, state_path, 'SSH host access')


def main(argv=None):
    import argparse
    # no options: its knobs are environment variables (above); --help
    # prints them instead of bringing a cloud up
    argparse.ArgumentParser(
        description=__doc__.split('\n')[0].replace('``', ''),
        epilog=__doc__[__doc__.index('Environment:'):],
        formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(
            sys.argv[1:] if argv is None else argv)
    top = cloud.top_dir()
    regex = os.environ.get('TLBB_TEMPEST_REGEX', DEFAULT_REGEX)
    conc = os.environ.get('TLBB_TEMPEST_CONCURRENCY', '2')
    kvm = kvm_host_wanted()
    # one fast host on release N-1 for the mixed-version test (docs/
    # cloud.md); TLBB_CLOUD_RELEASE_N1= (empty) keeps every host on this
    # checkout
    n1 = os.environ.setdefault('TLBB_CLOUD_RELEASE_N1', 'tlbb-fast-2')
    print('tempest: release N-1 on %s' % (n1 or 'no host'))
    print('tempest: the kvm host is %s' % (
        'on (TLBB_CLOUD_KVM_HOST=0 leaves it out)' if kvm else
        'off (TLBB_CLOUD_KVM_HOST=0): the module tests will skip'))
    # docs/first-hour.md's block, as written: its first line brings the
    # cloud up, the lines between run before tempest, its last line
    # takes the cloud down (first_hour.py)
    walk = first_hour.block()
    if not first_hour.run(walk[:1]):
        print('tempest: the cloud did not come up (logs: %s)'
              % os.path.join(top, 'log'))
        print('0 passed, 1 failed')
        return 1
    passed = failed = 0
    if not kvm:
        print('tempest: SKIP docs/first-hour.md between up and down: its '
              'server needs the kvm host (TLBB_CLOUD_KVM_HOST=0)')
    elif first_hour.run(walk[1:-1]):
        passed += 1
    else:
        print('tempest: docs/first-hour.md failed as written (above)')
        failed += 1
    # tempest reads this file and no other (not ~/.tempest, /etc/tempest)
    # and keeps its own files in $HOME/.tempest: give it the cloud's dir
    env = {'TEMPEST_CONFIG_DIR': os.path.join(top, 'tempest', 'etc'),
           'TEMPEST_CONFIG': 'tempest.conf',
           'HOME': os.path.join(top, 'tempest-home')}
    try:
        os.makedirs(env['HOME'], exist_ok=True)
        with open(os.path.join(top, 'cloud.json')) as f:
            facts = json.load(f)
        tempest = os.path.join(facts['venv'], 'bin', 'tempest')
        # tempest keeps a registry of workspaces; ours stays in the
        # cloud's directory (the default is ~/.tempest/workspace.yaml)
        procs.run([tempest, 'init', '--workspace-path',
                   os.path.join(top, 'tempest-workspaces.yaml'),
                   '--name', 'tlbb-cloud-%d' % os.getpid(),
                   os.path.join(top, 'tempest')], 'tempest init',
                  env=env)
        ws = tempest_conf(facts, top)
        state_path = os.path.join(top, 'state.json')
        p1, f1, skipped, dead = tempest_run(
            tempest, ws, env, regex, conc, state_path, 'local host access')
        passed += p1
        failed += f1
        if not dead and os.environ.get('TLBB_TEMPEST_SSH', '1') == '1':
            p2, f2, _, _ = ssh_pass(tempest, ws, env, facts, top,
                                    state_path, conc)
            passed += p2
            failed += f2
    finally:
        if os.environ.get('TLBB_CLOUD_KEEP') == '1':
            print('TLBB_CLOUD_KEEP=1: the cloud stays up '
                  '(tools/cloud/cloud.py down)')
        elif not first_hour.run(walk[-1:]):
            print('tempest: teardown left something running')
            failed += 1
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
