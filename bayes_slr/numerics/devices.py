"""Laying work out over the devices JAX sees: one 1-D mesh, and the sharding of a leading axis.

Every multi-device computation of the package (the chain axis of the samplers, the batches
of the Monte Carlo Bayes risk, the sample axis of the test-error Monte Carlo) goes through
these helpers, with ``jax.sharding`` (no ``pmap``). With one device they change nothing.
They honour ``jax.default_device``.
"""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "devices"
"""Name of the one mesh axis."""


def work_devices() -> list[jax.Device]:
    """The devices work is spread over: ``jax.devices()``, unless a default device is set.

    Inside ``jax.default_device(device)`` only that device; inside
    ``jax.default_device("cpu")`` (a platform) every device of that platform. So a
    computation asked for on the CPU runs there even when a GPU is the default backend.
    """
    default = jax.config.jax_default_device
    if default is None:
        return jax.devices()
    return jax.devices(default) if isinstance(default, str) else [default]


def device_count() -> int:
    """Number of devices work is spread over (:func:`work_devices`)."""
    return len(work_devices())


def device_mesh(n_devices: int | None = None) -> Mesh:
    """A 1-D mesh over the first ``n_devices`` of :func:`work_devices` (default: all), axis
    :data:`AXIS`.
    """
    devices = work_devices()
    n_devices = len(devices) if n_devices is None else n_devices
    return jax.make_mesh(
        (n_devices,), (AXIS,), axis_types=(jax.sharding.AxisType.Auto,), devices=devices[:n_devices]
    )


def leading_axis_sharding(size: int) -> NamedSharding | None:
    """The sharding that splits a leading axis of ``size`` evenly over every device.

    None when there is one device or ``size`` is not a multiple of the device count (such
    an array stays where JAX puts it: the computation is the same, on one device).
    """
    n_devices = device_count()
    if n_devices == 1 or size % n_devices:
        return None
    return NamedSharding(device_mesh(n_devices), PartitionSpec(AXIS))
