"""The policy model: its configuration (`config`), the rule kernel (`rules`), the engine that
plans preemptions and gives a reason for each candidate (`engine`, `plan`, `pruning`), the
queue's order (`order`) and the exact victim search (`cover`).

`cover`, the exact victim search the engine shares with the simulator, may be compiled with the
simulator (setup.py, mypyc); `gpuq._native.select` makes sure a compiled build is used only while
it matches the sources. `NATIVE` says which one runs.
"""

from pathlib import Path

from gpuq import _native

#: True when the compiled `cover` is in use (False: its Python source)
NATIVE = _native.select("policy", Path(__file__).resolve().parent.parent)
