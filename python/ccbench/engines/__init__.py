"""Engines that run a scenario. ``sim`` is the packet-level simulator in Rust."""
