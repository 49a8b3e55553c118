"""The policy model: its configuration (`config`), the rule kernel (`kernel`: each rule once, on
plain numbers) and the rules on model jobs (`rules`), the engine that plans preemptions and gives
a reason for each candidate (`engine`, `plan`, `pruning`), the queue's order (`order`) and the
victim search (`cover`).

`kernel` and `cover`, which the engine shares with the simulator, may be compiled with the
simulator (setup.py, mypyc); `gpuq._native.select` makes sure a compiled build is used only while
it matches the sources. `NATIVE` says which one runs.
"""

from pathlib import Path

from gpuq import _native

#: True when the compiled `kernel` and `cover` are in use (False: its Python source)
NATIVE = _native.select("policy", Path(__file__).resolve().parent.parent)
