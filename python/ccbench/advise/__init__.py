"""Which algorithm to use where: winners per point of a sweep, a decision tree over the
conditions (``ccbench advise``), and focused simulations for one point
(``ccbench recommend``)."""

from __future__ import annotations

from .tree import FEATURES, Rule, TreeResult, fit_tree, threshold_words
from .winners import OBJECTIVES, Weights, point_means, winners

__all__ = [
    "FEATURES",
    "OBJECTIVES",
    "Rule",
    "TreeResult",
    "Weights",
    "fit_tree",
    "point_means",
    "threshold_words",
    "winners",
]
