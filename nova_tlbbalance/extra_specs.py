# SPDX-License-Identifier: Apache-2.0
"""The one table of ``tlbbalance:*`` flavor extra specs.

Everything about the extra specs is derived from :data:`SPECS`: nova-api's
validators (:mod:`nova_tlbbalance.validators`), the policy parser
(:mod:`nova_tlbbalance.policy`) and the reference page
(``docs/extra-specs.md``, written by
``python -m nova_tlbbalance.extra_specs_doc``).

The five policy keys are defined here; the controller tunables come one per
line from ``kernel-module/core/tlbb_params.def`` through
:mod:`nova_tlbbalance.module_defs` (their limits and defaults are never
restated here); an enumerated one (``split_order``, ``method``) takes the
names of ``tlbb_choices.def`` as well as the numbers, and is carried as its
number (what releases before the names read and write).
"""

from nova_tlbbalance import module_defs
from nova_tlbbalance import record
from nova_tlbbalance.shown import shown

PREFIX = 'tlbbalance'

MODES = module_defs.mode_names()       # kernel-module/core/tlbb_modes.def
BACKINGS = ('thp', 'hugetlbfs', 'none')
TLBI_SCOPES = ('none', 'die', 'cluster')
BOOLEANS = ('true', 'false')

# Spellings accepted for the boolean key: the same set nova's own boolean
# extra specs accept (oslo_utils.strutils, strict); canonical: true / false.
_TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
_FALSE = ('0', 'f', 'false', 'off', 'n', 'no')


@record.record(frozen=True)
class Spec:
    """One ``tlbbalance:<name>`` extra spec."""

    name: str
    kind: str            # 'enum', 'bool' or 'int'
    default: object      # str for enum/bool, int for int
    description: str
    choices: tuple = ()  # enum and bool
    choice_help: tuple = ()  # enum: one line per choice, same order
    min: int = None      # int only
    max: int = None      # int only
    unit: str = ''       # int only
    param: bool = False  # True: a controller tunable from tlbb_params.def
    names: tuple = ()    # int: names of 0, 1, ... (tlbb_choices.def)
    # Policy keys: help of the compute host's [tlbbalance] default_<name>
    # option (nova_tlbbalance.conf makes one per policy key from this).
    host_default: str = ''

    @property
    def key(self):
        return '%s:%s' % (PREFIX, self.name)

    def allowed(self):
        """The allowed values, as words for an error message or a doc."""
        if self.kind == 'int':
            words = 'an integer %d..%d%s' % (
                self.min, self.max, ' (%s)' % self.unit if self.unit else '')
            if self.names:
                words = '%s, or %s' % (' | '.join(self.names), words)
            return words
        return ' | '.join(self.choices)

    def parse(self, value):
        """Return the canonical value of ``value``.

        Raises ValueError naming the key and the allowed values.
        """
        text = str(value).strip()
        if self.kind == 'enum':
            if text in self.choices:
                return text
        elif self.kind == 'bool':
            low = text.lower()
            if low in _TRUE:
                return 'true'
            if low in _FALSE:
                return 'false'
        elif text in self.names:
            return self.min + self.names.index(text)
        else:
            try:
                ivalue = int(text, 10)
            except ValueError:
                ivalue = None
            if ivalue is not None and self.min <= ivalue <= self.max:
                return ivalue
        raise ValueError('%s: invalid value %s; allowed: %s'
                         % (self.key, shown(value), self.allowed()))


def _policy_specs():
    return (
        Spec('mode', 'enum', 'off',
             'What the kernel module does for this VM.',
             choices=MODES,
             choice_help=tuple(m.help for m in module_defs.modes()),
             host_default='Policy mode for flavors that carry no '
             'tlbbalance:* extra spec. Unset (the default): such flavors '
             'are not managed and their guest XML is exactly stock '
             'nova\'s. Set it to manage every instance on this compute '
             'host.'),
        Spec('backing', 'enum', 'thp',
             'How guest RAM is backed on the host.',
             choices=BACKINGS,
             choice_help=(
                 'anonymous memory, transparent huge pages, allocated at '
                 'start; memory rounded down to whole huge pages',
                 'hugetlbfs pages: nova\'s hw:mem_page_size must be set '
                 'too',
                 'nova\'s memory backing, unchanged'),
             host_default='Backing used when a managed flavor does not set '
             'tlbbalance:backing.'),
        Spec('tlbi_scope', 'enum', 'none',
             'Required TLB-invalidate broadcast scope; die or cluster need '
             'hw:cpu_policy=dedicated (nova does the pinning, the plugin '
             'only checks it).',
             choices=TLBI_SCOPES,
             choice_help=(
                 'no requirement',
                 'all vCPUs pinned inside one die',
                 'all vCPUs pinned inside one cluster'),
             host_default='TLB-invalidate scope used when a managed flavor '
             'does not set tlbbalance:tlbi_scope.'),
        Spec('strict', 'bool', 'false',
             'true: a failure of the extension (module absent, not enough '
             'huge pages, misaligned RAM) fails the VM\'s start; false: it '
             'is logged and the VM runs.',
             choices=BOOLEANS,
             host_default='Strictness used when a managed flavor does not '
             'set tlbbalance:strict.'),
        Spec('prefault', 'bool', 'false',
             'backing=thp only: false (the default) leaves guest RAM to be '
             'faulted in as the guest touches it (madvised for THP, so '
             'huge where aligned: the RAM a guest touches is huge as it '
             'touches it; verify judges the huge share of the resident '
             'RAM); true allocates and zeroes all guest RAM before the '
             'guest runs (libvirt allocation mode immediate: a slower '
             'start, all RAM committed and huge at ACTIVE, which defeats '
             'nova\'s ram_allocation_ratio). Ignored with '
             'backing=hugetlbfs (the pages are reserved anyway) and '
             'backing=none (nova\'s backing, unchanged).',
             choices=BOOLEANS,
             host_default='Pre-faulting of THP-backed guest RAM used when '
             'a managed flavor does not set tlbbalance:prefault (true: all '
             'guest RAM allocated and huge before the guest runs, the '
             'default before 2026-11; false: faulted in as the guest '
             'touches it, so nova\'s RAM overcommit works).'),
    )


def _param_specs():
    return tuple(
        Spec(p.name, 'int', p.default,
             'Overrides the kernel module\'s default for this VM: %s.'
             % p.help,
             min=p.min, max=p.max, unit=p.unit, param=True,
             names=p.names(),
             choice_help=tuple(c.help for c in p.choices))
        for p in module_defs.params())


SPECS = _policy_specs() + _param_specs()
BY_KEY = {s.key: s for s in SPECS}
POLICY_KEYS = tuple(s.key for s in SPECS if not s.param)
PARAM_NAMES = tuple(s.name for s in SPECS if s.param)


def spec(key):
    """The :class:`Spec` for ``key`` (``tlbbalance:...``).

    Raises ValueError naming the key and listing the known ones.
    """
    try:
        return BY_KEY[key]
    except KeyError:
        raise ValueError('unknown extra spec %s; known: %s'
                         % (shown(key), ', '.join(BY_KEY))) from None


def ours(extra_specs):
    """The ``tlbbalance:*`` items of a flavor's extra specs, as a dict."""
    return {k: v for k, v in (extra_specs or {}).items()
            if k.startswith(PREFIX + ':')}
