#!/usr/bin/env python3
"""``tox -e tempest``: the cloud in a box up, tempest against it, down.

1. ``cloud.py up`` (MariaDB, RabbitMQ, keystone, placement, glance,
   neutron, nova, two compute hosts with the driver plugin and hook);
2. a tempest workspace whose tempest.conf describes that cloud, with
   ``[tlbbalance] host_access = local``;
3. ``tempest run``: this repository's plugin (tlbbalance_tempest_plugin)
   and a slice of tempest's own compute API tests;
4. a check that every process of the cloud is still alive (a service that
   died mid-run fails the run, named);
5. ``cloud.py down``, whatever happened; a last ``N passed, N failed``.

Environment: TLBB_TEMPEST_REGEX (tests to run), TLBB_TEMPEST_CONCURRENCY
(default 2), TLBB_CLOUD_KEEP=1 (leave the cloud up afterwards), and those
of cloud.py.
"""

import configparser
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cloud  # noqa: E402
import procs  # noqa: E402

# tempest's own tests run beside the plugin's: flavors and server creation
# (the API as any user sees it, with the plugin's driver underneath)
DEFAULT_REGEX = (r'^tlbbalance_tempest_plugin\.|'
                 r'^tempest\.api\.compute\.flavors\.|'
                 r'^tempest\.api\.compute\.servers\.test_create_server\.'
                 r'ServersTestJSON\.')


def tempest_conf(facts, top):
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
    sec('auth', admin_username='admin', admin_password='admin',
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
        live_migration=False, console_output=False, snapshot=False,
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
    sec('tlbbalance', host_access='local',
        local_cloud_facts=os.path.join(top, 'cloud.json'))
    ws = os.path.join(top, 'tempest')
    os.makedirs(os.path.join(ws, 'etc'), exist_ok=True)
    with open(os.path.join(ws, 'etc', 'tempest.conf'), 'w') as f:
        c.write(f)
    return ws


def totals(text):
    """(passed, failed, skipped) from tempest run's 'Totals' block."""
    def n(label):
        m = re.search(r'- %s: (\d+)' % label, text)
        return int(m.group(1)) if m else 0
    return n('Passed'), n('Failed') + n('Unexpected Success'), n('Skipped')


def main():
    top = cloud.top_dir()
    regex = os.environ.get('TLBB_TEMPEST_REGEX', DEFAULT_REGEX)
    conc = os.environ.get('TLBB_TEMPEST_CONCURRENCY', '2')
    rc_up = cloud.main(['up'])
    if rc_up:
        print('tempest: the cloud did not come up (logs: %s)'
              % os.path.join(top, 'log'))
        print('0 passed, 1 failed')
        return 1
    passed = failed = 0
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
        t0 = time.monotonic()
        p = subprocess.Popen([tempest, 'run', '--regex', regex,
                              '--concurrency', conc], cwd=ws,
                             env=dict(os.environ, **env),
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        out = []
        for line in p.stdout:
            sys.stdout.write(line)
            out.append(line)
        p.wait()
        passed, failed, skipped = totals(''.join(out))
        print('tempest run: rc %d in %.0f s: %d passed, %d failed, '
              '%d skipped' % (p.returncode, time.monotonic() - t0, passed,
                              failed, skipped))
        if p.returncode and not failed:
            failed = 1
        # a service that died mid-run is a failure, named
        state = procs.State(os.path.join(top, 'state.json'))
        dead = [n for n, _, alive in cloud.processes(state) if not alive]
        if dead:
            print('tempest: cloud services died during the run: %s '
                  '(logs in %s)' % (', '.join(dead),
                                    os.path.join(top, 'log')))
            failed += 1
    finally:
        if os.environ.get('TLBB_CLOUD_KEEP') == '1':
            print('TLBB_CLOUD_KEEP=1: the cloud stays up '
                  '(tools/cloud/cloud.py down)')
        elif cloud.main(['down']):
            print('tempest: teardown left something running')
            failed += 1
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
