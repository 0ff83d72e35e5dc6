"""Errors a user can cause, and errors a policy can cause, kept apart.

`InputError` is raised for malformed traces, specs and requests: it names the file, line and
field so the CLI can exit with code 2 and the web side can answer 400. `InvalidDecision` is a
bug in a policy: the engine refuses the decision loudly instead of corrupting its state.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input; `str()` is a one-line message naming where and what."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = self.source or "input"
        if self.line is not None:
            where += f", line {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class InvalidDecision(RuntimeError):
    """A policy asked the engine for something impossible (over-commit, bad worker count …)."""


class InvariantViolation(RuntimeError):
    """A finished run's numbers break an invariant (utilisation above 100 %, a job finished
    twice): a bug in the engine or a policy, raised instead of reporting the numbers."""
