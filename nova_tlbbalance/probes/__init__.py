# SPDX-License-Identifier: Apache-2.0
"""Host facts about running VMs, read from /proc, /sys and the domain XML.

Everything here is stdlib only (the libvirt hook uses part of it) and takes
its roots (``/proc``, ``/sys``) as parameters so unit tests can point them at
a temporary tree. libvirt itself is reached only from
:mod:`nova_tlbbalance.probes.libvirt_conn` (CLI only, never the hook).
"""
