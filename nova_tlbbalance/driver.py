# SPDX-License-Identifier: Apache-2.0
"""nova compute driver: nova's libvirt driver plus the tlbbalance policy.

Enable it on a compute host with::

    [DEFAULT]
    compute_driver = tlbbalance.TLBBalanceLibvirtDriver

(nova imports ``nova.virt.tlbbalance``, a shim shipped in this wheel.)

The only change to nova's behaviour: the guest XML of an instance whose
flavor carries ``tlbbalance:*`` extra specs (or of every instance, when
``[tlbbalance] default_mode`` is set) is passed through
:func:`nova_tlbbalance.guest_config.apply_to_domain_xml`. Everything else,
placement and CPU pinning included, is nova's own code. An untagged flavor's
XML is exactly what stock nova produces.

Where the XML is built:

- Boot, hard reboot, resize, cold migration, rebuild, evacuate: nova calls
  ``_get_guest_xml`` on the host that will run the guest; the policy comes
  from the instance's flavor (``instance.flavor``, copied into the instance
  at boot and resize) and this host's ``[tlbbalance] default_*`` options.
  The result is recorded in the domain's ``<metadata>``.
- Live migration: nova does not call ``_get_guest_xml``. The *source* host
  edits the running domain's XML for the destination
  (``nova.virt.libvirt.migration.get_updated_guest_xml``), and its
  ``_update_memory_backing_xml`` drops ``<source>`` and ``<allocation>`` (and
  adds file backing when the destination has ``[libvirt]
  file_backed_memory``). Three seams put the policy back:

  * ``check_can_live_migrate_source`` (the source's pre-check) reads the
    policy the guest runs with from the running domain's ``<metadata>``
    and carries it to the destination in the migrate data (the
    ``tlbbalance_policy`` field of :class:`LibvirtLiveMigrateData`). It
    also runs the source's XML step below once on the running domain's
    XML, so that a failure of it refuses the migration before it starts:
    once ``_live_migration_operation`` has begun, nova can only put a
    failed instance in ERROR.
  * ``check_source_migrate_data_at_dest`` (nova: "the last checks on the
    destination"; may raise MigrationPreCheckError) runs on the
    destination after the source's pre-check and its own resource claim,
    when nova knows the destination's vCPU pins
    (``migrate_data.dst_numa_info``) and file backing, and only the
    destination can read its own CPU topology and see its kernel module.
    There :func:`nova_tlbbalance.rules.check_destination` and, for a
    strict guest, :func:`nova_tlbbalance.preconditions.strict_host` judge
    the *running* policy carried in the migrate data, the one the
    destination XML keeps (not the flavor resolved against this host's
    ``[tlbbalance]`` options, which may differ): a refusal is a pre-check
    error, the guest stays ACTIVE on the source and the conductor tries
    another host.
  * ``_live_migration_operation`` runs on the source and hands nova's
    destination XML to libvirt through ``guest.migrate(destination_xml=)``.
    The override passes a :class:`_PolicyKeepingGuest` (same libvirt domain)
    whose ``migrate`` runs the XML through ``apply_to_domain_xml(...,
    migrating=True)`` first: the one call where the finished destination
    XML leaves nova, per migration, touching nothing else. Wrapping
    ``migration.get_updated_guest_xml`` instead would mean replacing a
    module attribute of nova's driver module, shared by every driver
    object in the process (the stock ``LibvirtDriver`` included).

  On the destination XML the policy is the one in the running domain's
  ``<metadata>``, not the flavor's: it is what the guest was started with
  and what the hook registers on both hosts, libvirt carries it with the
  domain, and a live migration must not change a running guest's memory
  configuration (which a flavor resolved against other ``[tlbbalance]
  default_*`` options could). A flavor that now resolves differently is
  logged; it applies at the next hard reboot. A guest started without a
  policy migrates as it runs.
"""

import functools

from oslo_log import log as logging

from nova import conf as nova_conf
from nova import exception
from nova.objects import base as nova_obj_base
from nova.objects import fields as nova_fields
from nova.objects import migrate_data as nova_migrate_data
from nova.virt.libvirt import driver as libvirt_driver
from nova.virt.libvirt import guest as libvirt_guest

from nova_tlbbalance import conf as tlbb_conf
from nova_tlbbalance import guest_config
from nova_tlbbalance import hostfacts
from nova_tlbbalance import modclient
from nova_tlbbalance import preconditions
from nova_tlbbalance import provider_config
from nova_tlbbalance import policy as tlbb_policy
from nova_tlbbalance import rules
from nova_tlbbalance.policy import Policy
from nova_tlbbalance.probes import domxml

CONF = nova_conf.CONF
tlbb_conf.register_opts(CONF)
LOG = logging.getLogger(__name__)

# Where the strict preconditions read the host (functional tests point
# them at a fake tree: nova's harness runs no kernel module).
SYS_ROOT = '/sys'
PROC_ROOT = '/proc'
CONFIGFS = None     # the module's configfs root; None: modclient's default

# <allocation threads='N'/> appeared in libvirt 8.2.0.
MIN_LIBVIRT_ALLOCATION_THREADS = (8, 2, 0)


# The migrate data field that carries the running policy from the source's
# pre-check to the destination's: the <tlbbalance:policy> element, '' for a
# guest running unmanaged; unset when the source did not send it.
POLICY_FIELD = 'tlbbalance_policy'


@nova_obj_base.NovaObjectRegistry.register
class LibvirtLiveMigrateData(nova_migrate_data.LibvirtLiveMigrateData):
    """nova's LibvirtLiveMigrateData plus one field: the running policy.

    Registered under nova's name and version, so nova's code in this
    process builds and deserialises this class (a subclass: every
    ``isinstance`` of nova's holds). The field is optional and
    nullable: a peer without the plugin ignores it when it receives it
    (oslo.versionedobjects reads only the fields it knows) and never sends
    it, and then the destination falls back to the flavor (see
    :meth:`TLBBalanceLibvirtDriver._tlbb_running_policy`).
    """

    fields = dict(nova_migrate_data.LibvirtLiveMigrateData.fields,
                  **{POLICY_FIELD: nova_fields.StringField(nullable=True)})


class TLBBalancePolicyInvalid(exception.InvalidInput):
    """The flavor's tlbbalance:* extra specs are bad or contradictory.

    An InvalidInput: nova's compute manager aborts the build (no
    reschedule) and records this message as the instance fault.
    """

    msg_fmt = '%(reason)s'

    def __init__(self, reason, **kwargs):
        # Every reason names its tlbbalance key ("tlbbalance:backing=...");
        # the others get the prefix once.
        if not reason.startswith(tlbb_policy.NS_PREFIX):
            reason = '%s: %s' % (tlbb_policy.NS_PREFIX, reason)
        super().__init__(reason=reason, **kwargs)


def instance_policy(instance):
    """The instance's Policy, or None when it is not managed.

    A ``tlbbalance:*`` key this release does not know (a newer release's,
    during a rolling upgrade: docs/upgrade.md) is logged and ignored; it
    refuses the instance only when the policy is strict and the key is a
    requirement (``tlbbalance:require_*``).

    Raises TLBBalancePolicyInvalid naming the bad keys.
    """
    try:
        policy = Policy.from_extra_specs(instance.flavor.extra_specs,
                                         tlbb_conf.defaults(CONF),
                                         tolerant=True)
    except ValueError as exc:
        raise TLBBalancePolicyInvalid(reason=str(exc)) from None
    if policy is None:
        return None
    for warning in policy.compat_warnings():
        LOG.warning('tlbbalance: host %s: %s', CONF.host, warning,
                    instance=instance)
    refusal = policy.refusal()
    if refusal:
        raise TLBBalancePolicyInvalid(
            reason='host %s: %s' % (CONF.host, refusal))
    return policy


def _under_policy(policy, step, error, what, otherwise, instance, log=True):
    """``step()``'s result, under the plugin's failure rules, or None.

    A PolicyConflict (the policy contradicts the guest or the host) raises
    ``error`` with its text, strict or not. Any other failure (a bug, an
    unreadable file) raises ``error`` when ``policy.strict``; otherwise it
    is logged (unless ``log`` is false; ``what`` failed, ``otherwise``
    happens instead) and None is returned.
    """
    try:
        return step()
    except guest_config.PolicyConflict as exc:
        raise error(reason=str(exc)) from None
    except Exception as exc:
        if policy.strict:
            raise error(reason='tlbbalance: cannot %s (tlbbalance:strict='
                               'true): %s' % (what, exc)) from exc
        if log:
            LOG.exception('tlbbalance: cannot %s; %s (tlbbalance:strict='
                          'false)', what, otherwise, instance=instance)
        return None


class TLBBalanceLibvirtDriver(libvirt_driver.LibvirtDriver):
    """LibvirtDriver whose guest XML carries the tlbbalance policy."""

    _tlbb_module_usable = None      # last state reported (None: never)

    def update_provider_tree(self, provider_tree, nodename,
                             allocations=None):
        """nova's, plus CUSTOM_TLBBALANCE_MODULE while the module can take
        registrations on this host (added and removed here, at every
        resource update: the trait follows the module within
        ``[DEFAULT] update_resources_interval``, docs/upgrade.md)."""
        super().update_provider_tree(provider_tree, nodename,
                                     allocations=allocations)
        if not CONF.tlbbalance.report_module_trait:
            return
        trait = provider_config.TRAIT_MODULE
        usable, why = modclient.Client(CONFIGFS).usable()
        if usable:
            provider_tree.add_traits(nodename, trait)
        else:
            provider_tree.remove_traits(nodename, trait)
        if usable != self._tlbb_module_usable:
            (LOG.info if usable else LOG.warning)(
                'tlbbalance: host %s: %s %s: %s', CONF.host, trait,
                'reported' if usable else 'withdrawn', why)
            self._tlbb_module_usable = usable

    def _tlbb_huge_page_kib(self):
        if CONF.tlbbalance.thp_page_size_kb:
            return CONF.tlbbalance.thp_page_size_kb
        size = hostfacts.hpage_pmd_size(SYS_ROOT)
        if size is None:
            LOG.warning('tlbbalance: cannot read the huge page size from '
                        '%s%s; guest memory is not rounded',
                        SYS_ROOT, hostfacts.HPAGE_PMD_SIZE)
            return None
        return size // 1024

    @staticmethod
    def _tlbb_topology(policy):
        """This host's CPU topology (the table the hook and ``verify``
        judge with), read only for a policy with a tlbi_scope."""
        if policy.tlbi_scope == 'none':
            return {}
        return hostfacts.cpu_topology(SYS_ROOT)

    def _tlbb_allocation_threads(self):
        return bool(CONF.tlbbalance.allocation_threads and
                    self._host.has_min_version(
                        lv_ver=MIN_LIBVIRT_ALLOCATION_THREADS))

    def _get_guest_xml(self, context, instance, network_info, disk_info,
                       image_meta, *args, **kwargs):
        xml = super()._get_guest_xml(context, instance, network_info,
                                     disk_info, image_meta, *args, **kwargs)
        policy = instance_policy(instance)
        if policy is None:
            return xml
        # A contradictory flavor fails the build, naming the keys.
        new_xml = _under_policy(
            policy, functools.partial(
                guest_config.apply_to_domain_xml, xml, policy,
                huge_page_kib=self._tlbb_huge_page_kib(),
                allocation_threads=self._tlbb_allocation_threads(),
                topology=self._tlbb_topology(policy)),
            TLBBalancePolicyInvalid, 'apply the policy',
            'the instance runs with stock nova settings', instance)
        if new_xml is None:
            return xml
        if policy.strict:
            self._tlbb_check_preconditions(new_xml, policy)
        LOG.debug('tlbbalance: applied %s', policy, instance=instance)
        return new_xml

    def _tlbb_check_preconditions(self, xml, policy):
        """A strict guest's host preconditions (free huge pages, host THP,
        the module), checked here so the build is aborted with the reason
        as its fault; the hook checks them again at start (after this it
        would refuse with a libvirt error, which nova reschedules and
        reports as 'Exceeded maximum number of retries')."""
        try:
            preconditions.check(domxml.parse(xml), policy, SYS_ROOT,
                                PROC_ROOT, CONFIGFS)
        except rules.Unmet as exc:
            raise TLBBalancePolicyInvalid(
                reason=rules.strict_unmet(CONF.host, exc)) from None

    # -- live migration (see the module docstring) --------------------------

    def check_source_migrate_data_at_dest(self, ctxt, instance, migrate_data,
                                          migration, limits, allocs):
        """On the destination: refuse it if it contradicts the policy the
        guest runs with."""
        self._tlbb_check_destination(instance, migrate_data)
        return super().check_source_migrate_data_at_dest(
            ctxt, instance, migrate_data, migration, limits, allocs)

    def _tlbb_running_policy(self, instance, migrate_data):
        """The policy the migrating guest runs with, as the source carried
        it (None: it runs unmanaged).

        A source that did not carry it (stock nova there, or a release
        before the field) leaves the flavor resolved against this host's
        ``[tlbbalance]`` options, the best guess left, said in the log.
        Raises TLBBalancePolicyInvalid for a flavor that does not parse.
        """
        if POLICY_FIELD in migrate_data.fields and \
                migrate_data.obj_attr_is_set(POLICY_FIELD) and \
                migrate_data.tlbbalance_policy is not None:
            carried = migrate_data.tlbbalance_policy
            if not carried:
                return None
            try:
                return Policy.from_xml(carried)
            except ValueError as exc:
                # The source found it in the domain's <metadata>; the XML
                # step there cannot read it either and migrates the guest
                # as nova made the XML.
                LOG.warning('tlbbalance: the source sent a policy this '
                            'host cannot read (%s); judging this host as '
                            'for an unmanaged guest', exc, instance=instance)
                return None
        policy = instance_policy(instance)
        if policy is not None:
            LOG.warning('tlbbalance: the source did not send the policy the '
                        'guest runs with (no %s in the migrate data: the '
                        'source runs without this plugin or an older one); '
                        'judging this host on the flavor and its own '
                        '[tlbbalance] options', POLICY_FIELD,
                        instance=instance)
        return policy

    def _tlbb_check_destination(self, instance, migrate_data):
        try:
            policy = self._tlbb_running_policy(instance, migrate_data)
        except TLBBalancePolicyInvalid as exc:
            LOG.warning('tlbbalance: not checking this host as a live '
                        'migration destination: %s', exc, instance=instance)
            return
        if policy is None:
            return
        pins = None
        numa = migrate_data.dst_numa_info \
            if 'dst_numa_info' in migrate_data else None
        if numa is not None and 'cpu_pins' in numa:
            pins = {int(vcpu): set(cpus)
                    for vcpu, cpus in numa.cpu_pins.items()}
        _under_policy(
            policy, functools.partial(
                rules.check_destination, policy,
                file_backed_memory=CONF.libvirt.file_backed_memory > 0,
                pins=pins, nvcpu=instance.flavor.vcpus,
                topology=self._tlbb_topology(policy)),
            exception.MigrationPreCheckError,
            'check this host as the live migration destination',
            'migrating anyway', instance)
        if policy.strict:
            _under_policy(
                policy, functools.partial(self._tlbb_strict_host, policy),
                exception.MigrationPreCheckError,
                'check this host as the live migration destination',
                'migrating anyway', instance)

    @staticmethod
    def _tlbb_strict_host(policy):
        """A strict guest's preconditions on this host, before it moves
        here (the boot path's :meth:`_tlbb_check_preconditions` without a
        domain XML: preconditions.strict_host)."""
        try:
            preconditions.strict_host(policy, SYS_ROOT, CONFIGFS)
        except rules.Unmet as exc:
            raise rules.Conflict('%s: %s' % (
                tlbb_policy.NS_PREFIX,
                rules.strict_unmet(CONF.host, exc))) from None

    def check_can_live_migrate_source(self, context, instance,
                                      dest_check_data,
                                      block_device_info=None):
        """On the source: carry the running policy; a dry run of the
        destination XML step.

        Puts the policy in the running domain's ``<metadata>`` into the
        migrate data (:data:`POLICY_FIELD`) for the destination's checks,
        and runs :meth:`_tlbb_destination_xml` on the running domain's XML,
        so that a failure it would meet once the migration runs (when nova
        can only put the instance in ERROR) refuses the migration here, the
        guest untouched. What depends on the destination (its file backing,
        its pins, its module) is checked there:
        :meth:`check_source_migrate_data_at_dest`.
        """
        data = super().check_can_live_migrate_source(
            context, instance, dest_check_data, block_device_info)
        xml = self._host.get_guest(instance).get_xml_desc(
            dump_migratable=True)
        if POLICY_FIELD in data.fields:
            try:
                running = Policy.from_domain_xml(xml)
            except ValueError:
                running = None      # logged by the XML step
            data.tlbbalance_policy = running.to_xml() if running else ''
        self._tlbb_destination_xml(instance, xml, dry_run=True)
        return data

    def _live_migration_operation(self, context, instance, dest,
                                  block_migration, migrate_data, guest,
                                  device_names):
        keeping = _PolicyKeepingGuest(
            guest, functools.partial(self._tlbb_destination_xml, instance))
        return super()._live_migration_operation(
            context, instance, dest, block_migration, migrate_data, keeping,
            device_names)

    def _tlbb_destination_xml(self, instance, xml, dry_run=False):
        """nova's destination XML with the running guest's policy kept.

        ``dry_run``: the pre-check (see check_can_live_migrate_source):
        refusals are MigrationPreCheckError; what would only be logged is
        logged once, by the real run.
        """
        error = exception.MigrationPreCheckError if dry_run \
            else exception.MigrationError
        try:
            policy = Policy.from_domain_xml(xml)
        except ValueError as exc:
            if not dry_run:
                LOG.warning('tlbbalance: the running domain has a bad '
                            'policy in its <metadata>; migrating it as nova '
                            'made the XML: %s', exc, instance=instance)
            return xml
        if not dry_run:
            self._tlbb_compare_flavor(instance, policy)
        if policy is None:
            return xml
        new_xml = _under_policy(
            policy, functools.partial(
                guest_config.apply_to_domain_xml, xml, policy,
                allocation_threads=self._tlbb_allocation_threads(),
                migrating=True),
            error, 'keep the policy on the destination',
            'the guest migrates with nova\'s XML', instance, log=not dry_run)
        if new_xml is None:
            return xml
        LOG.debug('tlbbalance: destination XML keeps %s', policy,
                  instance=instance)
        return new_xml

    def _tlbb_compare_flavor(self, instance, running):
        """Log when the flavor no longer gives the running guest's policy."""
        try:
            wanted = instance_policy(instance)
        except TLBBalancePolicyInvalid as exc:
            wanted = exc
        if wanted == running:
            return
        LOG.warning('tlbbalance: the guest runs with policy %s (from its '
                    'domain <metadata>; None: unmanaged) and keeps it on '
                    'the destination; the flavor and this host\'s '
                    '[tlbbalance] options now give %s, applied at the next '
                    'hard reboot', running, wanted, instance=instance)


class _PolicyKeepingGuest(libvirt_guest.Guest):
    """The guest being live migrated, for ``_live_migration_operation``.

    The same libvirt domain as ``guest``; ``migrate`` passes the
    ``destination_xml`` nova built (keyword, as nova calls it) through
    ``fix_xml`` before libvirt sees it.
    """

    def __init__(self, guest, fix_xml):
        super().__init__(guest._domain)
        self._tlbb_fix_xml = fix_xml

    def migrate(self, destination, *args, **kwargs):
        if kwargs.get('destination_xml') is not None:
            kwargs['destination_xml'] = self._tlbb_fix_xml(
                kwargs['destination_xml'])
        return super().migrate(destination, *args, **kwargs)
