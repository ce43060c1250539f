"""harness.py --cache-copy: an implementation's fresh compile caches
written over the volume's."""
import json
import os
import subprocess
import sys

from conftest import HARNESS
from xrun_harness import cachecopy


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_fresh_entries_replace_the_volumes(tmp_path):
    src, dst = str(tmp_path / "fresh"), str(tmp_path / "volume")
    cubin = os.path.join("triton", "KEY", "k.cubin")
    write(os.path.join(src, cubin), b"\x7fELF good kernel")
    write(os.path.join(dst, cubin), b"\x7fELF")  # cut short
    write(os.path.join(dst, "triton", "OTHER", "o.cubin"), b"another kernel")
    copied, failed = cachecopy.copy_tree(src, dst)
    assert (copied, failed) == (1, [])
    assert read(os.path.join(dst, cubin)) == b"\x7fELF good kernel"
    assert read(os.path.join(dst, "triton", "OTHER", "o.cubin")) == b"another kernel"
    assert [n for n in os.listdir(os.path.join(dst, "triton", "KEY")) if n.startswith(".xrun-tmp-")] == []


def test_text_that_names_the_fresh_caches_names_the_volumes(tmp_path):
    src, dst = str(tmp_path / "fresh"), str(tmp_path / "volume")
    child = os.path.join(src, "triton", "KEY", "k.json")
    group = json.dumps({"child_paths": {"k.json": child}}).encode()
    write(os.path.join(src, "triton", "KEY", "__grp__k.json"), group)
    binary = b"\xff\xfe" + os.path.join(src, "").encode()
    write(os.path.join(src, "torch_extensions", "ext", "ext.so"), binary)
    cachecopy.copy_tree(src, dst)
    got = json.loads(read(os.path.join(dst, "triton", "KEY", "__grp__k.json")))
    assert got["child_paths"]["k.json"] == os.path.join(dst, "triton", "KEY", "k.json")
    assert read(os.path.join(dst, "torch_extensions", "ext", "ext.so")) == binary


def test_locks_and_links_are_not_copied(tmp_path):
    src, dst = str(tmp_path / "fresh"), str(tmp_path / "volume")
    write(os.path.join(src, "torch_extensions", "ext", "lock"), b"")
    write(os.path.join(src, "torch_extensions", "ext", "ext.so"), b"so")
    os.symlink("/etc/passwd", os.path.join(src, "torch_extensions", "ext", "link"))
    copied, failed = cachecopy.copy_tree(src, dst)
    assert (copied, failed) == (1, [])
    assert sorted(os.listdir(os.path.join(dst, "torch_extensions", "ext"))) == ["ext.so"]


def test_a_file_that_cannot_be_written_is_reported_and_the_rest_copied(tmp_path):
    src, dst = str(tmp_path / "fresh"), str(tmp_path / "volume")
    write(os.path.join(src, "a", "x"), b"x")
    write(os.path.join(src, "b", "y"), b"y")
    # A file where the entry's directory should be: no user, root
    # included, can write a/x there.
    write(os.path.join(dst, "a"), b"not a directory")
    copied, failed = cachecopy.copy_tree(src, dst)
    assert copied == 1 and len(failed) == 1 and failed[0].startswith("a/x: ")


def test_the_launcher_answers_in_one_json_line(tmp_path):
    src, dst = str(tmp_path / "fresh"), str(tmp_path / "volume")
    write(os.path.join(src, "nv", "index"), b"i")
    out = subprocess.run([sys.executable, os.path.join(HARNESS, "harness.py"), "--cache-copy", src, dst],
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == {"copied": 1, "failed": []}
