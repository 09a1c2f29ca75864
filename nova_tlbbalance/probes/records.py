# SPDX-License-Identifier: Apache-2.0
"""The typed records of ``tlbbalance status`` (``--json``), ``verify`` and
the exporter: the host facts and one report per running VM.

Every field is always there: a fact that could not be read is ``None``
(``null`` in JSON) and the reason is in the VM's ``errors``; a list that
could not be read is ``None`` too, an empty list means "read, none".
The JSON form is :func:`document` (``schema_version``, ``host``, ``vms``),
described by ``docs/schemas/vm-report.schema.json``; bump
:data:`SCHEMA_VERSION` for any change a reader could notice (a field
renamed, removed or retyped), not for a field added.

Adding a per-VM attribute: a field here (with its meaning in the class
docstring), the line that fills it in :mod:`vmreport`, its entry in the
JSON Schema (the schema test fails until it is there).
"""

import dataclasses
from typing import Dict, List, Optional, Union

from nova_tlbbalance import policy as policy_mod

SCHEMA_VERSION = 2


@dataclasses.dataclass
class Dvmbm:
    """Whether the host kernel limits TLBI broadcast per VM, and why we
    think so (hostfacts.dvmbm)."""
    enabled: bool
    source: str


@dataclasses.dataclass
class ModulePresence:
    """The kernel module: ``loaded`` (its configfs tree exists) at
    ``configfs``."""
    loaded: bool
    configfs: str


@dataclasses.dataclass
class HostFacts:
    """``thp``: THP mode ('' unknown); ``hpage_pmd_size``: bytes, None
    unknown; ``cpus``/``dies``/``clusters``: of known place; ``topology``:
    {cpu: hostfacts.CpuIds}, internal (not in the JSON form)."""
    thp: str
    hpage_pmd_size: Optional[int]
    cpus: int
    dies: int
    clusters: int
    dvmbm: Dvmbm
    module: ModulePresence
    topology: dict = dataclasses.field(default_factory=dict, repr=False)

    def to_json(self):
        out = dataclasses.asdict(self)
        del out['topology']
        return out


@dataclasses.dataclass
class RamRange:
    """One guest RAM range: host address ``hva`` (from
    /proc/<pid>/maps, or QEMU's gpa2hva: ``hva_source``) of guest address
    ``gpa``; ``misalignment``: (hva - gpa) modulo the huge page, None when
    the page size is unknown; ``gpa2hva``/``gpa2hva_region``: QEMU's own
    answer when asked (None otherwise)."""
    block: str
    gpa: int
    hva: int
    length: int
    misalignment: Optional[int]
    ambiguous: bool
    hva_source: str
    gpa2hva: Optional[int] = None
    gpa2hva_region: Optional[str] = None


@dataclasses.dataclass
class Coverage:
    """Bytes of the guest RAM VMAs (proc.smaps_huge): ``size`` asked for,
    ``anon_huge``, ``hugetlb``, ``rss``, ``kernel_page`` (largest page
    seen), ``coverage`` = huge bytes / size and ``resident_coverage`` =
    huge bytes / resident bytes (rss + hugetlb; None when nothing is
    resident), what judges a VM that is not pre-faulted."""
    size: int
    anon_huge: int
    hugetlb: int
    rss: int
    kernel_page: int
    coverage: float
    resident_coverage: Optional[float] = None


@dataclasses.dataclass
class Vcpu:
    """One vCPU thread: ``vcpu`` index (None: one thread runs all, TCG),
    ``affinity`` and ``pinned`` (<vcpupin>, None unpinned) as cpusets."""
    vcpu: Optional[int]
    tid: int
    accel: str
    affinity: str
    pinned: Optional[str]
    matches_pin: bool


@dataclasses.dataclass
class ModuleState:
    """The VM in the kernel module: ``registered`` (its directory exists
    and holds QEMU's pid), ``dir`` (its directory name), ``reason`` when
    not registered, ``status`` (the ``status`` attribute, typed once by
    module_status.parse: ints, floats for milli stats, text; a line that
    did not parse is left out and named in the VM's ``errors``),
    ``limiter`` (why the limiter cannot hold it,
    module_status.limiter_problem)."""
    registered: bool
    dir: Optional[str] = None
    reason: Optional[str] = None
    status: Optional[Dict[str, Union[int, float, str]]] = None
    limiter: Optional[str] = None


@dataclasses.dataclass
class VmReport:
    """One running domain. ``errors``: facts that could not be read (each
    names it); ``notes``: facts read another way than usual. ``memory``:
    guest RAM bytes; ``backing``: describe_backing text; ``managed``: the
    domain carries a tlbbalance policy; ``page_size``: the huge page its
    RAM must be aligned to (None unknown); ``aligned``: every range
    aligned (None: not checked); ``accel``: of the vCPU threads;
    ``cpus_allowed``: union of their affinities; ``dies``/``clusters``:
    how many those CPUs span; ``stage2``: KVM stage-2 mappings by page
    size, or None with the reason in ``stage2_unavailable``."""
    name: str
    errors: List[str] = dataclasses.field(default_factory=list)
    notes: List[str] = dataclasses.field(default_factory=list)
    uuid: Optional[str] = None
    virt_type: Optional[str] = None
    machine: Optional[str] = None
    memory: Optional[int] = None
    backing: Optional[str] = None
    managed: bool = False
    policy: Optional[policy_mod.Policy] = None
    pid: Optional[int] = None
    page_size: Optional[int] = None
    ranges: Optional[List[RamRange]] = None
    aligned: Optional[bool] = None
    coverage: Optional[Coverage] = None
    vcpus: Optional[List[Vcpu]] = None
    accel: Optional[str] = None
    cpus_allowed: Optional[str] = None
    dies: Optional[int] = None
    clusters: Optional[int] = None
    stage2: Optional[Dict[str, int]] = None
    stage2_unavailable: Optional[str] = None
    module: Optional[ModuleState] = None

    def to_json(self):
        # the Policy is no dataclass: its own JSON, not asdict's deep copy
        out = dataclasses.asdict(dataclasses.replace(self, policy=None))
        out['policy'] = self.policy and self.policy.to_json()
        return out


def document(host, reps):
    """The ``status --json`` document."""
    return {'schema_version': SCHEMA_VERSION, 'host': host.to_json(),
            'vms': [r.to_json() for r in reps]}
