# SPDX-License-Identifier: Apache-2.0
"""tools/bench/cloud_boot_time.py without a cloud: a sentence naming what
is missing, exit status 2, no traceback (it once died with "Connection
refused"). Run as the script it is, in a fresh interpreter."""

import json
import os
import socket
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, 'tools', 'bench', 'cloud_boot_time.py')


def bench(cloud_dir):
    env = dict(os.environ, TLBB_CLOUD_DIR=str(cloud_dir))
    return subprocess.run([sys.executable, SCRIPT, '--rounds', '1'],
                          capture_output=True, text=True, env=env,
                          timeout=120)


def test_no_cloud_dir_is_named(tmp_path):
    p = bench(tmp_path)
    assert p.returncode == 2
    assert 'Traceback' not in p.stderr
    assert 'no cloud: %s does not exist' % (tmp_path / 'cloud.json') \
        in p.stderr


def test_cloud_that_does_not_answer_is_named(tmp_path):
    # a loopback port nobody listens on: bound, then closed
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    url = 'http://127.0.0.1:%d/v3' % port
    (tmp_path / 'cloud.json').write_text(json.dumps(
        {'auth_url': url, 'admin': {'password': 'x'}}))
    p = bench(tmp_path)
    assert p.returncode == 2
    assert 'Traceback' not in p.stderr
    assert 'no cloud answers at %s' % url in p.stderr
