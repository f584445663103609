"""Engines that run a scenario: ``sim``, the packet-level simulator in Rust, and
``kernel``, the real Linux TCP stack in network namespaces behind the link emulator."""
