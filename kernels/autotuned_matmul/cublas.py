"""torch.matmul: cuBLAS on a GPU."""

import torch


def matmul(a, b):
    return torch.matmul(a, b)
