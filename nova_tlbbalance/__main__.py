# SPDX-License-Identifier: Apache-2.0
import sys

from nova_tlbbalance.cli import main

sys.exit(main())
