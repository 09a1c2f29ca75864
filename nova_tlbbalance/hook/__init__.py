# SPDX-License-Identifier: Apache-2.0
"""The libvirt qemu hook's logic (libvirt-hooks/tlbbalance calls main()).

Stdlib only, imported lazily: an untagged domain costs a string search.
"""
