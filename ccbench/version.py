"""The ccbench version, recorded in every run's provenance."""

from importlib.metadata import PackageNotFoundError, version

try:
    CCBENCH_VERSION = version("ccbench")
except PackageNotFoundError:  # running from a source tree without installation
    CCBENCH_VERSION = "0.0.0+src"
