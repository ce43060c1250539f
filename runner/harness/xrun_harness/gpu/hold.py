"""The hold kernel and its two companions (mark, touch), loaded through the
CUDA driver (PROTOCOL.md, "time")."""

# The hold kernel: one thread that waits until the host writes a non-zero
# word into pinned host memory (and at least min_ns have passed), or until
# max_ns have passed. PTX, so that the driver compiles it for any GPU with no
# compiler installed; %globaltimer is the GPU's nanosecond clock. Beside it,
# the mark kernel, which does nothing: launched after the end event, it
# closes a call's window in the kernel clock's records; and the touch
# kernel, which writes one word: back to back, its launches measure the
# GPU's cost of one launch.
HOLD_PTX = b"""
.version 6.0
.target sm_50
.address_size 64

.visible .entry xrun_hold(.param .u64 flag, .param .u64 min_ns, .param .u64 max_ns)
{
    .reg .pred %p<3>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [flag];
    ld.param.u64 %rd2, [min_ns];
    ld.param.u64 %rd3, [max_ns];
    mov.u64 %rd4, %globaltimer;
WAIT:
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd6, %rd5, %rd4;
    setp.ge.u64 %p1, %rd6, %rd3;
    @%p1 bra DONE;
    setp.lt.u64 %p2, %rd6, %rd2;
    @%p2 bra WAIT;
    ld.volatile.u32 %r1, [%rd1];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra WAIT;
DONE:
    ret;
}

.visible .entry xrun_mark()
{
    ret;
}

.visible .entry xrun_touch(.param .u64 word)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [word];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 1;
    st.global.u32 [%rd2], %r1;
    ret;
}
\0"""
HOLD_NAME, MARK_NAME, TOUCH_NAME = "xrun_hold", "xrun_mark", "xrun_touch"


class Hold:
    """Keeps a stream waiting until the host lets it go.

    arm() sets the flag to 0 and launches the hold kernel; release() sets
    it to 1. Between the two the host enqueues the start event, the call and
    the end event, so the GPU reaches the start event only when everything
    it times is already queued behind it, however long the host took: no
    idle gap inside the timed region, and no spin length to guess (the
    blocking kernel of nvbench). Uses the CUDA driver through ctypes, in the
    context torch made current.
    """

    def __init__(self):
        import ctypes
        self.ct = ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        self.lib = lib
        vp, u32 = ctypes.c_void_p, ctypes.c_uint
        lib.cuLaunchKernel.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp,
                                       ctypes.POINTER(vp), ctypes.POINTER(vp)]
        self.check(lib.cuInit(0), "cuInit")
        ctx = vp()
        self.check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("no current CUDA context")
        self.module = vp()
        self.check(lib.cuModuleLoadData(ctypes.byref(self.module), HOLD_PTX), "cuModuleLoadData")
        self.fn, self.mark_fn, self.touch_fn = vp(), vp(), vp()
        for fn, name in ((self.fn, HOLD_NAME), (self.mark_fn, MARK_NAME), (self.touch_fn, TOUCH_NAME)):
            self.check(lib.cuModuleGetFunction(ctypes.byref(fn), self.module, name.encode()), "cuModuleGetFunction")
        self.host = vp()
        self.check(lib.cuMemHostAlloc(ctypes.byref(self.host), ctypes.c_size_t(64), u32(0x02)), "cuMemHostAlloc")
        dptr = ctypes.c_uint64()
        self.check(lib.cuMemHostGetDevicePointer_v2(ctypes.byref(dptr), self.host, u32(0)), "cuMemHostGetDevicePointer")
        self.flag = ctypes.c_uint32.from_address(self.host.value)
        self.args = (ctypes.c_uint64 * 3)(dptr.value, 0, 0)
        size = ctypes.sizeof(ctypes.c_uint64)
        self.params = (vp * 3)(*[ctypes.addressof(self.args) + i * size for i in range(3)])
        self.word = ctypes.c_uint64(0)
        self.touch_params = (vp * 1)(ctypes.addressof(self.word))

    def check(self, rc, what):
        if rc != 0:
            name = self.ct.c_char_p()
            self.lib.cuGetErrorName(rc, self.ct.byref(name))
            raise RuntimeError("%s: %s" % (what, (name.value or b"CUresult %d" % rc).decode()))

    def arm(self, stream, min_ms, max_ms):
        """Launches the hold on stream (a CUstream handle): it ends once
        released and min_ms have passed, or after max_ms."""
        self.flag.value = 0
        self.args[1] = int(min_ms * 1e6)
        self.args[2] = int(max_ms * 1e6)
        self.check(self.lib.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, stream, self.params, None), "cuLaunchKernel")

    def release(self):
        self.flag.value = 1

    def mark(self, stream):
        """Launches the mark kernel (it does nothing) on stream."""
        self.check(self.lib.cuLaunchKernel(self.mark_fn, 1, 1, 1, 1, 1, 1, 0, stream, None, None), "cuLaunchKernel")

    def touch(self, stream, address):
        """Launches the touch kernel on stream: it writes 1 to the device word at address."""
        self.word.value = address
        self.check(self.lib.cuLaunchKernel(self.touch_fn, 1, 1, 1, 1, 1, 1, 0, stream, self.touch_params, None),
                   "cuLaunchKernel")


def hold_max_ms(enqueue_ms):
    """How long the hold kernel waits for the host's release before it
    times out: a call that takes 20 ms to enqueue is slow Python, not a
    wait for the GPU, and the cap bounds what 3 time-outs cost."""
    return min(max(10.0 * enqueue_ms, 20.0), 500.0)
