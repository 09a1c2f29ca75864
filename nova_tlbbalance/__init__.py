"""nova-tlbbalance: huge pages that pay off for KVM guests."""
