# SPDX-License-Identifier: Apache-2.0
"""Front end of tlbsim, the grouped-TLB two-stage simulator (``tlbsim/``).

``engine`` runs the C simulator and reads its results, ``paper`` lays the
paper's configurations side by side, ``plots`` draws them (matplotlib).
"""
