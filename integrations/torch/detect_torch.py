"""Prints what CMake needs to build the c10d_torch extension against this interpreter's torch, one
`KEY=VALUE` per line (integrations/torch/CMakeLists.txt reads them). Exits non-zero, with the
reason on stderr, when torch is not importable."""
import sys
import sysconfig

try:
    import torch
    import torch.distributed as dist
    import torch.utils.cpp_extension as ext
except Exception as e:  # noqa: BLE001 - any import failure means "no torch here"
    sys.stderr.write(f"cannot import torch: {e}\n")
    sys.exit(1)
if not dist.is_available():
    sys.stderr.write("torch.distributed is not available in this torch build\n")
    sys.exit(1)

print(f"TORCH_VERSION={torch.__version__}")
print(f"TORCH_INCLUDE_DIRS={','.join(ext.include_paths())}")
print(f"TORCH_LIBRARY_DIR={ext.library_paths()[0]}")
print(f"TORCH_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}")
print(f"PYTHON_VERSION={sys.version_info.major}.{sys.version_info.minor}")
print(f"PYTHON_INCLUDE_DIR={sysconfig.get_paths()['include']}")
print(f"PYTHON_EXT_SUFFIX={sysconfig.get_config_var('EXT_SUFFIX')}")
for key in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
    print(f"PYBIND11_{key}={getattr(torch._C, '_PYBIND11_' + key, '')}")
