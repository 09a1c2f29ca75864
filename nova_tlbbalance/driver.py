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
"""

from oslo_log import log as logging

from nova import conf as nova_conf
from nova import exception
from nova.virt.libvirt import driver as libvirt_driver

from nova_tlbbalance import conf as tlbb_conf
from nova_tlbbalance import guest_config
from nova_tlbbalance import policy as tlbb_policy
from nova_tlbbalance.policy import Policy

CONF = nova_conf.CONF
tlbb_conf.register_opts(CONF)
LOG = logging.getLogger(__name__)

# <allocation threads='N'/> appeared in libvirt 8.2.0.
MIN_LIBVIRT_ALLOCATION_THREADS = (8, 2, 0)


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

    Raises TLBBalancePolicyInvalid naming the bad keys.
    """
    try:
        return Policy.from_extra_specs(instance.flavor.extra_specs,
                                       tlbb_conf.defaults(CONF))
    except ValueError as exc:
        raise TLBBalancePolicyInvalid(reason=str(exc)) from None


class TLBBalanceLibvirtDriver(libvirt_driver.LibvirtDriver):
    """LibvirtDriver whose guest XML carries the tlbbalance policy."""

    def _tlbb_huge_page_kib(self):
        return (CONF.tlbbalance.thp_page_size_kb or
                guest_config.read_hpage_pmd_kib())

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
        try:
            new_xml = guest_config.apply_to_domain_xml(
                xml, policy,
                huge_page_kib=self._tlbb_huge_page_kib(),
                allocation_threads=self._tlbb_allocation_threads())
        except guest_config.PolicyConflict as exc:
            # The flavor asks for something contradictory: a clear build
            # failure naming the keys (strict or not).
            raise TLBBalancePolicyInvalid(reason=str(exc)) from None
        except Exception as exc:
            if policy.strict:
                raise TLBBalancePolicyInvalid(
                    reason='cannot apply the policy (tlbbalance:strict='
                           'true): %s' % exc) from exc
            LOG.exception('tlbbalance: cannot apply the policy; the '
                          'instance runs with stock nova settings '
                          '(tlbbalance:strict=false)', instance=instance)
            return xml
        LOG.debug('tlbbalance: applied %s', policy, instance=instance)
        return new_xml
