"""Tags the pooch wheel for the platform its binaries need (scripts/build-wheel.sh checks them).

The package holds no extension module, so every CPython takes the same file (py3-none); the
binaries make it platform-specific. scripts/build-wheel.sh sets POOCH_WHEEL_PLATFORM to the tag
it checked the binaries' glibc and libstdc++ symbol versions against.
"""

import os

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        platform = os.environ.get("POOCH_WHEEL_PLATFORM")
        if not platform:
            raise RuntimeError("POOCH_WHEEL_PLATFORM is not set: build with scripts/build-wheel.sh")
        build_data["pure_python"] = False
        build_data["tag"] = "py3-none-" + platform
