"""A run written in other tools' formats: flent's data files and ``iperf3 -J`` reports."""
