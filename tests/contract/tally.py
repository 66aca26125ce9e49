"""The closing figures of the contract fuzzing, tallied over every test process.

The fuzzing runs as one test per operation, and pytest-xdist spreads those over its processes,
so no test can see all of them. Each fuzzed request is reported as a user property of its test
(``record_property``); the controlling process (or the only one) reads every test's report
(``pytest_runtest_logreport``, tests/conftest.py), and at the end of the run checks the
figures when every fuzzing test of a kind ran: every operation was exercised, thousands of
requests in all, and some of them succeeded (the real ids reach the happy paths); each
creating operation was sent valid bodies and created something (but withdrawals: a generated
amount is mostly more than the funded player holds, ``insufficient_funds``). A failed check
fails the run (its exit status) and says why in the summary.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: User properties: ``(operation, status)`` per request of the contract fuzzing, and
#: ``(operationId, status)`` per request of the positive fuzzing.
FUZZED = "contract_fuzzed"
CREATED = "contract_created"
#: The tests that report them: one test item per operation (schemathesis gives them all the
#: same node id).
FUZZING_TEST = "test_schemathesis.py::test_every_operation_honours_the_contract"
CREATING_TEST = "test_schemathesis.py::test_valid_bodies_of_creating_operations_are_accepted"


@dataclass
class Tally:
    tests: Counter[str] = field(default_factory=Counter)  # test items set up, by kind
    requests: dict[str, list[tuple[str, int]]] = field(
        default_factory=lambda: {FUZZED: [], CREATED: []}
    )

    def add(self, nodeid: str, when: str, properties: list[tuple[str, Any]]) -> None:
        """One test's report of one phase: which fuzzing test it is, and its requests."""
        for name, test in ((FUZZED, FUZZING_TEST), (CREATED, CREATING_TEST)):
            if when == "setup" and nodeid.endswith(test):
                self.tests[name] += 1
        if when != "call":
            return
        for name, value in properties:
            if name in self.requests:
                operation, status = value
                self.requests[name].append((str(operation), int(status)))

    def findings(self) -> tuple[list[str], list[str]]:
        """(the figures, what is wrong), checked for each kind whose every test ran."""
        from tests.contract.test_schemathesis import CREATING, MIN_REQUESTS, documented_operations

        figures: list[str] = []
        wrong: list[str] = []
        fuzzed = self.requests[FUZZED]
        if self.tests[FUZZED]:
            documented = documented_operations()
            statuses = Counter(status for _, status in fuzzed)
            operations = {operation for operation, _ in fuzzed}
            figures.append(
                f"contract fuzzing: {len(fuzzed)} requests over {len(operations)} operations "
                f"in {self.tests[FUZZED]} tests; by status {dict(sorted(statuses.items()))}"
            )
            if self.tests[FUZZED] < len(documented):
                figures.append("  (not every operation's test ran: the totals are not checked)")
            else:
                if operations != documented:
                    wrong.append(f"operations never fuzzed: {sorted(documented - operations)}")
                if len(fuzzed) < MIN_REQUESTS:
                    wrong.append(f"{len(fuzzed)} requests fuzzed, fewer than {MIN_REQUESTS}")
                succeeded = sum(n for status, n in statuses.items() if status < 300)
                if succeeded < len(documented):
                    wrong.append(f"only {succeeded} fuzzed requests succeeded")
        created = self.requests[CREATED]
        if self.tests[CREATED]:
            sent = {operation for operation, _ in created}
            accepted = Counter(operation for operation, status in created if status < 300)
            figures.append(
                f"positive data: {len(created)} requests, created {dict(sorted(accepted.items()))}"
            )
            if self.tests[CREATED] < len(CREATING):
                figures.append("  (not every creating operation's test ran: not checked)")
            else:
                if sent != set(CREATING):
                    wrong.append(f"creating operations never sent: {set(CREATING) - sent}")
                missing = set(CREATING) - {"createWithdrawal"} - set(accepted)
                if missing:
                    wrong.append(f"creating operations that created nothing: {sorted(missing)}")
        return figures, wrong
