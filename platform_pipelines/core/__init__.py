"""The base layer: value types and helpers every other layer may import (and nothing above).

``verdict`` (a health judgement), ``records`` and ``progress_store`` (what a running stream
persists for the health layer), ``times`` (the one place timestamps are converted) and ``units``
(human-readable durations, sizes and counts).
"""
