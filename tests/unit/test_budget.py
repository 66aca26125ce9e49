"""The example budget of the costly property tests follows the hypothesis profile."""

from __future__ import annotations

from hypothesis import settings

from tests.unit.budget import examples, share


def test_ci_runs_the_stated_count_and_the_lighter_profiles_a_share_of_it() -> None:
    ci = settings.get_profile("ci").max_examples
    assert share(40, ci, ci) == 40
    assert share(40, 2 * ci, ci) == 40  # a heavier profile never inflates a stated count
    assert share(300, 10, 300) == 10
    assert share(100, 10, 300) == 3
    assert share(8, 10, 300) == 1  # at least one example, however light the profile


def test_the_developer_default_is_lighter_than_ci_and_quick_lighter_still() -> None:
    dev, quick = settings.get_profile("dev"), settings.get_profile("quick")
    ci = settings.get_profile("ci")
    assert quick.max_examples < dev.max_examples < ci.max_examples
    assert ci.max_examples == 300  # the count the stated budgets are written against


def test_examples_reads_the_active_profile() -> None:
    active = settings.default.max_examples
    ci = settings.get_profile("ci").max_examples
    assert examples(60).max_examples == share(60, active, ci)
