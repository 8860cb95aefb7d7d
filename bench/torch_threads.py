"""PyTorch on exactly n threads, for the comparisons under bench/.

torch.set_num_threads sizes PyTorch's own OpenMP team, and OpenBLAS's pool only in a build that
knows its BLAS is OpenBLAS. Debian's python3-torch is built against the generic BLAS interface
(BLAS_INFO=generic) and reaches OpenBLAS's pthread build through libblas.so.3, so its matmuls kept
one OpenBLAS thread per core whatever the setting: "1 thread" ran its GEMMs on both cores (a
1024^3 product at 169 GFLOP/s, CPU time twice the wall time, on a 2-core Zen 3) and "2 threads"
ran four busy threads on two cores. set_threads also sets every OpenBLAS loaded in the process.
"""
import ctypes
import resource
import time

import torch


def _loaded_openblas():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if path.startswith("/") and "blas" in path.rsplit("/", 1)[-1] and ".so" in path:
                paths.add(path)
    libs = []
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "openblas_set_num_threads"):
            libs.append(lib)
    return libs


def set_threads(n):
    """PyTorch's team and every loaded OpenBLAS's pool to n threads."""
    torch.set_num_threads(n)
    for lib in _loaded_openblas():
        lib.openblas_set_num_threads(ctypes.c_int(n))


def cpu_per_wall(fn, repeat=3):
    """CPU time over wall time while fn runs `repeat` times: about the number of busy threads."""
    c0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(repeat):
        fn()
    c1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return cpu / wall if wall > 0 else 0.0
