"""Chorus collectives from Python.

    import chorus
    comm = chorus.Communicator.from_env()          # chorus-run / torchrun-style variables
    comm.all_reduce(x, y, op="sum").wait()         # NumPy arrays, C-contiguous
    except chorus.Error as e: e.failed_ranks        # the ranks to leave out (also comm.failed_ranks)

`import chorus.torch` registers the torch.distributed backend "chorus".
"""
from ._chorus import Communicator, Error, Work, get_unique_id

__all__ = ["Communicator", "Error", "Work", "get_unique_id"]
