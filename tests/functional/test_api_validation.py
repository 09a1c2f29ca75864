# SPDX-License-Identifier: Apache-2.0
"""nova-api rejects bad tlbbalance:* extra specs (microversion >= 2.86).

The validators come from the ``nova.api.extra_spec_validators`` entry point
of this package, loaded by nova's own stevedore manager.
"""

from nova.tests.functional.api import client

from nova_tlbbalance import module_defs

from . import base


class TestExtraSpecValidation(base.TLBBalanceTestBase):

    def setUp(self):
        super().setUp()
        self.flavor = self._create_flavor()

    def _post(self, specs):
        return self.admin_api.post_extra_spec(self.flavor,
                                              {'extra_specs': specs})

    def _assert_400(self, specs, *words):
        exc = self.assertRaises(client.OpenStackApiException, self._post,
                                specs)
        self.assertEqual(400, exc.response.status_code)
        text = exc.response.content.decode()
        for word in words:
            self.assertIn(word, text)
        return text

    def test_good_values_accepted(self):
        p = module_defs.param('imbalance_threshold')
        got = self._post({'tlbbalance:mode': 'balance',
                          'tlbbalance:backing': 'hugetlbfs',
                          'tlbbalance:tlbi_scope': 'cluster',
                          'tlbbalance:strict': 'True',
                          'tlbbalance:imbalance_threshold': str(p.max)})
        self.assertEqual(200, got.status)
        self.assertEqual('balance', got.body['extra_specs']['tlbbalance:mode'])

    def test_bad_mode(self):
        self._assert_400({'tlbbalance:mode': 'fast'}, 'tlbbalance:mode',
                         "'fast'", 'off | monitor | balance')

    def test_bad_backing(self):
        self._assert_400({'tlbbalance:backing': 'hugepages'},
                         'tlbbalance:backing', 'thp | hugetlbfs | none')

    def test_bad_tlbi_scope(self):
        self._assert_400({'tlbbalance:tlbi_scope': 'socket'},
                         'tlbbalance:tlbi_scope', 'none | die | cluster')

    def test_bad_strict(self):
        self._assert_400({'tlbbalance:strict': 'maybe'}, 'tlbbalance:strict',
                         'true | false')

    def test_bad_prefault(self):
        self._assert_400({'tlbbalance:prefault': 'lazy'},
                         'tlbbalance:prefault', "'lazy'", 'true | false')

    def test_prefault_false_accepted(self):
        got = self._post({'tlbbalance:mode': 'monitor',
                          'tlbbalance:prefault': 'false'})
        self.assertEqual(200, got.status)

    def test_every_param_range_from_module_defs(self):
        for p in module_defs.params():
            key = 'tlbbalance:' + p.name
            self._assert_400({key: str(p.max + 1)}, key,
                             '%d..%d' % (p.min, p.max))
            if p.min > 0:
                self._assert_400({key: str(p.min - 1)}, key)
            self._assert_400({key: 'lots'}, key)
            self._post({key: str(p.default)})

    def test_unknown_key_in_namespace(self):
        self._assert_400({'tlbbalance:treshold': '3'}, 'tlbbalance:treshold')

    def test_before_2_86_not_validated_then_build_fails_cleanly(self):
        # Old microversions skip extra-spec validation: the driver is the
        # last line; the instance goes to ERROR naming the key, no 500.
        self.admin_api.microversion = '2.85'
        self._post({'tlbbalance:mode': 'fast'})
        self.admin_api.microversion = 'latest'
        self.start_compute()
        server = self._create_server(flavor_id=self.flavor, networks='none',
                                     expected_state='ERROR')
        fault = self.fault(server)
        self.assertIn('tlbbalance:mode', fault['message'])
        self.assertIn('off | monitor | balance', fault['message'])
