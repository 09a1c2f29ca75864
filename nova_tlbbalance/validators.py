# SPDX-License-Identifier: Apache-2.0
"""nova-api validators for the ``tlbbalance:*`` flavor extra specs.

Loaded by nova through the ``nova.api.extra_spec_validators`` entry point;
applied by nova-api from microversion 2.86 on. Everything comes from the
table in :mod:`nova_tlbbalance.extra_specs`; the error message names the key
and its allowed values.
"""

from nova.api.validation.extra_specs import base
from nova import exception

from nova_tlbbalance import extra_specs as es


class TLBBalanceSpecValidator(base.ExtraSpecValidator):
    """nova's validator, with our table's parsing and error message."""

    def validate(self, name, value):
        try:
            es.spec(name).parse(value)
        except ValueError as exc:
            raise exception.ValidationError(
                'Validation failed; %s.' % exc) from None


def _value(spec):
    if spec.kind == 'int' and spec.names:
        return {'type': str, 'description': spec.allowed()}
    if spec.kind == 'int':
        return {'type': int, 'min': spec.min, 'max': spec.max,
                'description': spec.unit}
    if spec.kind == 'bool':
        return {'type': bool, 'description': 'true or false'}
    return {'type': str, 'enum': spec.choices,
            'description': ' | '.join(spec.choices)}


def register():
    return [TLBBalanceSpecValidator(name=s.key, description=s.description,
                                    value=_value(s))
            for s in es.SPECS]
