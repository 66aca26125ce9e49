"""How many examples a costly property test runs under the active hypothesis profile.

A test states its count under the thorough ``ci`` profile; a lighter profile (the developer's
default ``dev``, or ``quick``) runs the same share of it as its own ``max_examples`` is of
ci's, and at least one. The profiles are registered in tests/conftest.py."""

from __future__ import annotations

from hypothesis import settings


def share(under_ci: int, active: int, full: int) -> int:
    """The examples to run of ``under_ci`` when the active profile allows ``active`` examples
    a test and ci allows ``full``: all of them at ci's level or above, else the same share
    (rounded down), and at least one."""
    if active >= full:
        return under_ci
    return max(1, under_ci * active // full)


def examples(under_ci: int) -> settings:
    """The active profile, running ``under_ci`` examples under ci and proportionally fewer
    (at least one) under a lighter profile."""
    active = settings.default.max_examples
    full = settings.get_profile("ci").max_examples
    return settings(max_examples=share(under_ci, active, full))
