"""The VM engine's parts: the guest kernel (``guest``), its initramfs (``initramfs``,
``image``), QEMU (``qemu``), the vCPU threads' deadline policy (``deadline``), the guest
as a run's sender side (``sender``), BPF congestion controls registered in the guest
(``bpf``) and ``ccbench vm probe`` (``probe``).
``ccbench.engines.vm`` is the engine."""
