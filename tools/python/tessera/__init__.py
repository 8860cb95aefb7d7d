"""Tessera from Python: sharded tensor programs, partitioned and run on host devices or MPI ranks.

    import numpy as np, tessera
    m = tessera.parse(text)                      # StableHLO, as jax.jit(f).lower(x).as_text() writes it
    print(tessera.partition(m, mesh={"data": 4})["text"])   # the per-device program
    s = tessera.Session.host(4)
    p = s.compile(m)
    y, = s.run_sharded(p, [x, w])                # NumPy in, NumPy out, the same numbers as one device

Errors a user can fix raise tessera.Error with the CLI's message (file:line:col, the value, the
dimension). See tools/python/README.md.
"""
from ._tessera import Buffer, Error, Module, Program, Session, ShardedProgram, parse, partition, train

__all__ = ["Buffer", "Error", "Module", "Program", "Session", "ShardedProgram", "parse", "partition", "train"]
