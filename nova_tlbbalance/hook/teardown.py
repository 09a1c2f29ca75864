# SPDX-License-Identifier: Apache-2.0
"""stopped / release of a tagged domain: switch off, then unregister.

Kept apart from the start-up phases so that it imports only the configfs
client: no policy parsing is needed to take a VM out of the module (the
directory is named from the domain name or UUID). These phases never fail.
"""

import re

from nova_tlbbalance import modclient
from nova_tlbbalance.hook import detach
from nova_tlbbalance.hook.common import bounded
from nova_tlbbalance.hook.common import ms
from nova_tlbbalance.hook.common import setup

_UUID = re.compile(rb'<uuid>\s*([0-9a-fA-F-]{36})\s*</uuid>')


def stopped(client, vm, log):
    if not client.present():
        return 'module absent'
    return 'switched off' if client.stop(vm) else 'was not registered'


def release(client, vm, log):
    if not client.present():
        return 'module absent'
    if client.exists(vm):
        try:
            client.stop(vm)     # lifts any limit; rmdir does too
        except modclient.ModuleError as exc:
            log('warning', 'VM %s: %s' % (vm, exc))
    return 'unregistered' if client.unregister(vm) else 'was not registered'


def _vm(name, data):
    m = _UUID.search(data)
    return modclient.vm_dir_name(name, m.group(1).decode() if m else None)


def run(name, op, sub, data, t0, conf=None):
    config, log = setup(conf)
    client = modclient.Client(config.configfs)
    func = stopped if op == 'stopped' else release

    def phase():
        # a background `started` of this domain finishes first
        detach.wait_pending(config.state_dir, name)
        return func(client, _vm(name, data), log)
    result, _ = bounded(config.timeout, phase)
    log.record(domain=name, phase=op, sub=sub, rc=0, result=result,
               elapsed_ms=ms(t0))
    return 0
