"""The zygote: one process that imports the heavy modules once (numpy,
torch, triton) and forks every worker of a run from itself, so that a
worker starts in milliseconds rather than importing them again. It never
touches a GPU: a CUDA context does not survive a fork, so each worker sets
up its own after it (in init, as a worker started on its own does). A
crash, hang or OOM of one worker still leaves the others running: each is
its own process and process group.

The runner talks to it over the unix socket on fd 3, a SOCK_SEQPACKET
socket (PROTOCOL.md, "The zygote"), one JSON object per packet:

  {"op": "fork", "id": N, "env": {...}, "cwd": DIR}  with three descriptors
      (SCM_RIGHTS): the worker's stdout and stderr, its commands (fd 3),
      its events (fd 4)
  -> {"id": N, "pid": P}  or  {"id": N, "error": "..."}
  <- {"exit": P, "status": W}  when worker P ends (W: its wait status)
  {"op": "ready", "pid": P, "loaded": [...], "threads": T, "unsafe": "..."}
      is the zygote's first message, once its imports are done; the runner
      forks nothing from a zygote that holds more than one thread (a fork
      copies only the calling thread, and a lock another one held stays
      locked forever) or says why forking from it is unsafe.

OpenBLAS (numpy's, which torch's import loads) starts a thread per core as
it loads. The zygote loads it with OPENBLAS_NUM_THREADS=1 and each worker,
once forked, sets the number of threads OpenBLAS would have started in it
(openblas_set_num_threads), so that numpy's matrix products run as they do
in a worker started on its own.
"""

import importlib
import json
import os
import select
import signal
import socket
import sys
import traceback

# The modules a worker is most likely to import, in the order they
# depend on each other; each one that is missing is left to the worker.
PRELOAD = ("numpy", "torch", "triton")

# More modules to import after PRELOAD, comma-separated: torch.compile's
# for an experiment that uses it (the runner's spec.CompileStack).
PRELOAD_ENV = "XRUN_ZYGOTE_PRELOAD"

# The largest request read (zygote_linux.go's zygoteMaxPacket): a fork
# request carries the worker's whole environment.
MAX_PACKET = 128 << 10

# PR_SET_PDEATHSIG: the kernel kills a worker whose zygote died.
PR_SET_PDEATHSIG = 1


BLAS_THREADS = "OPENBLAS_NUM_THREADS"

# The zygote's environment as it started (main).
START_ENV = {}

# What OpenBLAS calls the function that sets its thread count, by build
# (its own, 64-bit integer, numpy's and scipy's bundled copies).
BLAS_SETTERS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
                "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads")


def preload_names(env):
    """PRELOAD, then the modules env's PRELOAD_ENV names."""
    extra = [n.strip() for n in env.get(PRELOAD_ENV, "").split(",")]
    return list(PRELOAD) + [n for n in extra if n and n not in PRELOAD]


def preload():
    """Imports preload_names (what imports), without touching a GPU, with
    OpenBLAS held to one thread; the environment is as it was after."""
    saved = os.environ.get(BLAS_THREADS)
    os.environ[BLAS_THREADS] = "1"
    loaded = []
    try:
        for name in preload_names(os.environ):
            try:
                importlib.import_module(name)
                loaded.append(name)
            except Exception:  # noqa: B902 - a worker that needs it says why
                pass
    finally:
        if saved is None:
            del os.environ[BLAS_THREADS]
        else:
            os.environ[BLAS_THREADS] = saved
    return loaded


def blas_libraries():
    """The paths of the OpenBLAS libraries this process has loaded."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    return sorted(paths)


def blas_setters():
    """(setters, why): the thread-count setter of every loaded OpenBLAS, or
    why one has none (then forking from this process would leave a worker's
    numpy on one thread)."""
    import ctypes

    setters = []
    for path in blas_libraries():
        lib = ctypes.CDLL(path)
        fn = next((getattr(lib, name) for name in BLAS_SETTERS if hasattr(lib, name)), None)
        if fn is None:
            return [], "%s has no openblas_set_num_threads" % path
        fn.argtypes, fn.restype = [ctypes.c_int], None
        setters.append(fn)
    return setters, ""


def blas_threads(env):
    """The threads OpenBLAS starts on its own in a process with env: its
    variables in its order of precedence, else one per usable core."""
    for name in (BLAS_THREADS, "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        try:
            n = int(env.get(name, "").split(",")[0])
        except ValueError:
            continue
        if n > 0:
            return n
    try:
        return len(os.sched_getaffinity(0))
    except OSError:
        return os.cpu_count() or 1


def die_with_parent():
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:  # noqa: B902 - without it the runner's kill still reaches the group
        pass


def threads():
    """How many threads this process has (the kernel's count)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def become(env, cwd):
    """The worker's environment, directory and import path: what a worker
    started on its own with env in cwd would have: the zygote's
    variables it lacks go, those the imports set stay. The zygote's own
    PYTHONPATH entries (it starts before the experiment's are known) give
    way to the worker's."""
    before = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for k in START_ENV:
        if k not in env:
            os.environ.pop(k, None)  # what the imports set themselves stays
    os.environ.update(env)
    if cwd:
        os.chdir(cwd)
    after = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    rest = [p for p in sys.path[1:] if p not in before and p not in after]
    sys.path[:] = sys.path[:1] + after + rest


def become_worker(zygote, fds, env, cwd=""):
    """In the forked child: the worker's own process group, descriptors and
    environment, then the command loop. Never returns."""
    code = 1
    try:
        sys.argv = sys.argv[:1]
        os.setpgid(0, 0)
        die_with_parent()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        zygote.close()
        out, cmd, ev = fds
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(cmd, 3)
        os.dup2(ev, 4)
        for fd in (out, cmd, ev):
            if fd > 4:
                os.close(fd)
        become(env, cwd)
        for setter in zygote.blas:
            setter(blas_threads(os.environ))
        from .worker import main

        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: B902 - report any failure on the worker's stderr
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class Zygote:
    """The zygote's loop. SIGCHLD only wakes it (set_wakeup_fd): every
    message is sent from the loop, never from a signal handler, so that
    two never interleave on the socket."""

    def __init__(self, sock):
        self.sock = sock
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.blas = []

    def close(self):
        """What a forked worker must not keep."""
        self.sock.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def send(self, msg):
        self.sock.send(json.dumps(msg).encode())

    def reap(self):
        """Reports every worker that ended."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.send({"exit": pid, "status": status})

    def serve(self):
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        loaded = preload()
        self.blas, unsafe = blas_setters()
        self.send({"op": "ready", "pid": os.getpid(), "loaded": loaded, "threads": threads(), "unsafe": unsafe})
        while True:
            ready, _, _ = select.select([self.sock, self.wake_r], [], [])
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
                self.reap()
            if self.sock not in ready:
                continue
            data, fds, _, _ = socket.recv_fds(self.sock, MAX_PACKET, 8)
            if not data:
                return  # the runner closed its end: the run is over
            self.fork(json.loads(data), fds)

    def fork(self, req, fds):
        rid = req.get("id")
        if req.get("op") != "fork" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            self.send({"id": rid, "error": "want op fork with 3 descriptors, got %r with %d" % (req.get("op"), len(fds))})
            return
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as e:
            for fd in fds:
                os.close(fd)
            self.send({"id": rid, "error": "fork: %s" % e})
            return
        if pid == 0:
            become_worker(self, fds, req.get("env") or dict(os.environ), req.get("cwd") or "")
        for fd in fds:
            os.close(fd)
        self.send({"id": rid, "pid": pid})


def main():
    START_ENV.update(os.environ)
    fd = int(os.environ.get("XRUN_ZYGOTE_FD", "3"))
    sock = socket.socket(fileno=fd)
    Zygote(sock).serve()
