# SPDX-License-Identifier: Apache-2.0
"""Loader shim: nova imports ``nova.virt.<compute_driver>``.

With ``[DEFAULT] compute_driver = tlbbalance.TLBBalanceLibvirtDriver`` nova
imports this module and takes the class from it. Only this package is
shipped: ``nova`` and ``nova.virt`` are nova's own.
"""

from nova_tlbbalance.driver import TLBBalanceLibvirtDriver

__all__ = ['TLBBalanceLibvirtDriver']
