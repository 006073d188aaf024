"""Run sweep points on Dask distributed: a local cluster of worker processes, or an existing
scheduler.

:class:`DaskExecutor` implements the executor interface of the sweep runner:
``run(solve, points)`` yields ``(point, result)`` for every point as it completes, in
any order, with the exception the point's computation raised in place of its result.
Each point is one task. A point whose worker dies (killed, out of memory) is run again
on another worker by the scheduler, up to ``allowed_failures`` times; a point that
raises is not run again (the computations are deterministic), its exception comes back.

Results do not depend on the number of workers as long as ``solve`` derives every
random number from its point (its seed), as the sweeps of this package do.

Independent of the rest of the package: ``solve`` may be any picklable function
(cloudpickle: closures and lambdas work) of a JSON-ready dict.

Example::

    with DaskExecutor(workers=2) as executor:
        for point, result in executor.run(solve, points):
            ...

Worker processes are spawned: a script that starts a local cluster must do so under
``if __name__ == "__main__":`` (the ``bayes-slr`` command does).

On a cluster, start a scheduler and workers (e.g. with dask-jobqueue on Slurm or PBS)
and pass the scheduler's address: ``DaskExecutor(scheduler="tcp://host:8786")``.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from bayes_slr.errors import ConfigError
from bayes_slr.numerics.record import JsonObject
from bayes_slr.records import Point, Running, Solve

ALLOWED_FAILURES = 3  # times a point is run again after the worker running it died
CONNECT_SECONDS = 5
"""How long connecting to a ``scheduler`` may take before it is refused as unreachable (a
scheduler that answers connects in well under a second on a network; an address nothing listens
on is refused in these seconds, not Dask's default 30)."""
POLL_SECONDS = 1.0  # how often a run that reports its running points asks the scheduler


def _worker_label(address: str, name: Any) -> str:
    """A short label of a worker: ``w<name>`` for a numbered worker (a local cluster's), else its
    name or address.
    """
    if isinstance(name, int) or (isinstance(name, str) and name.isdigit()):
        return f"w{name}"
    return str(name) if name not in (None, "") else address


def _compilation_cache_plugin() -> Any:
    """A worker plugin that turns on the package's persistent JIT cache in every (new) worker
    process.
    """
    from distributed import WorkerPlugin

    class CompilationCache(WorkerPlugin):
        def setup(self, worker: Any) -> None:
            from bayes_slr.jax_setup import enable_compilation_cache

            enable_compilation_cache()

    return CompilationCache()


class DaskExecutor:
    """Run sweep points as Dask tasks on a local cluster or on an existing scheduler.

    Parameters
    ----------
    workers : int, optional
        Start a ``distributed.LocalCluster`` of this many worker processes (one thread
        each) on the loopback interface. Default (neither argument): one per CPU core.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:port``) to submit to instead.
        Its own ``distributed.scheduler.allowed-failures`` setting then decides how often
        a point lost with a worker is retried.
    allowed_failures : int
        For the local cluster: how many times a point is run again after the worker
        running it died before the point fails with ``distributed.KilledWorker``.

    The cluster starts on first use (``run`` or ``with``) and stops on :meth:`close`.
    """

    def __init__(
        self,
        workers: int | None = None,
        scheduler: str | None = None,
        *,
        allowed_failures: int = ALLOWED_FAILURES,
    ) -> None:
        if workers is not None and scheduler is not None:
            raise ConfigError(
                "pass either --workers (a local cluster) or --scheduler (an existing one), not both"
            )
        if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
            raise ConfigError(
                f"scheduler must be an address such as tcp://host:8786, got {scheduler!r}"
            )
        self.workers = (
            workers if workers is not None or scheduler is not None else (os.cpu_count() or 1)
        )
        self.scheduler = scheduler
        self.allowed_failures = allowed_failures
        self._cluster = None
        self._client = None

    @property
    def client(self):
        """The ``distributed.Client``, connecting (and starting the local cluster) on first use."""
        if self._client is None:
            self._start()
        return self._client

    def _start(self) -> None:
        import dask
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            try:
                self._client = Client(self.scheduler, timeout=f"{CONNECT_SECONDS}s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(
                    f"--scheduler: cannot connect to {self.scheduler} ({exc})"
                ) from exc
            return
        with dask.config.set({"distributed.scheduler.allowed-failures": self.allowed_failures}):
            self._cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=":0",
                silence_logs=logging.CRITICAL,  # failures come back as results
            )
        self._client = Client(self._cluster)
        # the workers share this machine's persistent JIT cache: a point compiled once is not
        # compiled per process
        self._client.register_plugin(
            _compilation_cache_plugin(), name="bayes-slr-compilation-cache"
        )

    def worker_addresses(self) -> list[str]:
        """Addresses of the workers connected now."""
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def run(
        self,
        solve: Solve,
        points: Sequence[Point],
        *,
        on_running: Callable[[Running], None] | None = None,
    ) -> Iterator[tuple[Point, JsonObject | BaseException]]:
        """Submit one task per point; yield ``(point, result or exception)`` as each completes.

        Every point comes back exactly once. Closing the iterator early (the caller
        stopped, or was interrupted) cancels the points not yet finished. ``on_running``,
        if given, is called with ``{worker label: points running there}`` whenever that
        changes (checked every :data:`POLL_SECONDS`; see :meth:`running`).
        """
        from distributed import wait

        points = list(points)
        if not points:
            return
        client = self.client
        run_id = uuid.uuid4().hex[:12]
        futures = {
            client.submit(solve, point, key=f"bayes-slr-point-{run_id}-{index}", pure=False): point
            for index, point in enumerate(points)
        }
        pending = set(futures)
        reported: Running | None = None
        try:
            while pending:
                if on_running is not None and (now := self.running(pending)) != reported:
                    on_running(now)
                    reported = now
                try:
                    done, _ = wait(
                        list(pending),
                        timeout=POLL_SECONDS if on_running else None,
                        return_when="FIRST_COMPLETED",
                    )
                except TimeoutError:
                    continue
                for future in done:
                    pending.discard(future)
                    point = futures[future]
                    if future.status == "finished":
                        yield point, future.result()
                    else:
                        exception = future.exception()
                        yield (
                            point,
                            exception
                            if exception is not None
                            else RuntimeError(f"task {future.status}"),
                        )
                    future.release()
            if on_running is not None and reported:
                on_running({})
        finally:
            if pending:
                client.cancel(list(pending))

    def running(self, futures: Iterable[Any]) -> Running:
        """Which workers run which of ``futures`` now: ``{label: count}``, labels ``w<name>`` (or
        the address).

        A worker holds at most as many running tasks as it has threads (the scheduler may
        assign it more, queued behind them).
        """
        keys = {future.key for future in futures}
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        running: Running = {}
        for address, processing in self.client.processing().items():
            worker = workers.get(address, {})
            count = min(len(keys.intersection(processing)), worker.get("nthreads", 1))
            if count:
                running[_worker_label(address, worker.get("name"))] = count
        return running

    def close(self) -> None:
        """Disconnect, and stop the local cluster if this executor started one."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> DaskExecutor:
        self.client  # noqa: B018  (start now)
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        where = (
            f"scheduler={self.scheduler!r}"
            if self.scheduler is not None
            else f"workers={self.workers}"
        )
        return f"DaskExecutor({where})"
