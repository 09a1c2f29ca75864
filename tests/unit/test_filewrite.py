# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.filewrite.write_if_changed on a real file system:
what it writes, when it does not, and what a local user who can plant
names in the target directory cannot make it do."""

import os
import stat

import pytest

from nova_tlbbalance import filewrite


def victim(tmp_path, text='secret\n', mode=0o600):
    v = tmp_path / 'victim'
    v.write_text(text)
    os.chmod(v, mode)
    return v


def test_writes_then_only_on_change(tmp_path):
    out = str(tmp_path / 'sub' / 'f.conf')
    assert filewrite.write_if_changed(out, 'a\n', 0o640) is True
    assert open(out).read() == 'a\n'
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    assert filewrite.write_if_changed(out, 'a\n', 0o640) is False
    assert filewrite.write_if_changed(out, 'a\n', 0o644) is True
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    assert filewrite.write_if_changed(out, 'b\n', 0o644) is True
    assert open(out).read() == 'b\n'
    assert os.listdir(tmp_path / 'sub') == ['f.conf']


def test_planted_tmp_symlink_is_not_followed(tmp_path):
    """The old code wrote <path>.tmp and chmod-ed it: a symlink planted
    there made it overwrite, and chmod 0644, the file it pointed to."""
    v = victim(tmp_path)
    out = str(tmp_path / 'f.conf')
    os.symlink(str(v), out + '.tmp')
    assert filewrite.write_if_changed(out, 'new\n', 0o644) is True
    assert v.read_text() == 'secret\n'
    assert stat.S_IMODE(os.stat(v).st_mode) == 0o600
    assert open(out).read() == 'new\n'
    # the planted name is left as it was: not ours to remove
    assert os.readlink(out + '.tmp') == str(v)


def test_symlink_at_the_path_is_replaced_not_followed(tmp_path):
    v = victim(tmp_path, text='new\n', mode=0o644)
    out = str(tmp_path / 'f.conf')
    os.symlink(str(v), out)
    # same text and mode behind the link: still not "unchanged", the
    # link is replaced by a regular file and the target left alone
    assert filewrite.write_if_changed(out, 'new\n', 0o644) is True
    assert not os.path.islink(out)
    assert open(out).read() == 'new\n'
    assert filewrite.write_if_changed(out, 'other\n', 0o600) is True
    assert v.read_text() == 'new\n'
    assert stat.S_IMODE(os.stat(v).st_mode) == 0o644


def test_temp_file_is_private_and_unpredictable(tmp_path, monkeypatch):
    """The temporary file is created O_EXCL with a random name and holds
    no wider mode than asked while it is written."""
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        st = os.lstat(src)
        seen.append((os.path.basename(src), stat.S_IMODE(st.st_mode),
                     stat.S_ISREG(st.st_mode)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, 'replace', spy)
    out = str(tmp_path / 'f.conf')
    filewrite.write_if_changed(out, 'x\n', 0o600)
    filewrite.write_if_changed(out, 'y\n', 0o600)
    (n1, m1, r1), (n2, m2, r2) = seen
    assert n1 != n2 and n1 != 'f.conf.tmp'
    assert (m1, r1) == (0o600, True)


def test_failure_leaves_no_temp_file(tmp_path, monkeypatch):
    def boom(src, dst):
        raise OSError(5, 'I/O error')
    monkeypatch.setattr(os, 'replace', boom)
    out = str(tmp_path / 'f.conf')
    with pytest.raises(OSError):
        filewrite.write_if_changed(out, 'x\n', 0o644)
    assert os.listdir(tmp_path) == []


def test_a_directory_at_the_path_is_an_error_naming_it(tmp_path):
    out = tmp_path / 'f.conf'
    out.mkdir()
    with pytest.raises(OSError) as e:
        filewrite.write_if_changed(str(out), 'x\n', 0o644)
    assert str(out) in str(e.value)
