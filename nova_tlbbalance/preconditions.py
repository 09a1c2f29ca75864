# SPDX-License-Identifier: Apache-2.0
"""What the host must offer before a tagged guest starts.

The strict-precondition part of :mod:`nova_tlbbalance.rules` (its
:class:`~nova_tlbbalance.rules.Unmet`): one check, three callers: the
libvirt hook's ``prepare`` phase (every start, nova or not), the nova driver
plugin before it hands a strict guest to libvirt, and the plugin's live
migration pre-check on the destination (:func:`strict_host`). The
plugin's check is what makes a strict build fail with its reason: a hook
refusal is a libvirt error to nova, which reschedules and ends with
"Exceeded maximum number of retries", the reason lost.

- hugetlbfs backing: enough free huge pages of the domain's size on the
  host NUMA nodes its memory is bound to;
- THP backing: host transparent huge pages not ``never``;
- the kernel module loaded (``need_module``; the hook registers the VM
  later, at ``started``, and says so there).

Standard library only (the hook imports it).
"""

from nova_tlbbalance import hostfacts
from nova_tlbbalance import modclient
from nova_tlbbalance import rules
from nova_tlbbalance.probes import domxml

Unmet = rules.Unmet


def hugepage_needs(dom, default_size, all_nodes):
    """{(page size, host nodes): pages needed} for a hugetlbfs domain."""
    def size_for(cell_id):
        for size, nodeset in dom.hugepages:
            if cell_id is not None and cell_id in nodeset:
                return size or default_size
        for size, nodeset in dom.hugepages:
            if not nodeset:
                return size or default_size
        return dom.hugepages[0][0] or default_size

    needs = {}
    units = ([(c.id, c.memory) for c in dom.cells] if dom.cells
             else [(None, dom.memory)])
    for cell_id, mem in units:
        size = size_for(cell_id)
        nodes = (dom.memnodes.get(cell_id) if cell_id is not None else None) \
            or dom.numa_nodeset or tuple(all_nodes)
        key = (size, tuple(sorted(nodes)))
        needs[key] = needs.get(key, 0) + -(-mem // size)
    return needs


def thp(sys_root='/sys'):
    """Host THP must not be ``never`` for THP backing."""
    mode = hostfacts.thp_mode(sys_root)
    if mode == 'never':
        raise Unmet('backing=thp but host transparent huge pages are '
                    'off (/sys/kernel/mm/transparent_hugepage/enabled '
                    '= never)')
    return 'thp %s' % (mode or 'unknown')


def memory(dom, pol, sys_root='/sys', proc_root='/proc'):
    """Check the backing the policy asks for; a line saying what was
    found, or Unmet."""
    if pol.backing == 'thp':
        return thp(sys_root)
    if pol.backing != 'hugetlbfs':
        return 'nothing to check'
    if not dom.uses_hugetlbfs:
        raise Unmet('backing=hugetlbfs but the domain has no '
                    '<memoryBacking><hugepages> (hw:mem_page_size)')
    default = hostfacts.default_hugepage_size(proc_root)
    if default is None:
        raise Unmet('backing=hugetlbfs but the host has no hugetlbfs '
                    '(no Hugepagesize in %s/meminfo)' % proc_root)
    free_by_size = {}
    short = []
    checked = []
    host_nodes = sorted(hostfacts.free_hugepages(default, sys_root))
    for (size, nodes), need in sorted(hugepage_needs(
            dom, default, host_nodes).items()):
        if size not in free_by_size:
            free_by_size[size] = hostfacts.free_hugepages(size, sys_root)
        free = free_by_size[size]
        have = sum(free.get(n, 0) for n in nodes)
        where = 'host node(s) %s' % domxml.format_cpuset(nodes)
        checked.append('%d x %d KiB on %s (%d free)'
                       % (need, size // 1024, where, have))
        if have < need:
            short.append('%d free %d KiB huge pages on %s, %d needed'
                         % (have, size // 1024, where, need))
    if short:
        raise Unmet('not enough huge pages: ' + '; '.join(short))
    return 'huge pages available: ' + '; '.join(checked)


def module(pol, configfs=None):
    """The kernel module must be loaded for a mode other than off."""
    if pol.mode == 'off':
        return 'mode off: no module needed'
    usable, why = modclient.Client(configfs).usable()
    if not usable:
        raise Unmet(why)
    return 'module loaded'


def check(dom, pol, sys_root='/sys', proc_root='/proc', configfs=None,
          need_module=True):
    """Every precondition of a strict start; the lines found, or Unmet."""
    found = [memory(dom, pol, sys_root, proc_root)]
    if need_module:
        found.append(module(pol, configfs))
    return found


def strict_host(policy, sys_root='/sys', configfs=None):
    """The strict preconditions a host must meet before a guest running
    ``policy`` moves there, judged without its domain XML (none exists on
    the destination yet): host THP not ``never`` for THP backing, the
    module loaded for a mode other than off. hugetlbfs pages are nova's
    claim on the destination (and the hook's ``prepare`` there). Returns
    the lines found, or raises Unmet. Only for a strict policy."""
    found = []
    if policy.backing == 'thp':
        found.append(thp(sys_root))
    found.append(module(policy, configfs))
    return found
