"""docs/scenarios.md's annotated scenario is generated from the schema's fields; it must
not fall behind them."""

from pathlib import Path

from ccbench.scenario import Scenario, reference

DOC = Path(__file__).resolve().parent.parent / "docs" / "scenarios.md"


def test_the_committed_doc_is_the_generated_one():
    doc = DOC.read_text()
    assert reference.splice(doc, reference.render()) == doc, (
        "docs/scenarios.md is stale; regenerate it with "
        "'python -m ccbench.scenario.reference --write docs/scenarios.md'"
    )


def test_every_key_of_every_table_is_documented():
    """A field without an example would be left out of the doc: only the link's models
    documented in cellular.md (traces, the ACK trace's buffer, schedules, loss model, AQM
    parameters), the same in [link.reverse], and that table itself (shown as a table of
    its own) may be, and the traffic's alternatives documented in traffic.md (a UDP
    flow's schedules, an arrivals group's rate and times beside its load)."""
    from ccbench.scenario.host import Host, HostCost
    from ccbench.scenario import Arrivals, Capture, Flow, Link, ReverseLink, Tcp, UdpFlow

    left_out = {
        (m.__name__, f.alias or name)
        for m in (Scenario, Link, ReverseLink, Tcp, Host, HostCost, Flow, UdpFlow, Arrivals, Capture)
        for name, f in m.model_fields.items()
        if not f.examples
    }
    assert left_out == {
        ("Scenario", "link"),
        ("Scenario", "tcp"),
        ("Scenario", "host"),
        ("Scenario", "flows"),
        ("Scenario", "udp"),
        ("Scenario", "arrivals"),
        ("Scenario", "capture"),
        ("Host", "cost"),
        ("Link", "trace"),
        ("Link", "ack_trace"),
        ("Link", "reverse_buffer"),
        ("Link", "rate_schedule"),
        ("Link", "rtt_schedule"),
        ("Link", "loss_model"),
        ("Link", "aqm_params"),
        ("Link", "reverse"),
        ("ReverseLink", "trace"),
        ("ReverseLink", "loss_model"),
        ("ReverseLink", "aqm_params"),
        ("UdpFlow", "rate_schedule"),
        ("UdpFlow", "rate_file"),
        ("Arrivals", "rate"),
        ("Arrivals", "times"),
    }


def test_the_examples_are_values_the_schema_accepts():
    block = reference.render().split("```toml\n")[1].split("```")[0]
    import tomllib

    doc = tomllib.loads(block)
    del doc["host"]["cpu_trace"]  # an alternative to cpu_share, shown beside it
    del doc["link"]["mtu"]  # arrivals do not model the path MTU, and refuse it
    Scenario.from_dict(doc)
