# SPDX-License-Identifier: Apache-2.0
"""The ``[tlbbalance]`` group of tempest.conf."""

from oslo_config import cfg

group = cfg.OptGroup(
    name='tlbbalance',
    title='nova-tlbbalance: how the tests reach the compute hosts')

opts = [
    cfg.StrOpt('host_access', default='ssh', choices=['ssh', 'local'],
               help='How a test reaches a compute host to assert on it. '
                    'ssh: as whitebox-tempest-plugin does, to each '
                    'compute host (ssh_* options). local: the cloud in a '
                    'box on the machine running tempest '
                    '(tools/cloud/cloud.py), read from local_cloud_facts.'),
    cfg.StrOpt('local_cloud_facts', default='',
               help='host_access=local: path of the cloud in a box\'s '
                    'cloud.json (each compute host\'s command prefix and '
                    'libvirt URI).'),
    cfg.DictOpt('ssh_hosts', default={},
                help='host_access=ssh: compute service host name -> '
                     'address to SSH to (default: the host name itself).'),
    cfg.StrOpt('ssh_user', default='tempest',
               help='SSH user: a user of its own, not root; what needs '
                    'root goes through sudo -n under the rule of '
                    'docs/tempest.md.'),
    cfg.StrOpt('ssh_key_file', default='',
               help='SSH private key file (default: the agent/defaults).'),
    cfg.IntOpt('ssh_port', default=22, help='SSH port.'),
    cfg.StrOpt('ssh_known_hosts_file', default='',
               help='A known hosts file (OpenSSH format) with the compute '
                    'hosts\' keys, read besides /etc/ssh/ssh_known_hosts '
                    'and ~/.ssh/known_hosts. A host whose key is in none '
                    'of them, or differs, is refused (never added).'),
    cfg.BoolOpt('ssh_sudo', default=True,
                help='Prefix the host commands that need root with sudo -n '
                     'when ssh_user is not root (the probes read '
                     '/proc/<qemu pid> and configfs).'),
    cfg.StrOpt('cli', default='tlbbalance',
               help='The tlbbalance command on the compute hosts (it must '
                    'run with the nova_tlbbalance installed there).'),
    cfg.StrOpt('libvirt_uri', default='qemu:///system',
               help='libvirt URI on the compute hosts (ssh access).'),
    cfg.StrOpt('hugetlbfs_mount', default='/dev/hugepages',
               help='hugetlbfs mount on the compute hosts (ssh access; '
                    'the local cloud names its own).'),
    cfg.StrOpt('module_trait', default='CUSTOM_TLBBALANCE_MODULE',
               help='Placement trait of compute hosts with tlbbalance.ko '
                    'loaded; flavors that need the module require it.'),
    cfg.BoolOpt('module_host_required', default=False,
                help='A compute host with the module trait is expected '
                     '(the cloud in a box with its kvm host): the module '
                     'tests fail instead of skipping when none has it.'),
    cfg.FloatOpt('thp_coverage_min', default=99.0,
                 help='Minimum share of guest RAM on huge pages, percent, '
                      'for a THP-backed server.'),
    cfg.IntOpt('thp_coverage_timeout', default=10,
               help='Seconds after ACTIVE within which the coverage must '
                    'be reached.'),
    cfg.ListOpt('live_migration_hosts', default=[],
                help='Compute hosts the live-migration test moves a server '
                     'between (the first two listed; they must be able to '
                     'live-migrate to each other). Empty: the test skips. '
                     'The cloud in a box names its two fast hosts.'),
    cfg.ListOpt('mixed_version_hosts', default=[],
                help='Two compute hosts of two releases: the first on '
                     'release N-1, the second on N. The mixed-version '
                     'test boots, cold-migrates and resizes servers '
                     'between them. Empty: the test skips. The cloud in a '
                     'box names its N-1 host (TLBB_CLOUD_RELEASE_N1) and '
                     'another fast host.'),
    cfg.IntOpt('live_migration_timeout', default=180,
               help='Seconds a live migration of the test\'s small server '
                    'may take, from the API call to ACTIVE on the '
                    'destination.'),
    cfg.IntOpt('host_check_timeout', default=60,
               help='Seconds a host-side check (registration gone after '
                    'delete, the XML after a resize) may take to follow '
                    'the API.'),
]
