# SPDX-License-Identifier: Apache-2.0
"""libvirt access for the CLI and the exporter (never for the hook).

libvirt-python, not ``virsh`` subprocesses: one connection serves every
domain, and QEMU monitor commands (HMP ``gpa2hva``, QMP ``query-stats``)
are one call each instead of one process each (``status`` over 50 VMs
would otherwise start a few hundred ``virsh`` processes). In a venv it is
``pip install libvirt-python`` (needs libvirt-dev, pkg-config, gcc); with
Debian's /usr/bin/python3 it is the python3-libvirt package.

Monitor commands mark the domain "custom-monitor" tainted in its libvirt
log; they are read-only queries. ``--no-monitor`` in the CLI skips them.
KVM's per-VM statistics also come without one: :meth:`Connection.vm_stats`
asks libvirt's domain statistics (``virsh domstats --vm``, libvirt >= 8.9),
which libvirt gathers itself and which taint nothing.
"""

import json
import re

DEFAULT_URI = 'qemu:///system'
_GPA2HVA = re.compile(r'Host virtual address for (0x[0-9a-f]+) \((.*)\) is '
                      r'(0x[0-9a-f]+)')


# virDomainStatsTypes.VIR_DOMAIN_STATS_VM (libvirt 8.9): KVM's per-VM
# statistics, named vm.<stat>.<cur|sum|max>
STATS_VM = 1 << 10
# virConnectGetAllDomainStatsFlags: running domains; do not wait for a
# domain whose job is busy (a migration), skip its monitor-fed stats
STATS_ACTIVE = 1
STATS_NOWAIT = 1 << 29
_VM_STAT = re.compile(r'^vm\.(.+)\.(cur|sum|max)$')


class LibvirtUnavailable(Exception):
    pass


def vm_stats_of(params):
    """{stat: value} of one domain's VIR_DOMAIN_STATS_VM record
    (``vm.pages_2m.cur`` -> ``pages_2m``); other keys are ignored."""
    out = {}
    for key, value in params.items():
        m = _VM_STAT.match(key)
        if m and not isinstance(value, str):
            out[m.group(1)] = value
    return out


def _libvirt():
    try:
        import libvirt
        import libvirt_qemu
    except ImportError as exc:
        raise LibvirtUnavailable(
            'cannot import libvirt-python (%s): pip install libvirt-python '
            '(needs libvirt-dev, pkg-config and gcc), or run with Debian\'s '
            '/usr/bin/python3 and python3-libvirt' % exc) from None
    return libvirt, libvirt_qemu


class Connection:
    def __init__(self, uri=DEFAULT_URI):
        self.libvirt, self.libvirt_qemu = _libvirt()
        # libvirt prints errors to stderr by default; we raise instead.
        self.libvirt.registerErrorHandler(lambda ctx, err: None, None)
        try:
            self.conn = self.libvirt.open(uri)
        except self.libvirt.libvirtError as exc:
            raise LibvirtUnavailable('cannot connect to %s: %s'
                                     % (uri, exc)) from None
        self.uri = uri

    def close(self):
        self.conn.close()

    def running(self):
        """[(name, live XML, domain handle)] of the running domains."""
        flags = self.libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE
        out = []
        for dom in self.conn.listAllDomains(flags):
            try:
                out.append((dom.name(), dom.XMLDesc(0), dom))
            except self.libvirt.libvirtError:
                continue        # stopped meanwhile
        return sorted(out, key=lambda t: t[0])

    def alive(self):
        """False once libvirtd is gone (a restart): open a new one."""
        try:
            return bool(self.conn.isAlive())
        except self.libvirt.libvirtError:
            return False

    def version(self):
        """libvirtd's version as "major.minor.micro", or None."""
        try:
            v = self.conn.getLibVersion()
        except self.libvirt.libvirtError:
            return None
        return '%d.%d.%d' % (v // 1000000, v // 1000 % 1000, v % 1000)

    def vm_stats(self):
        """{domain UUID: {stat: value}} of KVM's per-VM statistics of every
        running domain, from libvirt's domain statistics (no QEMU monitor
        command, so no "custom-monitor" taint); None when this libvirt
        does not have them (< 8.9). A TCG domain has none ({})."""
        if self.conn.getLibVersion() < 8009000:
            return None
        try:
            recs = self.conn.getAllDomainStats(
                STATS_VM, STATS_ACTIVE | STATS_NOWAIT)
        except self.libvirt.libvirtError as exc:
            if exc.get_error_code() in (
                    self.libvirt.VIR_ERR_NO_SUPPORT,
                    self.libvirt.VIR_ERR_INVALID_ARG):
                return None
            raise
        return {dom.UUIDString(): vm_stats_of(params)
                for dom, params in recs}

    def hmp(self, dom, command):
        return self.libvirt_qemu.qemuMonitorCommand(
            dom, command,
            self.libvirt_qemu.VIR_DOMAIN_QEMU_MONITOR_COMMAND_HMP)

    def qmp(self, dom, execute, arguments=None):
        cmd = {'execute': execute}
        if arguments:
            cmd['arguments'] = arguments
        reply = json.loads(self.libvirt_qemu.qemuMonitorCommand(
            dom, json.dumps(cmd), 0))
        if 'error' in reply:
            raise RuntimeError('QMP %s: %s' % (execute,
                                               reply['error'].get('desc')))
        return reply.get('return')

    def monitor(self, dom):
        """A :class:`Monitor` bound to ``dom``."""
        return Monitor(self, dom)


class Monitor:
    """QEMU monitor queries for one domain, as the probes use them."""

    def __init__(self, conn, dom):
        self.conn = conn
        self.dom = dom

    def gpa2hva(self, gpa):
        """(hva, memory region name) of guest-physical ``gpa``, or None."""
        out = self.conn.hmp(self.dom, 'gpa2hva 0x%x' % gpa)
        m = _GPA2HVA.search(out)
        if not m:
            return None
        return int(m.group(3), 16), m.group(2)

    def kvm_enabled(self):
        return bool(self.conn.qmp(self.dom, 'query-kvm').get('enabled'))

    def vm_stats(self):
        """{stat name: value} of QMP query-stats target vm ({} if none)."""
        ret = self.conn.qmp(self.dom, 'query-stats', {'target': 'vm'})
        out = {}
        for provider in ret or []:
            for s in provider.get('stats', []):
                out[s['name']] = s['value']
        return out
