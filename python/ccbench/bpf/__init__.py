"""Congestion controls written as BPF struct_ops objects: compiling their C source, and
the header (``include/ccbench/tcp_ca.h``) they can be written against."""
