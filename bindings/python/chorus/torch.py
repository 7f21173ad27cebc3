"""Registers the torch.distributed backend "chorus":

    import torch.distributed as dist
    import chorus.torch
    dist.init_process_group("chorus", init_method="env://")   # or tcp://, file://

The communicator rendezvouses through the c10d store init_process_group created (no
second port); the timeout given to init_process_group is its limit on how long any wait
may go without progress.
"""
import torch.distributed as _dist

from ._chorus_torch import ProcessGroupChorus, create_process_group

if "CHORUS" not in _dist.Backend._plugins:
    _dist.Backend.register_backend("chorus", create_process_group)

__all__ = ["ProcessGroupChorus", "create_process_group"]
