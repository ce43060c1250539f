"""Arrays and tensors as the correctness check sees them: copies, bitwise
equality, dtype names, output leaves, float64 views, hashes and poisoned
GPU memory. Each function takes the worker's Backend (be)."""

import copy
import hashlib
import math

MIB = 1 << 20


def clone(be, x):
    """Deep copy of inputs: tensors and arrays are copied, not shared."""
    if be.is_tensor(x):
        return x.detach().clone()
    if isinstance(x, be.np.ndarray):
        return x.copy()
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[clone(be, v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(clone(be, v) for v in x)
    if isinstance(x, dict):
        return {k: clone(be, v) for k, v in x.items()}
    return copy.deepcopy(x)


def bitwise_equal(be, a, b):
    """True when a and b hold the same bits (NaN-safe), recursively."""
    ndarray = be.np.ndarray
    if be.is_tensor(a) or be.is_tensor(b):
        if not (be.is_tensor(a) and be.is_tensor(b)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        if a.numel() == 0:
            return True
        return bool(be.torch.equal(as_bytes(be.torch, a), as_bytes(be.torch, b)))
    if isinstance(a, ndarray) or isinstance(b, ndarray):
        if not (isinstance(a, ndarray) and isinstance(b, ndarray)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(bitwise_equal(be, x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(bitwise_equal(be, a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:  # objects without a usable ==
        return a is b


def as_bytes(torch, t):
    """A tensor's bytes as a flat uint8 tensor (bool as 0/1 bytes)."""
    t = t.detach().reshape(-1).contiguous()
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t.view(torch.uint8)


def dtype_name(be, x):
    """numpy's name for a leaf's dtype ("float32", "bfloat16", "int64")."""
    if be.is_tensor(x):
        return str(x.dtype).replace("torch.", "")
    if isinstance(x, be.np.ndarray):
        return x.dtype.name
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int64"
    if isinstance(x, float):
        return "float64"
    if isinstance(x, complex):
        return "complex128"
    if isinstance(x, be.np.generic):
        return x.dtype.name
    return type(x).__name__


def flatten(be, x, path="output", out=None):
    """Flattens an output into [(path, leaf)]; leaves are tensors, arrays or numbers."""
    if out is None:
        out = []
    if be.is_tensor(x) or isinstance(x, (be.np.ndarray, be.np.generic, bool, int, float, complex)) or x is None:
        out.append((path, x))
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            flatten(be, v, "%s[%d]" % (path, i), out)
    elif isinstance(x, dict):
        for k in sorted(x, key=str):
            flatten(be, x[k], "%s[%r]" % (path, k), out)
    else:
        raise TypeError("%s is a %s; outputs must be tensors, arrays, numbers, or tuples/lists/dicts of them"
                        % (path, type(x).__name__))
    return out


def to_float64(be, x):
    """A host numpy copy of a leaf in float64 (complex128 for complex)."""
    np = be.np
    if be.is_tensor(x):
        t = x.detach()
        torch = be.torch
        if t.is_complex():
            return t.to(device="cpu", dtype=torch.complex128).numpy()
        return t.to(device="cpu", dtype=torch.float64).numpy()
    a = np.asarray(x)
    if np.iscomplexobj(a):
        return a.astype(np.complex128)
    return a.astype(np.float64)


def device_sums(torch, t):
    """Two sums over a GPU tensor's bytes read as 64-bit words (wrapping):
    of the words and of their squares. They stand for the bytes in digest:
    equal for equal bytes, and for different outputs equal with a chance
    of about 2^-128. Computed where the tensor is: hashing a 512 MiB output
    on the host took a second of each seed's check."""
    b = as_bytes(torch, t)
    pad = (-b.numel()) % 8
    if pad:
        b = torch.cat([b, b.new_zeros(pad)])
    w = b.view(torch.int64)
    return [int(w.sum().item()), int((w * w).sum().item())]


def digest(be, leaves):
    """A hash of the outputs' exact bytes (host tensors and arrays as raw
    bytes; GPU tensors through device_sums, so that nothing large travels
    to the host)."""
    h = hashlib.sha256()
    for path, x in leaves:
        h.update(path.encode())
        h.update(dtype_name(be, x).encode())
        if x is None:
            h.update(b"None")
            continue
        if be.is_tensor(x):
            h.update(repr(tuple(x.shape)).encode())
            if x.numel() and x.is_cuda:
                h.update(repr(device_sums(be.torch, x)).encode())
            elif x.numel():
                h.update(as_bytes(be.torch, x).cpu().numpy().tobytes())
            continue
        a = be.np.ascontiguousarray(to_float64(be, x))
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def poison(be, ref_leaves):
    """Leaves NaN-filled blocks in torch's CUDA caching allocator.

    Blocks of each reference output's size (and one large block) are
    filled with 0xFF bytes (NaN in every floating dtype, -1 in integers)
    and freed: the allocator hands them to the implementation's outputs,
    so an output element the implementation never writes shows up as NaN
    instead of as a stale correct value. Host memory cannot be poisoned
    this way (malloc returns fresh zero pages for large blocks).
    """
    if not be.cuda:
        return
    torch = be.torch
    sizes = [x.numel() * x.element_size() for _, x in ref_leaves if be.is_tensor(x) and x.is_cuda]
    free, _ = torch.cuda.mem_get_info()
    budget = free // 2
    bufs = []
    try:
        for n in sizes:
            for _ in range(2):
                if n <= 0 or n > budget:
                    continue
                bufs.append(torch.full((n,), 255, dtype=torch.uint8, device="cuda"))
                budget -= n
        big = min(max(64 * MIB, 2 * sum(sizes)), budget)
        if big > 0:
            bufs.append(torch.full((big,), 255, dtype=torch.uint8, device="cuda"))
    except RuntimeError:
        pass  # poisoning is best effort; running out of memory here is not the implementation's fault
    del bufs
