"""Importers: measurements of other tools as ccbench run directories."""
