"""``ccbench conformance``: packetdrill scripts run against the simulator's TCP sender
(:mod:`.sim`) or, with ``--kernel``, against this machine's kernel (:mod:`.kernel`)."""
