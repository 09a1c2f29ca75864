# SPDX-License-Identifier: Apache-2.0
"""Run inside a Debian root by tests/packaging/test_distro.py, with the
Python nova runs from: nova loads its compute driver as nova-compute does
and nova-api's extra-spec validators check a ``tlbbalance:`` key.

``nova-compute`` parses its configuration (``config.parse_args`` with
Debian's /etc/nova/nova.conf and a file setting ``compute_driver``),
registers nova's objects and, in ``ComputeManager.__init__``, calls
``nova.virt.driver.load_compute_driver``; this does the same, minus the
manager's clients for placement and the conductor, which need a running
cloud before the manager gets to the driver. nova-compute's own
``main()`` cannot be used here: it waits for the conductor over RPC
before it creates the manager. Prints one JSON object.

    python3 nova_loader.py CONF_FILE
"""

import json
import sys


def main(conf):
    from nova import config
    from nova import objects
    from nova import version
    from nova.virt import driver
    from nova.virt import virtapi

    config.parse_args(['nova-compute', '--config-file',
                       '/etc/nova/nova.conf', '--config-file', conf])
    objects.register_all()
    out = {'nova': version.version_string(),
           'python': sys.executable,
           'compute_driver': driver.CONF.compute_driver}
    try:
        drv = driver.load_compute_driver(virtapi.VirtAPI())
    except SystemExit as exc:
        # load_compute_driver logs "Unable to load the virtualization
        # driver" with the ImportError, then exits 1
        out['loaded'] = None
        out['exit'] = exc.code
        return out
    cls = type(drv)
    out['loaded'] = '%s.%s' % (cls.__module__, cls.__name__)
    out['mro'] = ['%s.%s' % (c.__module__, c.__name__)
                  for c in cls.__mro__]
    out['shim'] = sys.modules['nova.virt.tlbbalance'].__file__
    out['package'] = sys.modules['nova_tlbbalance'].__file__

    # nova-api: the validators found through the entry point, as nova-api
    # applies them from microversion 2.86
    from nova.api.validation.extra_specs import validators
    from nova import exception
    try:
        validators.validate('tlbbalance:mode', 'bogus')
        out['bogus'] = 'accepted'
    except exception.ValidationError as exc:
        out['bogus'] = str(exc)
    validators.validate('tlbbalance:mode', 'monitor')
    return out


if __name__ == '__main__':
    print(json.dumps(main(sys.argv[1])))
