"""The GPUs a kernel check can be about, and the hardware facts kernels branch on.

Kernel libraries do not only test the compute capability: flash-attn 2 picks its backward
kernels by the opt-in shared memory per block (`cudaDevAttrMaxSharedMemoryPerBlockOptin`), so a
threshold such as `max_smem_per_block >= 144 * 1024` is an architecture set in disguise. The
miner turns such thresholds into architecture sets through `SHARED_MEMORY`, never through a list
typed in per finding.

Source of `SHARED_MEMORY`: the CUDA C++ Programming Guide, "Technical Specifications per Compute
Capability" (https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html,
rows "Maximum amount of shared memory per SM" and "Maximum amount of shared memory per thread
block", the latter being what `cudaDevAttrMaxSharedMemoryPerBlockOptin` reports). Per block it is
1 KB less than per SM from 8.0 on: that kilobyte is reserved for the system. Checked against
devices: an RTX 5090 (12.0) reports 101376 B per block, a B200 (10.0) 232448 B.
"""

from __future__ import annotations

from dataclasses import dataclass

Arch = tuple[int, int]

KB = 1024

#: Compute capabilities of the NVIDIA GPUs a TE user can run on, from Volta on. A check that
#: holds on all of them is not architecture-conditioned.
ARCHITECTURES: tuple[Arch, ...] = (
    (7, 0), (7, 5),  # V100; T4 and Turing GeForce
    (8, 0), (8, 6), (8, 7), (8, 9),  # A100; Ampere GeForce; Jetson Orin; Ada
    (9, 0),  # H100 / H200
    (10, 0), (10, 3),  # B200; B300
    (11, 0),  # Jetson Thor
    (12, 0), (12, 1),  # Blackwell GeForce / RTX PRO; DGX Spark
)  # fmt: skip


@dataclass(frozen=True)
class SharedMemory:
    """Shared memory of one compute capability, in bytes."""

    per_sm: int
    #: The most one block may opt in to (`cudaDevAttrMaxSharedMemoryPerBlockOptin`).
    per_block_optin: int


#: Per compute capability of `ARCHITECTURES`; the source is in the module docstring.
SHARED_MEMORY: dict[Arch, SharedMemory] = {
    (7, 0): SharedMemory(96 * KB, 96 * KB),
    (7, 5): SharedMemory(64 * KB, 64 * KB),
    (8, 0): SharedMemory(164 * KB, 163 * KB),
    (8, 6): SharedMemory(100 * KB, 99 * KB),
    (8, 7): SharedMemory(164 * KB, 163 * KB),
    (8, 9): SharedMemory(100 * KB, 99 * KB),
    (9, 0): SharedMemory(228 * KB, 227 * KB),
    (10, 0): SharedMemory(228 * KB, 227 * KB),
    (10, 3): SharedMemory(228 * KB, 227 * KB),
    (11, 0): SharedMemory(228 * KB, 227 * KB),
    (12, 0): SharedMemory(100 * KB, 99 * KB),
    (12, 1): SharedMemory(100 * KB, 99 * KB),
}
