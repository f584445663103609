"""The one exception type for invalid scenarios.

The Rust core raises this same class (it is also exported as
``ccbench._core.ScenarioError``), so callers catch a single type whether a value was
rejected while parsing the TOML or by the simulator.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario value that is not allowed.

    ``field`` is the dotted path of the offending value (``link.rate``,
    ``flows[0].cca``, or a file name for file-level problems); ``message`` says what is
    allowed.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def __reduce__(self) -> tuple[type[ScenarioError], tuple[str, str]]:  # keeps pickling working
        return (type(self), (self.field, self.message))


class InternalError(RuntimeError):
    """A fault inside ccbench (the simulator panicked): not the input's fault.

    ``where`` names the part that failed (``simulator``); ``message`` is the panic's
    message and source location. The command line reports it as one line, exit 1.
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(where, message)
        self.where = where
        self.message = message

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"

    def __reduce__(self) -> tuple[type[InternalError], tuple[str, str]]:
        return (type(self), (self.where, self.message))
