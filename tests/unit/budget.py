"""How many examples a costly property test runs under the active hypothesis profile.

A test states its count under the thorough ``ci`` profile; a lighter profile (the developer's
default ``dev``, or ``quick``) runs the same share of it as its own ``max_examples`` is of
ci's, and at least one. The profiles are registered in tests/conftest.py."""

from __future__ import annotations

from hypothesis import settings


def examples(under_ci: int) -> settings:
    """The active profile, running ``under_ci`` examples under ci and proportionally fewer
    (at least one) under a lighter profile."""
    active = settings.default.max_examples
    full = settings.get_profile("ci").max_examples
    if active >= full:
        return settings(max_examples=under_ci)
    return settings(max_examples=max(1, under_ci * active // full))
