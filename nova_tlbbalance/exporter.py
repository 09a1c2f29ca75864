# SPDX-License-Identifier: Apache-2.0
"""Prometheus metrics of the ``tlbbalance status`` data (prometheus_client).

:class:`Collector` is a custom collector: every scrape asks its ``source``
for the host facts and the VM reports (records.HostFacts and
records.VmReport, from probes/vmreport) and verify's verdicts,
and turns them into metric families through two tables, the one place that
knows which report field becomes which metric:

- :data:`HOST_METRICS` and :data:`VM_METRICS`: host and VM facts measured
  here (``tlbbalance_host_*``, ``tlbbalance_vm_*``), each a family name, a
  type, help and a function reading the value from the report;
- :data:`STAT_METRICS`: the module's per-VM statistics, one entry per line
  of kernel-module/core/tlbb_stats.def (read through module_defs, which
  gives their kind, type, unit and help text): the metric name, and help
  where it differs; the type and unit are the .def's (:data:`BASE_UNITS`
  turns the module's unit into a base unit). A text stat with a fixed
  set of values (controller state, dominant group) is an enum-style gauge,
  one series per possible value, 1 for the current one (a state change
  moves a 1, it does not start a new series); CPU lists are counts of
  CPUs; the counting backend, which changes only at registration, is an
  info metric.

Every VM series carries ``vm`` (the libvirt domain name) and ``uuid`` (the
domain UUID, which nova sets to the instance UUID). :func:`self_families`
adds the exporter's own: ``tlbbalance_up`` (libvirt answered the last
collection), ``tlbbalance_build_info`` and the collection's duration, time
and counts.

Types follow Prometheus's conventions: what only grows is a counter
(exposed with ``_total``), values are in base units (ratios 0-1, bytes),
and no name ends in a suffix Prometheus reserves (``_count``, ``_sum``,
``_bucket``) for a metric that is not a histogram or summary. The renames
this brought are listed in docs/cli.md.
"""

import collections
import gzip
import struct
import sys

from prometheus_client import core
from prometheus_client import exposition
from prometheus_client import registry as prom_registry

from nova_tlbbalance import module_defs
from nova_tlbbalance import module_status

GAUGE = 'gauge'
COUNTER = 'counter'
INFO = 'info'
ENUM = 'enum'       # a gauge, one series per value of ENUM_VALUES
COUNT = 'count'     # a gauge: the number of CPUs of a cpulist stat

VM_LABELS = ['vm', 'uuid']

# The values an ENUM stat can take: (label name, values), as the module
# prints them (kernel-module/core/tlbb_ctrl.c tlbb_state_name and
# tlbb_group_name, kernel-module/tlbb_vm.c tlbb_vm_state_name; a unit
# test reads them there). A value not listed (a newer module) is still
# exported, as one more series.
ENUM_VALUES = {
    'state': ('state', ('idle', 'sustain', 'counting', 'lowering',
                        'raising', 'forming', 'monitor', 'holding',
                        'exited', 'off')),
    'dominant': ('group', ('none', 'huge', 'small')),
}

Metric = collections.namedtuple('Metric', 'name type help value unit',
                                defaults=('',))
Metric.__doc__ = """A host or VM metric; ``value(report)`` gives a number,
a ``{label value: number}`` dict for its extra label (EXTRA_LABEL), or None
when the report does not have the fact; ``unit`` (OpenMetrics) ends the
name."""


def _huge_bytes(rep):
    cov = rep.coverage
    return None if cov is None else cov.anon_huge + cov.hugetlb


def _coverage(rep):
    return None if rep.coverage is None else rep.coverage.coverage


def _resident_coverage(rep):
    return None if rep.coverage is None else rep.coverage.resident_coverage


def _misaligned(rep):
    if rep.ranges is None or rep.page_size is None:
        return None
    return sum(1 for r in rep.ranges if r.misalignment)


def _vcpu_fact(field):
    return lambda rep: (None if rep.vcpus is None
                        else getattr(rep, field) or 0)


def _pin_mismatch(rep):
    if rep.vcpus is None:
        return None
    return sum(1 for v in rep.vcpus if not v.matches_pin)


def _registered(rep):
    if not rep.managed or rep.module is None:
        return None
    return int(rep.module.registered)


HOST_METRICS = (
    Metric('tlbbalance_host_module_loaded', GAUGE,
           'the tlbbalance kernel module is loaded (configfs present)',
           lambda h: int(h.module.loaded)),
    Metric('tlbbalance_host_dvmbm_enabled', GAUGE,
           'the host kernel limits TLBI broadcast per VM (DVMBM)',
           lambda h: int(bool(h.dvmbm.enabled))),
    Metric('tlbbalance_host_hpage_pmd_bytes', GAUGE,
           'host PMD huge page size', lambda h: h.hpage_pmd_size,
           'bytes'),
)

# The label of a dict-valued VM metric (besides vm).
EXTRA_LABEL = {'tlbbalance_vm_stage2_pages': 'size'}

VM_METRICS = (
    Metric('tlbbalance_vm_managed', GAUGE,
           'the domain carries a tlbbalance policy',
           lambda rep: int(rep.managed)),
    Metric('tlbbalance_vm_ram_bytes', GAUGE, 'guest RAM',
           lambda rep: rep.memory, 'bytes'),
    Metric('tlbbalance_vm_huge_bytes', GAUGE,
           'guest RAM backed by huge pages on the host '
           '(AnonHugePages+hugetlb)', _huge_bytes, 'bytes'),
    Metric('tlbbalance_vm_huge_coverage_ratio', GAUGE,
           'huge bytes / guest RAM', _coverage, 'ratio'),
    Metric('tlbbalance_vm_huge_resident_coverage_ratio', GAUGE,
           'huge bytes / resident guest RAM (what judges a VM that is not '
           'pre-faulted, tlbbalance:prefault=false)', _resident_coverage,
           'ratio'),
    Metric('tlbbalance_vm_misaligned_ranges', GAUGE,
           'guest RAM ranges whose HVA and GPA differ modulo the huge page',
           _misaligned),
    Metric('tlbbalance_vm_stage2_pages', GAUGE,
           'KVM stage-2 mappings by page size', lambda rep: rep.stage2),
    Metric('tlbbalance_vm_vcpus', GAUGE, 'vCPU threads',
           lambda rep: None if rep.vcpus is None else len(rep.vcpus)),
    Metric('tlbbalance_vm_vcpu_dies', GAUGE,
           'dies the vCPU threads may run on', _vcpu_fact('dies')),
    Metric('tlbbalance_vm_vcpu_clusters', GAUGE,
           'clusters the vCPU threads may run on', _vcpu_fact('clusters')),
    Metric('tlbbalance_vm_vcpu_pin_mismatch', GAUGE,
           'vCPU threads whose affinity differs from <vcpupin>',
           _pin_mismatch),
    Metric('tlbbalance_vm_registered', GAUGE,
           'registered with the kernel module', _registered),
)

VERIFY_METRIC = Metric('tlbbalance_vm_verify_failures', GAUGE,
                       'reasons tlbbalance verify gives', None)

Stat = collections.namedtuple('Stat', 'name help', defaults=(None,))
Stat.__doc__ = """How a module statistic is named: metric ``name`` and
``help`` (None: the .def's). Its type and unit are tlbb_stats.def's
columns (:func:`stat_metrics`)."""

STAT_METRICS = {
    'huge_pages': Stat('tlbbalance_huge_pages'),
    'huge_limit': Stat('tlbbalance_huge_limit'),
    'total_pages': Stat('tlbbalance_total_pages'),
    'refills_huge': Stat('tlbbalance_refills_huge_last_tick'),
    'refills_small': Stat('tlbbalance_refills_small_last_tick'),
    'refills_huge_total': Stat('tlbbalance_refills_huge'),
    'refills_small_total': Stat('tlbbalance_refills_small'),
    # permille in the module, a ratio here (BASE_UNITS)
    'load': Stat('tlbbalance_load_ratio',
                 'share of vCPU time estimated spent on refills in the '
                 'last tick, 0-1'),
    # not _count: Prometheus reserves it for histograms and summaries
    'load_count': Stat('tlbbalance_load_sustain_ticks',
                       'sustain counter C_L: ticks the load has stayed '
                       'above its threshold'),
    'imbalance': Stat('tlbbalance_imbalance'),
    'dominant': Stat('tlbbalance_dominant_group',
                     'TLB group with the higher per-entry refill rate '
                     '(1 for the current one)'),
    'state': Stat('tlbbalance_controller_state',
                  'controller state (1 for the current one)'),
    'splits': Stat('tlbbalance_splits'),
    'restores': Stat('tlbbalance_restores'),
    'ticks': Stat('tlbbalance_ticks'),
    'backend': Stat('tlbbalance_backend'),
    'cpus_allowed': Stat('tlbbalance_cpus_allowed',
                         "CPUs in the union of the vCPU threads' allowed "
                         "CPUs (the TLBI scope DVMBM would use)"),
    'cpus_ran': Stat('tlbbalance_cpus_ran',
                     'CPUs the vCPU threads were seen running on'),
}

# A unit of tlbb_stats.def -> (OpenMetrics unit, factor to it). Prometheus
# wants base units (ratios 0-1, bytes, seconds); a count of pages, refills,
# ticks or CPUs has none, so no unit ends its name.
BASE_UNITS = {
    'permille': ('ratio', 0.001),
    'pages': ('', 1),
    'refills': ('', 1),
    'ticks': ('', 1),
    'cpus': ('', 1),
    'none': ('', 1),
}

StatMetric = collections.namedtuple('StatMetric',
                                    'name type scale help unit')
StatMetric.__doc__ = """A module statistic as exposed: metric ``name``,
``type`` (GAUGE, COUNTER, INFO, ENUM or COUNT), ``scale`` (module value x
scale = base unit), ``help`` and OpenMetrics ``unit``."""


def stat_metric(stat):
    """The :class:`StatMetric` of module_defs.Stat ``stat``: its name and
    help from STAT_METRICS, its type and unit from tlbb_stats.def's
    columns. A gauge of text (``str``) is an enum-style gauge over
    ENUM_VALUES, a gauge of a CPU list the number of its CPUs. LookupError
    naming the stat for what this table cannot expose."""
    where = 'exporter: statistic %r of tlbb_stats.def' % stat.name
    if stat.name not in STAT_METRICS:
        raise LookupError('%s has no entry in STAT_METRICS' % where)
    if stat.unit not in BASE_UNITS:
        raise LookupError('%s: unit %r has no entry in BASE_UNITS'
                          % (where, stat.unit))
    sm = STAT_METRICS[stat.name]
    unit, scale = BASE_UNITS[stat.unit]
    typ = {'counter': COUNTER, 'gauge': GAUGE, 'info': INFO}[stat.type]
    if typ == INFO:
        if stat.kind != 'str':
            raise LookupError('%s: an info metric is text, not %s'
                              % (where, stat.kind))
        unit, scale = '', None
    elif stat.kind == 'str':
        if typ != GAUGE or stat.name not in ENUM_VALUES:
            raise LookupError('%s: a text %s needs its values in '
                              'ENUM_VALUES' % (where, stat.type))
        typ, unit, scale = ENUM, '', None
    elif stat.kind == 'cpulist':
        if typ != GAUGE:
            raise LookupError('%s: a CPU list is a gauge of its CPUs, not '
                              'a %s' % (where, stat.type))
        typ, scale = COUNT, None
    return StatMetric(sm.name, typ, scale, sm.help or stat.help, unit)


def _family(name, typ, help_, labels, unit=''):
    if typ == ENUM:
        typ = GAUGE
    if typ == COUNT:
        typ = GAUGE
    if typ == COUNTER:
        return core.CounterMetricFamily(name, help_, labels=labels,
                                        unit=unit)
    if typ == INFO:
        return core.InfoMetricFamily(name, help_, labels=labels)
    return core.GaugeMetricFamily(name, help_, labels=labels, unit=unit)


def _number(value, kind, scale):
    """A typed module stat (module_status) as a number in the base unit."""
    if kind == 'cpulist':
        return module_status.cpu_count(value)
    if scale == 1:
        return value
    # milli stats have three decimals: round off the float product's noise
    return round(value * scale, 9)


def stat_metrics():
    """(module_defs.Stat, StatMetric) for every .def line, in .def order;
    a stat the tables cannot expose is an error naming it."""
    return [(stat, stat_metric(stat)) for stat in module_defs.stats()]


def _vm_labels(rep):
    return [rep.name, rep.uuid or '']


def families(host, reps, verdicts=None):
    """The metric families for ``host`` facts, VM reports and verify's
    ``{vm name: [reasons]}``."""
    out = []
    for m in HOST_METRICS:
        fam = _family(m.name, m.type, m.help, [], m.unit)
        value = m.value(host)
        if value is not None:
            fam.add_metric([], value)
        out.append(fam)

    for m in VM_METRICS:
        extra = EXTRA_LABEL.get(m.name)
        fam = _family(m.name, m.type, m.help,
                      VM_LABELS + [extra] if extra else VM_LABELS, m.unit)
        for rep in reps:
            value = m.value(rep)
            if value is None:
                continue
            if extra:
                for key, v in sorted(value.items()):
                    fam.add_metric(_vm_labels(rep) + [key], v)
            else:
                fam.add_metric(_vm_labels(rep), value)
        out.append(fam)

    fam = _family(VERIFY_METRIC.name, VERIFY_METRIC.type, VERIFY_METRIC.help,
                  VM_LABELS)
    for rep in reps:
        if verdicts is not None and rep.name in verdicts:
            fam.add_metric(_vm_labels(rep), len(verdicts[rep.name]))
    out.append(fam)

    statuses = [(_vm_labels(rep), _module_status(rep)) for rep in reps]
    for stat, sm in stat_metrics():
        if sm.type == ENUM:
            label, values = ENUM_VALUES[stat.name]
            labels = VM_LABELS + [label]
        else:
            labels = VM_LABELS
        fam = _family(sm.name, sm.type, sm.help, labels, sm.unit)
        for vm, st in statuses:
            if not st or stat.name not in st:
                continue
            if sm.type == INFO:
                fam.add_metric(vm, {'value': st[stat.name]})
                continue
            if sm.type == ENUM:
                now = st[stat.name]
                for v in values + (() if now in values else (now,)):
                    fam.add_metric(vm + [v], int(v == now))
                continue
            fam.add_metric(vm, _number(st[stat.name], stat.kind, sm.scale))
        out.append(fam)
    return [fam for fam in out if fam.samples]


def _module_status(rep):
    mod = rep.module
    if not rep.managed or mod is None or not mod.registered:
        return None
    return mod.status


SelfState = collections.namedtuple(
    'SelfState', 'up version libvirt_version duration timestamp '
    'collections failures connections monitor_commands error',
    defaults=(None, None, 0.0, 0.0, 0, 0, 0, 0, None))
SelfState.__doc__ = """The exporter's own state after a collection:
``up`` (libvirt answered), build ``version``, ``libvirt_version``, the
collection's ``duration`` (s) and end ``timestamp`` (Unix s), and counts
since start: ``collections``, ``failures`` (libvirt unreachable),
libvirt ``connections`` opened, QEMU ``monitor_commands`` sent."""


def self_families(state):
    """tlbbalance_up, tlbbalance_build_info and the collection's own
    metrics: what a scrape has even while libvirt is down."""
    fams = []

    def gauge(name, help_, value, unit=''):
        fam = core.GaugeMetricFamily(name, help_, unit=unit)
        fam.add_metric([], value)
        fams.append(fam)

    def counter(name, help_, value):
        fam = core.CounterMetricFamily(name, help_)
        fam.add_metric([], value)
        fams.append(fam)
    gauge('tlbbalance_up', 'libvirt answered the last collection (1), '
          'or it could not be reached (0)', int(bool(state.up)))
    info = core.GaugeMetricFamily(
        'tlbbalance_build_info', 'the exporter\'s version and the '
        'libvirtd it talks to (always 1)',
        labels=['version', 'libvirt_version', 'python_version'])
    info.add_metric([state.version or 'unknown',
                     state.libvirt_version or '',
                     '%d.%d.%d' % tuple(sys.version_info[:3])],
                    1)
    fams.append(info)
    gauge('tlbbalance_collection_duration_seconds',
          'how long the last collection took', state.duration)
    gauge('tlbbalance_last_collection_timestamp_seconds',
          'when the last collection ended (Unix time)', state.timestamp)
    counter('tlbbalance_collections', 'collections run',
            state.collections)
    counter('tlbbalance_collection_failures',
            'collections that could not reach libvirt', state.failures)
    counter('tlbbalance_libvirt_connections',
            'libvirt connections opened (one, then one per reconnect)',
            state.connections)
    counter('tlbbalance_monitor_commands',
            'QEMU monitor commands sent (never to an untagged domain; to a '
            'tagged one at most once per RAM range per VM start)',
            state.monitor_commands)
    return fams


class _Static(prom_registry.Collector):
    def __init__(self, fams):
        self.fams = fams

    def collect(self):
        return iter(self.fams)


def registry(source):
    """A registry holding only our collector (no process/GC metrics);
    ``source()`` returns ``(host, reports, verdicts)``."""
    class Fresh(prom_registry.Collector):
        def collect(self):
            return iter(families(*source()))
    reg = prom_registry.CollectorRegistry(auto_describe=False)
    reg.register(Fresh())
    return reg


def render(host, reps, verdicts=None):
    """The text exposition format (0.0.4) for one set of data."""
    return exposition.generate_latest(
        registry(lambda: (host, reps, verdicts))).decode()


TEXT = 'text/plain; version=0.0.4; charset=utf-8'
OPENMETRICS = 'application/openmetrics-text; version=1.0.0; charset=utf-8'


class Snapshot:
    """One collection rendered once, in both formats, plain and gzipped:
    what every scrape until the next collection is served from."""

    KEYS = ((TEXT, False), (TEXT, True), (OPENMETRICS, False),
            (OPENMETRICS, True))

    def __init__(self, fams, timestamp, bodies=None):
        self.timestamp = timestamp
        if bodies is not None:
            self.bodies = dict(zip(self.KEYS, bodies))
            return
        from prometheus_client.openmetrics import exposition as om
        reg = prom_registry.CollectorRegistry(auto_describe=False)
        reg.register(_Static(fams))
        self.bodies = {}
        for ctype, gen in ((TEXT, exposition.generate_latest),
                           (OPENMETRICS, om.generate_latest)):
            body = gen(reg)
            self.bodies[(ctype, False)] = body
            self.bodies[(ctype, True)] = gzip.compress(body, 6, mtime=0)

    def to_bytes(self):
        """One frame for :meth:`read_from`: the four bodies, each after
        its length (8 bytes, big-endian)."""
        out = [struct.pack('>d', self.timestamp)]
        for key in self.KEYS:
            out += [struct.pack('>Q', len(self.bodies[key])),
                    self.bodies[key]]
        return b''.join(out)

    @classmethod
    def read_from(cls, f):
        """The next frame of the binary file ``f``, or None at its end."""
        head = f.read(8)
        if len(head) < 8:
            return None
        bodies = []
        for _ in cls.KEYS:
            size = f.read(8)
            if len(size) < 8:
                return None
            body = f.read(struct.unpack('>Q', size)[0])
            bodies.append(body)
        return cls(None, struct.unpack('>d', head)[0], bodies)

    def body(self, openmetrics=False, compressed=False):
        """(content type, bytes)."""
        ctype = OPENMETRICS if openmetrics else TEXT
        return ctype, self.bodies[(ctype, compressed)]

    def text(self):
        return self.bodies[(TEXT, False)].decode()


def build_version():
    from importlib import metadata
    try:
        return metadata.version('nova-tlbbalance')
    except metadata.PackageNotFoundError:
        return None


class CachedMonitor:
    """The QEMU monitor as the exporter may use it, for a tagged domain:
    each gpa2hva answer is asked once per VM start (the domain's UUID and
    libvirt ID: a new ID at every start) and kept; KVM's statistics come
    from libvirt's domain statistics, never from a monitor query at every
    collection."""

    def __init__(self, poller, dom):
        self.poller = poller
        self.dom = dom
        self.key = (dom.UUIDString(), dom.ID())

    def gpa2hva(self, gpa):
        cache = self.poller.gpa2hva_cache
        key = self.key + (gpa,)
        if key not in cache:
            self.poller.count_monitor_command()
            cache[key] = self.poller.conn.monitor(self.dom).gpa2hva(gpa)
        return cache[key]

    def vm_stats(self):
        raise RuntimeError(
            'not asked: this libvirt has no domain VM statistics (virsh '
            'domstats --vm, libvirt >= 8.9), and the exporter sends no '
            'query-stats monitor command at every collection')


class Poller:
    """Collects in a background thread every ``interval`` seconds over one
    long-lived libvirt connection (opened again after a failure) and keeps
    the last :class:`Snapshot`; scrapes read :attr:`snapshot` and never
    wait for libvirt.

    ``gather(conn, host)`` returns ``(reports, verdicts)`` using ``conn``;
    ``host_facts()`` the host facts (read even while libvirt is down);
    ``connect()`` opens a libvirt_conn.Connection."""

    def __init__(self, gather, host_facts, connect, interval=15.0,
                 clock=None):
        import threading
        import time
        self.gather = gather
        self.host_facts = host_facts
        self.connect = connect
        self.interval = interval
        self.clock = clock or time.time
        self.conn = None
        self.snapshot = None
        self.state = SelfState(up=False, version=build_version())
        self.gpa2hva_cache = {}
        self._lock = threading.Lock()
        self._monitor_commands = 0
        self._stop = threading.Event()
        self.ready = threading.Event()
        self._thread = None

    def count_monitor_command(self):
        with self._lock:
            self._monitor_commands += 1

    def monitor_for(self, dom):
        return CachedMonitor(self, dom)

    def _connection(self):
        if self.conn is not None and not self.conn.alive():
            self._drop()
        if self.conn is None:
            self.conn = self.connect()
            self.state = self.state._replace(
                connections=self.state.connections + 1,
                libvirt_version=self.conn.version())
        return self.conn

    def _drop(self):
        conn, self.conn = self.conn, None
        self.gpa2hva_cache.clear()
        if conn is not None:
            try:
                conn.close()
            except Exception:   # already broken: nothing to close
                pass

    def collect_once(self):
        """One collection; returns the new :class:`Snapshot`."""
        import time
        from nova_tlbbalance.probes import libvirt_conn
        t0 = time.monotonic()
        fams = []
        error = None
        try:
            host = self.host_facts()
        except Exception as exc:
            host, error = None, 'host facts: %s' % exc
        reps, verdicts, up = [], {}, False
        if host is not None:
            try:
                reps, verdicts = self.gather(self._connection(), host)
                up = True
            except libvirt_conn.LibvirtUnavailable as exc:
                error = str(exc)
                self._drop()
            except Exception as exc:
                # a libvirtError mid-collection: when libvirtd went away
                # (restarted) the next collection opens a new connection
                error = 'collection: %s' % exc
                conn = self.conn
                if conn is not None and (
                        isinstance(exc, getattr(getattr(conn, 'libvirt',
                                                        None),
                                                'libvirtError', ()))
                        or not conn.alive()):
                    self._drop()
        if up:
            live = {r.uuid for r in reps}
            for key in list(self.gpa2hva_cache):
                if key[0] not in live:
                    del self.gpa2hva_cache[key]
        if host is not None:
            fams = families(host, reps, verdicts)
        st = self.state
        with self._lock:
            monitor = self._monitor_commands
        self.state = st._replace(
            up=up, duration=time.monotonic() - t0, timestamp=self.clock(),
            collections=st.collections + 1,
            failures=st.failures + (not up), monitor_commands=monitor,
            error=error)
        snap = Snapshot(self_families(self.state) + fams,
                        self.state.timestamp)
        self.snapshot = snap
        self.ready.set()
        return snap

    def step(self):
        """One collection, its error (if any) said on stderr."""
        try:
            self.collect_once()
            err = self.state.error
            if err:
                sys.stderr.write('tlbbalance exporter: %s\n' % err)
                sys.stderr.flush()
        except Exception as exc:    # a bug: say it, keep serving
            sys.stderr.write('tlbbalance exporter: collection failed: '
                             '%r\n' % exc)
            sys.stderr.flush()

    def wait(self):
        """Sleep until the next collection; True when stopped."""
        return self._stop.wait(self.interval)

    def run(self):
        while not self._stop.is_set():
            self.step()
            self.wait()

    def start(self):
        import threading
        self._thread = threading.Thread(target=self.run, daemon=True,
                                        name='tlbbalance-collector')
        self._thread.start()

    def stop(self, timeout=30):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._drop()
