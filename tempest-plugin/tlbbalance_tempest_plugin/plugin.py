# SPDX-License-Identifier: Apache-2.0
"""Registered as ``tempest.test_plugins = tlbbalance`` (setup.cfg)."""

import os

from tempest.test_discover import plugins

from tlbbalance_tempest_plugin import config


class TLBBalanceTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        base = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        tests = os.path.join(base, 'tlbbalance_tempest_plugin', 'tests')
        return tests, base

    def register_opts(self, conf):
        conf.register_group(config.group)
        conf.register_opts(config.opts, group=config.group)

    def get_opt_lists(self):
        return [(config.group.name, config.opts)]
