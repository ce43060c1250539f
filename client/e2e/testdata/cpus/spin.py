"""Sums 0..N-1 in a Python loop: one CPU's work, nothing else."""


def make_inputs(params, seed):
    return (params["N"],)


def reference(n):
    return n * (n - 1) // 2


def loop(n):
    s = 0
    for i in range(n):
        s += i
    return s
