# SPDX-License-Identifier: Apache-2.0
"""tempest plugin of nova-tlbbalance: acts through the public APIs,
asserts on the compute hosts (see docs/tempest.md)."""
