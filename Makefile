# SPDX-License-Identifier: Apache-2.0
# The two commands of the README.
#   make demo   the main job: a compute node in a box, a VM balanced for real
#   make test   install everything this needs on Debian, run every test suite

.PHONY: demo test
demo:
	tools/demo/run-demo.sh

test:
	tools/ci/run-tests.sh
