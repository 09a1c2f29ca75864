# SPDX-License-Identifier: Apache-2.0
"""Reconcile: make the kernel module's state match the running domains.

What it does (``tlbbalance reconcile``, docs/cli.md; the hook's
``reconnect`` phase uses :func:`stale` and :func:`register` for one
domain):

- every running domain with a ``<tlbbalance:policy>`` in its
  ``<metadata>`` is registered with its policy's mode and parameters when
  the module does not hold it (no directory, or a directory without a
  pid: a module loaded after the VM started) or holds it stale (another
  pid, another mode, a parameter the policy sets at another value);
- a registration whose process is gone (pid 0 or no such process) and
  that no running managed domain claims is removed;
- a domain without a policy is never touched, nor a registration whose
  process still runs (someone registered it by hand);
- running it twice changes nothing the second time.

Registration goes through :class:`nova_tlbbalance.modclient.Client` (the
staged commit when the module has it). An error on one domain is reported
naming the domain and the others go on. Only the standard library is
used here; libvirt is asked by the caller (the CLI) for the running
domains and their XML, never by the hook.

Compatibility with other releases (docs/upgrade.md): a policy with names
this release does not know is managed without them (a warning names
each) and left alone only when strict asks for one of them; a module
whose interface version is newer than :data:`MODULE_INTERFACE` is used
for what this client knows; a parameter the module does not have is left
out of the registration, with a warning.
"""

import os

from nova_tlbbalance import modclient
from nova_tlbbalance import policy as policy_mod
from nova_tlbbalance import record
from nova_tlbbalance.shown import shown

# The configfs interface version this client knows (the module's
# ``version`` file, docs/kernel-module.md); a newer module keeps every
# file of this one (the interface only grows), so it is used as this one.
MODULE_INTERFACE = 1


@record.record
class Outcome:
    """What reconcile did, or found, for one domain or registration."""

    domain: str          # the libvirt domain name ('' for an orphan dir)
    vm: str              # the module's VM directory name ('' if none)
    action: str          # registered, re-registered, removed, unchanged,
    #                      skipped, error
    detail: str
    warnings: list = record.field(default_factory=list)

    @property
    def changed(self):
        return self.action in ('registered', 're-registered', 'removed')

    def line(self):
        who = self.domain or '(no domain)'
        if self.vm and self.vm != self.domain:
            who += ' [%s]' % self.vm
        return '%s: %s: %s' % (who, self.action, self.detail)


@record.record
class Report:
    """Every :class:`Outcome` of one run, domains first."""

    outcomes: list = record.field(default_factory=list)
    module: str = ''     # the module's state, one line
    warnings: list = record.field(default_factory=list)

    @property
    def changes(self):
        return [o for o in self.outcomes if o.changed]

    @property
    def errors(self):
        return [o for o in self.outcomes if o.action == 'error']

    def to_dict(self):
        return {
            'module': self.module,
            'warnings': list(self.warnings),
            'changed': len(self.changes),
            'errors': len(self.errors),
            'outcomes': [record.asdict(o) for o in self.outcomes],
        }


# -- what the module holds --------------------------------------------------

def _vm_path(client, vm):
    return os.path.join(client.root, 'vms', vm)


def held(client, vm, param_names=()):
    """What the module holds for ``vm``: {'pid': int, 'mode': str,
    <param>: str}, read attribute by attribute (the live values); None
    when there is no such directory. A file that cannot be read is left
    out (a module without that parameter)."""
    d = _vm_path(client, vm)
    if not os.path.isdir(d):
        return None
    out = {}
    for name in ('pid', 'mode') + tuple(param_names):
        try:
            with open(os.path.join(d, name)) as f:
                out[name] = f.read().strip()
        except OSError:
            continue
    try:
        out['pid'] = int(out.get('pid') or 0)
    except ValueError:
        out['pid'] = 0
    return out


def stale(client, vm, pid, pol):
    """Why the module's registration of ``vm`` is not what the policy and
    the running QEMU ``pid`` ask: a list of reasons, [] when it is; None
    when the module does not hold ``vm`` at all (no directory, or one
    without a pid)."""
    have = held(client, vm, tuple(pol.params))
    if have is None or not have['pid']:
        return None
    reasons = []
    if have['pid'] != pid:
        reasons.append('pid %d, QEMU is %d' % (have['pid'], pid))
    if have.get('mode') != pol.mode:
        reasons.append('mode %s, policy %s' % (have.get('mode'), pol.mode))
    for name, value in pol.params.items():
        if name in have and have[name] != str(value):
            reasons.append('%s %s, policy %s' % (name, have[name], value))
    return reasons


def interface_warning(client):
    """A warning when the module's interface version is not this
    client's (:data:`MODULE_INTERFACE`), else None."""
    try:
        text = client.version()
    except (OSError, modclient.ModuleAbsent) as exc:
        return 'cannot read the module\'s interface version: %s' % exc
    if not text.isdigit():
        return ('the module reports interface version %s, not a number; '
                'registering as version %d' % (shown(text), MODULE_INTERFACE))
    if int(text) > MODULE_INTERFACE:
        return ('the module\'s interface version %s is newer than this '
                'client\'s (%d): only what version %d has is used'
                % (text, MODULE_INTERFACE, MODULE_INTERFACE))
    return None


def register(client, vm, pid, threads, ranges, pol):
    """Register ``vm`` with ``pol``'s mode and parameters; a parameter the
    module has no file for (a module older than it) is left out. Returns
    the warnings (one per parameter left out). Raises
    modclient.ModuleError (and ValueError) as Client.register does."""
    warnings = []
    params = dict(pol.params)
    if params:
        d = _vm_path(client, vm)
        try:
            os.mkdir(d)         # Client.register re-uses it
        except FileExistsError:
            pass
        except OSError as exc:
            raise modclient.ModuleError(d, exc.errno, 'mkdir') from None
        for name in list(params):
            if not os.path.exists(os.path.join(d, name)):
                warnings.append(
                    'the loaded module has no parameter %s (older than '
                    'this client): registered without it' % name)
                del params[name]
    client.register(vm, pid, [t for _, t, _ in threads],
                    [(r.hva, r.length, r.gpa) for r in ranges],
                    mode=pol.mode, params=params)
    return warnings


# -- one domain -------------------------------------------------------------

def domain(name, xml, client, config, claimed=None):
    """Reconcile one running domain; an :class:`Outcome` (never raises
    for the domain's own faults: they are an 'error' outcome naming it).
    ``config``: the hook's settings (run_dir, proc, sys).
    ``claimed``: a set the domain's VM directory name is added to."""
    from nova_tlbbalance import rules           # as the hook judges it
    from nova_tlbbalance.probes import domxml
    try:
        pol = policy_mod.Policy.from_domain_xml(xml)
    except ValueError as exc:
        return Outcome(name, '', 'error', 'bad policy, not touched: %s'
                       % exc)
    if pol is None:
        return None                             # unmanaged: never touched
    warnings = pol.compat_warnings()
    try:
        dom = domxml.parse(xml)
        vm = modclient.vm_dir_name(dom.name, dom.uuid)
    except ValueError as exc:
        return Outcome(name, '', 'error', str(exc), warnings)
    if claimed is not None:
        claimed.add(vm)
    refusal = pol.refusal()
    if refusal:
        return Outcome(name, vm, 'error', 'not touched: %s' % refusal,
                       warnings)
    try:
        pid, threads, ranges, problems = rules.running(dom, pol, config)
    except (LookupError, OSError, ValueError) as exc:
        return Outcome(name, vm, 'error', 'cannot inspect its QEMU: %s'
                       % exc, warnings)
    warnings += problems
    reasons = stale(client, vm, pid, pol)
    if reasons == []:
        return Outcome(name, vm, 'unchanged', 'registered, pid %d, mode %s'
                       % (pid, pol.mode), warnings)
    try:
        warnings += register(client, vm, pid, threads, ranges, pol)
    except (modclient.ModuleError, ValueError, OSError) as exc:
        return Outcome(name, vm, 'error', 'registration refused: %s' % exc,
                       warnings)
    what = 'pid %d, mode %s, %d vCPU thread(s), %d range(s)%s' % (
        pid, pol.mode, len(threads), len(ranges),
        ', params %s' % ' '.join('%s=%s' % kv for kv in pol.params.items())
        if pol.params else '')
    if reasons is None:
        return Outcome(name, vm, 'registered', what, warnings)
    return Outcome(name, vm, 're-registered', '%s (was stale: %s)'
                   % (what, '; '.join(reasons)), warnings)


def _alive(pid, proc):
    return pid > 0 and os.path.exists(os.path.join(proc, str(pid)))


def _names(name, xml):
    """{directory name: domain} a domain's VM directory could have."""
    from nova_tlbbalance.probes import domxml
    try:
        uuid = domxml.parse(xml).uuid
    except ValueError:
        uuid = None
    return {n: name for n in (name, uuid) if n}


def orphans(client, claimed, proc='/proc', unmanaged=None):
    """Remove every registration no running managed domain claims whose
    process is gone; a list of :class:`Outcome`. ``unmanaged``: {VM
    directory name: domain} of running domains without a policy, whose
    directories are left alone."""
    out = []
    for vm in client.vms():
        if vm in claimed:
            continue
        if vm in (unmanaged or {}):
            out.append(Outcome(unmanaged[vm], vm, 'skipped', 'a running '
                               'domain without a tlbbalance policy: not '
                               'touched'))
            continue
        have = held(client, vm) or {'pid': 0}
        if _alive(have['pid'], proc):
            out.append(Outcome('', vm, 'skipped', 'no running managed '
                               'domain, but its process %d runs: left as '
                               'it is' % have['pid']))
            continue
        try:
            client.unregister(vm)
        except (modclient.ModuleError, ValueError) as exc:
            out.append(Outcome('', vm, 'error', 'cannot remove: %s' % exc))
            continue
        out.append(Outcome('', vm, 'removed', 'its process (pid %d) is gone'
                           % have['pid']))
    return out


def reconcile(domains, client, config):
    """Reconcile the module with ``domains``, an iterable of (name, live
    XML) of every running domain. Returns a :class:`Report`.

    With the module absent nothing is done (the report's ``module`` says
    so and every managed domain is an error naming it).
    """
    report = Report()
    domains = list(domains)
    if not client.present():
        report.module = 'not loaded (%s/vms missing)' % client.root
        for name, xml in domains:
            try:
                managed = policy_mod.Policy.from_domain_xml(xml) is not None
            except ValueError:
                managed = True
            if managed:
                report.outcomes.append(Outcome(
                    name, '', 'error', 'the tlbbalance module is not loaded '
                    '(%s/vms missing): not registered' % client.root))
        return report
    warning = interface_warning(client)
    if warning:
        report.warnings.append(warning)
    report.module = 'loaded, interface version %s' % (
        _read_version(client))
    claimed = set()
    unmanaged = {}      # VM directory name -> running unmanaged domain
    for name, xml in domains:
        try:
            outcome = domain(name, xml, client, config, claimed)
        except Exception as exc:    # a bug: still name it, go on
            outcome = Outcome(name, '', 'error', '%s: %s'
                              % (type(exc).__name__, exc))
        if outcome is not None:
            report.outcomes.append(outcome)
        else:
            unmanaged.update(_names(name, xml))
    report.outcomes += orphans(client, claimed, config.proc, unmanaged)
    return report


def _read_version(client):
    try:
        return client.version()
    except (OSError, modclient.ModuleAbsent) as exc:
        return '? (%s)' % (os.strerror(exc.errno)
                           if getattr(exc, 'errno', None) else exc)
