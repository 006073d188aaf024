"""Laying work out over the devices JAX sees: one 1-D mesh, and the sharding of a leading axis.

Every multi-device computation of the package (the chain axis of the samplers, the batches
of the Monte Carlo Bayes risk, the sample axis of the test-error Monte Carlo) goes through
these helpers, with ``jax.sharding`` (no ``pmap``). With one device they change nothing.
"""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "devices"
"""Name of the one mesh axis."""


def device_count() -> int:
    """Number of devices of the default backend (``jax.devices()``)."""
    return len(jax.devices())


def device_mesh(n_devices: int | None = None) -> Mesh:
    """A 1-D mesh over the first ``n_devices`` of ``jax.devices()`` (default: all), axis :data:`AXIS`."""
    devices = jax.devices()
    n_devices = len(devices) if n_devices is None else n_devices
    return jax.make_mesh((n_devices,), (AXIS,), axis_types=(jax.sharding.AxisType.Auto,), devices=devices[:n_devices])


def leading_axis_sharding(size: int) -> NamedSharding | None:
    """The sharding that splits a leading axis of ``size`` evenly over every device.

    None when there is one device or ``size`` is not a multiple of the device count (such
    an array stays where JAX puts it: the computation is the same, on one device).
    """
    n_devices = device_count()
    if n_devices == 1 or size % n_devices:
        return None
    return NamedSharding(device_mesh(n_devices), PartitionSpec(AXIS))
