"""``rustgrad.utils.data``: datasets, samplers and ``DataLoader``, with ``torch.utils.data``'s names,
arguments and behaviour (worker *threads* instead of processes for ``num_workers > 0``)."""

from __future__ import annotations

from rustgrad.utils.data._collate import default_collate, default_convert
from rustgrad.utils.data.dataloader import DataLoader, get_worker_info
from rustgrad.utils.data.dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from rustgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler", "Sampler",
    "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]

# DistributedSampler (rustgrad/utils/data/distributed.py), also importable from here as in torch.
from rustgrad.utils.data import distributed  # noqa: E402
from rustgrad.utils.data.distributed import DistributedSampler  # noqa: E402

__all__ += ["DistributedSampler", "distributed"]
