# SPDX-License-Identifier: Apache-2.0
"""Plain libvirt domain XML for the tiny payload, before any policy.

The tlbbalance settings (``<memoryBacking>``, ``<metadata>``) are NOT written
here: callers pass this XML through the driver plugin's own code
(``tlbbalance domain apply``, i.e. ``guest_config.apply_to_domain_xml``), as
nova's driver does with the XML it generates. Standard library only.
"""

from xml.sax.saxutils import escape, quoteattr

QEMU_NS = 'http://libvirt.org/schemas/domain/qemu/1.0'


def payload_domain(name, payload, serial_log, mem_mib=256, vcpus=1,
                   pattern='seq', machine='pc', memfd=False, env=None,
                   emulator='/usr/bin/qemu-system-x86_64'):
    """A type='kvm' domain booting the payload (a multiboot ELF) directly.

    ``memfd``: back the RAM with a memfd (shared), the one backing whose
    host address QEMU aligns only to 4 KiB (used with ``env`` LD_PRELOAD
    to place it on purpose). ``env``: environment of the QEMU process
    (``<qemu:commandline><qemu:env>``).
    """
    backing = ''
    if memfd:
        backing = ("  <memoryBacking>\n"
                   "    <source type='memfd'/>\n"
                   "    <access mode='shared'/>\n"
                   "  </memoryBacking>\n")
    qemu_env = ''
    if env:
        qemu_env = '  <qemu:commandline>\n%s  </qemu:commandline>\n' % ''.join(
            '    <qemu:env name=%s value=%s/>\n' % (quoteattr(k), quoteattr(v))
            for k, v in env.items())
    return """<domain type='kvm' xmlns:qemu='%(ns)s'>
  <name>%(name)s</name>
  <memory unit='MiB'>%(mem)d</memory>
  <currentMemory unit='MiB'>%(mem)d</currentMemory>
%(backing)s  <vcpu placement='static'>%(vcpus)d</vcpu>
  <os>
    <type arch='x86_64' machine='%(machine)s'>hvm</type>
    <kernel>%(payload)s</kernel>
    <cmdline>%(cmdline)s</cmdline>
  </os>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>%(emulator)s</emulator>
    <serial type='file'>
      <source path=%(serial)s/>
      <target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
%(qemu_env)s</domain>
""" % {'ns': QEMU_NS, 'name': escape(name), 'mem': mem_mib,
       'backing': backing, 'vcpus': vcpus, 'machine': escape(machine),
       'payload': escape(payload), 'cmdline': escape('pattern=%s' % pattern),
       'emulator': escape(emulator), 'serial': quoteattr(serial_log),
       'qemu_env': qemu_env}
