"""The streams this deployment runs: the built-in ones plus every user-declared module."""

from __future__ import annotations

import importlib

from platform_pipelines.settings import PlatformSettings, get_settings
from platform_pipelines.streams.builtin import BuiltinSettings, builtin_streams
from platform_pipelines.streams.registry import StreamRegistry, declare_stream


class CatalogError(RuntimeError):
    """A module named in PLATFORM_STREAM_MODULES cannot be loaded."""


def load_registry(settings: PlatformSettings | None = None) -> StreamRegistry:
    """Built-in streams, then the ``STREAMS`` of each module in ``settings.stream_modules``."""
    settings = settings or get_settings()
    registry = builtin_streams(
        BuiltinSettings(
            clickstream_topic=settings.clickstream_topic,
            heartbeats_topic=settings.heartbeats_topic,
            events_reads=settings.events_reads,
            alerts_reads=settings.alerts_reads,
            alerts_topic=settings.alerts_topic,
        )
    )
    for name in (m.strip() for m in settings.stream_modules.split(",")):
        if not name:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            raise CatalogError(
                f"PLATFORM_STREAM_MODULES names {name!r}, which cannot be imported ({error}); "
                "fix the module name or make it importable (installed, or on PYTHONPATH)."
            ) from error
        streams = getattr(module, "STREAMS", None)
        if streams is None:
            raise CatalogError(
                f"Module {name!r} has no STREAMS list; add `STREAMS = [StatefulStream(...)]`."
            )
        for stream in streams:
            declare_stream(registry, stream)
    return registry
