import sys

from nova_tlbbalance.cli import main

sys.exit(main())
