"""The kernel engine's parts.

* ``host``: facts about this machine, and the checks that refuse a run;
* ``scenario``: loading scenarios whose algorithms only the kernel has;
* ``plan``: from a scenario to namespaces, devices, sysctls and socket options;
* ``state``: the record of what a run created, and the removal of leftovers;
* ``bpf_ca``, ``bpftool``: congestion controls given as BPF objects (``cca = "bpf:PATH"``),
  renamed for the run, registered and unregistered;
* ``session``: one run (namespaces, the emulator, the agents);
* ``agent``, ``tcpinfo``: the traffic agents (standard library only);
* ``emu``: the emulator process;
* ``results``: the run's reports in the simulator's schema.

``ccbench.engines.kernel.run`` is the entry point.
"""
