"""The virtual device: what hardware queries and package metadata answer while a selector runs.

A loaded selector asks the machine four kinds of question: TE's helpers
(`get_device_compute_capability`, `get_cudnn_version`, `is_in_onnx_export_mode`), `torch.cuda`,
package metadata ("which flash-attn is installed", asked at import time by TE 1.x - 2.1 and by
`backends.py` from 2.2) and, through the compiled extension, TE's C++ fused-attention query, which
asks the same machine `cuda::sm_arch` and `cudnnGetVersion` (`sm_arch`, `cudnn_runtime_version`).
`VirtualDevice` holds the answers for the scenario being run; the stand-ins handed to the selector
read it at the moment they are asked, so one loaded module can be moved from one device to the
next between calls.

The virtual machine has one CUDA GPU, declared by its compute capability, and `torch.cuda`
answers what that declares: availability, device 0, the capability, and a name and properties
made of them. Vendor device modules (`torch.npu`, `torch.musa`, `torch.mlu`, ... that the
vendors' PyTorch plugins add) are not modelled: they number their architectures their own way
(MUSA's `(3, 1)`, Ascend by SoC), so answering them with the declared SM would invent a machine,
and a multi-platform fork asking `hasattr(torch, "npu")` would be steered down a branch the
declared GPU never takes. A selector that calls one fails with a one-line error naming the
attribute, as on a CUDA machine without the plugin. Other `torch.cuda` calls are the CPU wheel's
own, which raise for anything that needs a GPU.
"""

from __future__ import annotations

import importlib.metadata
import operator
import re
from dataclasses import dataclass

import torch

from selector_patch.harness.eager import EagerCompiler, eager
from selector_patch.harness.grad_state import GradWatch
from selector_patch.registry import PACKAGE_FIELD
from selector_patch.scenario import Scenario
from selector_patch.views import ModuleView

#: Distribution names under which each flash-attn role has been published, as TE looks them up.
DISTRIBUTION_ROLES = {
    "flash-attn": "FA2",
    "flashattn-hopper": "FA3",
    "flash-attn-3": "FA3",
    "flash-attn-4": "FA4",
}
#: The CUTLASS DSL flash-attn-4 compiles with; TE 2.19+ gate FA4 4.0.0b24 on its version.
CUTLASS_DSL = "nvidia-cutlass-dsl"


@dataclass(frozen=True)
class Machine:
    """The facts a selector module may read once, at import (TE 1.x - 2.1 do)."""

    compute_capability: tuple[int, int]
    cudnn_version: tuple[int, int, int]
    #: Installed version per flash-attn role, None where not installed.
    flash_attn: tuple[tuple[str, str | None], ...]
    #: The installed nvidia-cutlass-dsl, which flash-attn-4 builds its kernels with.
    cutlass_dsl: str | None = None
    #: The flash-attention release FA3 was built from (`Scenario.flash_attn_3_source`).
    flash_attn_3_source: str = ""

    @classmethod
    def of(cls, scenario: Scenario) -> "Machine":
        """The scenario's machine, one object per machine: a snapshot asks for it on each of
        some 150,000 requests, over some 300 machines (TE 2.20.2's grid)."""
        key = (
            scenario.compute_capability,
            scenario.cudnn_version,
            _PACKAGES(scenario),
            scenario.cutlass_dsl,
            scenario.flash_attn_3_source,
        )
        machine = _MACHINES.get(key)
        if machine is None:
            if len(_MACHINES) >= 4096:  # a fuzzer's stream of machines
                _MACHINES.clear()
            capability, cudnn, versions, cutlass_dsl, fa3_source = key
            flash_attn = tuple(zip(PACKAGE_FIELD, versions))
            machine = _MACHINES[key] = cls(capability, cudnn, flash_attn, cutlass_dsl, fa3_source)
        return machine

    @property
    def sm_arch(self) -> int:
        """The compute capability as TE's C++ `cuda::sm_arch` answers it: 90 for (9, 0)."""
        major, minor = self.compute_capability
        return 10 * major + minor

    @property
    def cudnn_runtime_version(self) -> int:
        """cuDNN's version as `cudnnGetVersion()` returns it, the number TE's C++ compares:
        91801 for 9.18.1, 8907 for 8.9.7 (cuDNN 9 moved the major digit up by one place)."""
        major, minor, patch = self.cudnn_version
        return major * (10000 if major >= 9 else 1000) + minor * 100 + patch

    def installed(self, role: str) -> str | None:
        return dict(self.flash_attn)[role]

    @property
    def sm(self) -> str:
        return f"sm{self.sm_arch}"

    def __str__(self) -> str:
        packages = ", ".join(
            f"{role[2:]}: {version or 'none'}" for role, version in self.flash_attn
        )
        cudnn = ".".join(map(str, self.cudnn_version))
        return f"{self.sm}, cuDNN {cudnn}, flash-attn {packages}"


#: `Machine.of`'s machines by their fields.
_MACHINES: dict[tuple, Machine] = {}
#: A scenario's installed version of each flash-attn role, in `PACKAGE_FIELD`'s order.
_PACKAGES = operator.attrgetter(*PACKAGE_FIELD.values())


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


class VirtualDevice:
    """The machine currently pinned, the fused answer's override if the scenario gives one
    (None: TE's C++ answers), and whether the call runs in an ONNX export; read live by every
    stand-in below."""

    def __init__(self, machine: Machine, fused_backend: str | None = None) -> None:
        self.pin(machine, fused_backend)

    def pin(self, machine: Machine, fused_backend: str | None, onnx_export: bool = False) -> None:
        self.machine = machine
        self.fused_backend = fused_backend
        self.onnx_export = onnx_export

    # TE's helpers that ask the machine and the process
    def get_device_compute_capability(self) -> tuple[int, int]:
        return self.machine.compute_capability

    def get_cudnn_version(self) -> tuple[int, int, int]:
        return self.machine.cudnn_version

    def is_in_onnx_export_mode(self) -> bool:
        return self.onnx_export  # the scenario's `onnx_export`: TE's selector reads it

    def queries(self) -> dict[str, object]:
        """TE helper functions answered by this device, by name (wherever TE defines them)."""
        return {
            "get_device_compute_capability": self.get_device_compute_capability,
            "get_cudnn_version": self.get_cudnn_version,
            "is_in_onnx_export_mode": self.is_in_onnx_export_mode,
        }

    # package metadata (importlib.metadata.version)
    def package_version(self, distribution: str) -> str:
        name = _normalized(distribution)
        role = DISTRIBUTION_ROLES.get(name)
        if role is not None:
            version = self.machine.installed(role)
        elif name == CUTLASS_DSL:
            version = self.machine.cutlass_dsl
        else:
            return importlib.metadata.version(distribution)
        if version is None:
            raise importlib.metadata.PackageNotFoundError(distribution)
        return version


class MetadataView(ModuleView):
    """`importlib.metadata` answering flash-attn versions from the virtual device."""

    def __init__(self, device: VirtualDevice) -> None:
        super().__init__(importlib.metadata)
        self.version = device.package_version


@dataclass(frozen=True)
class DeviceProperties:
    """`torch.cuda.get_device_properties()` of the virtual GPU: only what the device declares
    (memory size, SM count and the like are not declared, and asking for them raises)."""

    name: str
    major: int
    minor: int


class CudaView(ModuleView):
    """`torch.cuda` of a machine with one GPU, device 0, of the pinned compute capability."""

    def __init__(self, device: VirtualDevice) -> None:
        super().__init__(torch.cuda)
        self._device = device

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return 0

    def get_device_capability(self, device=None) -> tuple[int, int]:
        return self._device.get_device_compute_capability()

    def get_device_name(self, device=None) -> str:
        return f"virtual {self._device.machine.sm} GPU"

    def get_device_properties(self, device=None) -> DeviceProperties:
        return DeviceProperties(self.get_device_name(), *self.get_device_capability())


class UnregisteredLibrary(ModuleView):
    """`torch.library` whose `custom_op` does not register anything.

    Custom-op registration is process-wide by name: a second loaded release (or a mutant of the
    same one) would collide with the first. The selector never calls these ops, so the decorated
    function is kept as it is, with no-op registration hooks.
    """

    def __init__(self) -> None:
        super().__init__(torch.library)

    @staticmethod
    def custom_op(name, fn=None, /, **_options):
        def keep(function):
            for hook in ("register_fake", "register_autograd", "register_kernel"):
                setattr(function, hook, _accept_registration)
            return function

        return keep(fn) if fn is not None else keep


def _accept_registration(*args, **_kwargs):
    if len(args) == 1 and callable(args[0]):
        return args[0]
    return lambda function: function


class TorchView(ModuleView, GradWatch):
    """`torch` as seen on the virtual device: real except `torch.cuda`, `torch.library` and the
    compiler entry points (`torch.compile`, `torch.compiler`), which run eagerly (`eager`); what
    tells autograd's state is counted (`GradWatch`)."""

    def __init__(self, device: VirtualDevice) -> None:
        super().__init__(torch)
        GradWatch.__init__(self)
        self.cuda = CudaView(device)
        self.library = UnregisteredLibrary()
        self.compile = eager
        self.compiler = EagerCompiler()

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            raise AttributeError(
                f"module 'torch' has no attribute {name!r} (the virtual device is a CUDA GPU:"
                " vendor device modules are not modelled)"
            ) from None
