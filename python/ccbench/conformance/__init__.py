"""``ccbench conformance``: packetdrill scripts (the Linux TCP maintainers' own tests) run
against the simulator's TCP and against this machine's kernel, one :class:`Verdict` per
script and stack.

``verdict`` holds the shared type; ``kernel`` runs the scripts with packetdrill on the real
kernel (``packetdrill`` finds or builds the binary, ``packetdrill_output`` reads its
messages). Nothing heavy is imported here: the command line imports the parts it needs.
"""

from .verdict import Mismatch, Outcome, Verdict

__all__ = ["Mismatch", "Outcome", "Verdict"]
