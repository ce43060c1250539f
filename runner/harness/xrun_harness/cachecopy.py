"""harness.py --cache-copy SRC DST: writes the compile-cache entries of an
implementation's fresh caches (SRC) over the volume's (DST), after the
implementation failed with the volume's and passed with fresh ones
(PROTOCOL.md, "Compile caches").

Every file is written beside its target and renamed onto it, so that a job
reading the volume at the same time sees the old file or the new one, never
half of one. Text files that name SRC (Triton's group index lists its files'
paths) name DST instead. Lock files are not copied: a build that holds none
would wait on it forever. Prints one JSON line: {"copied": N, "failed": [...]}.
"""

import json
import os
import sys
import uuid

# Text files up to this size are read for SRC's path; larger ones and
# binaries are copied as they are.
RELOCATE_MAX_BYTES = 1 << 20

# Names never copied: a compiler's lock (torch's FileBaton, Triton's).
SKIP_NAMES = {"lock"}


def relocate(data, src, dst):
    """data with the path src/ replaced by dst/ where data is UTF-8 text
    that names it; anything else as it is."""
    if len(data) > RELOCATE_MAX_BYTES:
        return data
    old = os.path.join(src, "").encode()
    if old not in data:
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    return data.replace(old, os.path.join(dst, "").encode())


def copy_file(path, target, src, dst):
    with open(path, "rb") as f:
        data = f.read()
    data = relocate(data, src, dst)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = os.path.join(os.path.dirname(target), ".xrun-tmp-%d-%s" % (os.getpid(), uuid.uuid4().hex))
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def copy_tree(src, dst):
    """Writes every regular file under src to the same place under dst;
    returns how many were written and the failures, one line each."""
    copied, failed = 0, []
    src, dst = os.path.abspath(src), os.path.abspath(dst)
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if name in SKIP_NAMES or name.startswith(".xrun-tmp-") or os.path.islink(path) or not os.path.isfile(path):
                continue
            target = os.path.join(dst, os.path.relpath(path, src))
            try:
                copy_file(path, target, src, dst)
                copied += 1
            except OSError as e:
                failed.append("%s: %s" % (os.path.relpath(path, src), e.strerror or e))
    return copied, failed


def main(argv=None):
    args = sys.argv[2:] if argv is None else argv
    if len(args) != 2:
        print("usage: harness.py --cache-copy SRC DST", file=sys.stderr)
        sys.exit(2)
    copied, failed = copy_tree(args[0], args[1])
    print(json.dumps({"copied": copied, "failed": failed}))
