# SPDX-License-Identifier: Apache-2.0
# The two commands of the README.
#   make demo   the main job: a compute node in a box, a VM balanced for real
#   make test   install everything this needs on Debian, run every test suite
# And:
#   make deb    the Debian packages (tlbbalance-dkms, python3-nova-tlbbalance)
#               built from this tree into out/deb, checked by lintian

.PHONY: demo test deb
demo:
	tools/demo/run-demo.sh

test:
	tools/ci/run-tests.sh

deb:
	tools/deb/build.sh
