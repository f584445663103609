"""Type stub of the compiled simulator binding (crates/ccbench-py)."""

from ccbench.errors import ScenarioError as ScenarioError

Column = list[float] | list[int]

def run(scenario_json: str, capture_json: str | None = None) -> tuple[str, dict[str, Column], dict[str, Column]]:
    """Run a scenario given as the simulator's JSON; with ``capture_json``
    (``{"points": [...], "flows": [...] | null, "dir": "..."}``) also write
    ``dir/capture-<point>.pcap``.

    Returns (summary JSON, flows table, link table); tables map column names to equally
    long lists (floats, or ints for u32 columns). The GIL is released while running.
    Raises ScenarioError(field, message) for a scenario the simulator does not accept.
    """

def validate(scenario_json: str) -> None:
    """Parse and validate a scenario given as JSON without running it."""

def version() -> str:
    """Version of the simulator crate."""

def algorithms() -> list[str]:
    """Names of the congestion-control algorithms the simulator implements."""

def parameters() -> str:
    """Every algorithm's overridable parameters (``[[flows]] params``) as JSON:
    ``{algorithm: [{"name", "kind" ("flag", "integer" or "gain"), "default", "min", "max",
    "kernel", "meaning"}, ...]}``; ``min`` and ``max`` are inclusive, in the scenario's
    units (gains as real numbers, rounded to 1/256 when applied)."""

def emulate(config_json: str, control_fd: int = 0, out_fd: int = 1) -> None:
    """Run the real-time link emulator of the kernel engine until told to stop on
    `control_fd`, writing its reports to `out_fd`. The GIL is released while running."""
