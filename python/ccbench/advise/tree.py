"""A decision tree over a sweep's conditions that says which algorithm wins, its
cross-validated accuracy, its rules in words with units, and a drawing of it."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.tree import DecisionTreeClassifier, plot_tree

from ..errors import ScenarioError
from ..plots import style

# Conditions the tree may split on, with how a threshold reads.
FEATURES = ("buffer_bdp", "loss_pct", "rtt_ms", "rate_mbps", "cpu_share", "flows", "arrival_load_pct")
NAMES = {
    "buffer_bdp": "buffer",
    "loss_pct": "loss",
    "rtt_ms": "RTT",
    "rate_mbps": "bandwidth",
    "cpu_share": "CPU share",
    "flows": "flows",
    "arrival_load_pct": "arrivals' load",
}
UNITS = {
    "buffer_bdp": " BDP",
    "loss_pct": " %",
    "rtt_ms": " ms",
    "rate_mbps": " Mbit/s",
    "cpu_share": " %",
    "flows": "",
    "arrival_load_pct": " %",
}
SCALE = {"cpu_share": 100.0}  # shown in percent
INTEGER = {"flows"}
MAX_FOLDS = 5


@dataclass
class Rule:
    """One leaf: the conditions on the way to it and what wins there."""

    conditions: list[str]
    winner: str
    points: int
    agree: int


@dataclass
class TreeResult:
    objective: str
    features: list[str]
    classes: list[str]
    model: DecisionTreeClassifier
    points: int
    accuracy: float  # mean cross-validated accuracy; NaN when too few points
    accuracy_sd: float
    folds: int
    baseline: float  # accuracy of always answering the most frequent winner
    wins: dict[str, int] = field(default_factory=dict)

    def rules(self) -> list[Rule]:
        return _rules(self)

    def text(self) -> str:
        return _text(self)

    def figure(self) -> Figure:
        return _figure(self)


def fit_tree(
    points: pd.DataFrame,
    objective: str,
    features: Optional[Sequence[str]] = None,
    max_depth: int = 3,
    min_samples_leaf: int = 1,
) -> TreeResult:
    """Fit on ``points`` (from :func:`ccbench.advise.winners`): the conditions that vary
    are the features, ``winner`` the label."""
    if points.empty:
        raise ScenarioError("--sweep", "no point where two or more algorithms ran alone; the tree compares algorithms")
    if max_depth < 1:
        raise ScenarioError("--max-depth", "must be at least 1")
    candidates = list(features or FEATURES)
    used = [f for f in candidates if f in points and points[f].notna().all() and points[f].nunique() > 1]
    if not used:
        raise ScenarioError("--sweep", f"varies none of the conditions the tree splits on ({', '.join(candidates)})")
    x = points[used].to_numpy(dtype=float)
    y = points["winner"].astype(str).to_numpy()
    model = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=0)
    model.fit(x, y)
    classes, counts = np.unique(y, return_counts=True)
    accuracy, sd, folds = _cross_validate(x, y, max_depth, min_samples_leaf)
    return TreeResult(
        objective=objective,
        features=used,
        classes=[str(c) for c in model.classes_],
        model=model,
        points=len(y),
        accuracy=accuracy,
        accuracy_sd=sd,
        folds=folds,
        baseline=float(counts.max() / counts.sum()),
        wins={str(c): int(n) for c, n in zip(classes, counts)},
    )


def _cross_validate(x: np.ndarray, y: np.ndarray, max_depth: int, min_samples_leaf: int) -> tuple[float, float, int]:
    """k-fold accuracy (stratified when every winner has k points), k up to 5."""
    _, counts = np.unique(y, return_counts=True)
    if len(counts) == 1:
        return 1.0, 0.0, 0  # one algorithm wins everywhere: nothing to get wrong
    folds = min(MAX_FOLDS, int(counts.min()))
    splitter: object
    if folds >= 2:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=0)
    else:
        folds = min(MAX_FOLDS, len(y))
        if folds < 2:
            return math.nan, math.nan, 0
        splitter = KFold(n_splits=folds, shuffle=True, random_state=0)
    model = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fold may miss a class; its score says so
        scores = cross_val_score(model, x, y, cv=splitter)  # type: ignore[arg-type]
    return float(scores.mean()), float(scores.std()), folds


def threshold_words(feature: str, threshold: float, above: bool) -> str:
    """``buffer ≤ 1.5 BDP``; integer conditions as whole numbers (``flows ≥ 3``)."""
    name = NAMES.get(feature, feature)
    if feature in INTEGER:
        return f"{name} ≥ {math.floor(threshold) + 1}" if above else f"{name} ≤ {math.floor(threshold)}"
    value = threshold * SCALE.get(feature, 1.0)
    return f"{name} {'>' if above else '≤'} {_number(value)}{UNITS.get(feature, '')}"


def _number(value: float) -> str:
    if value == 0:
        return "0"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:.0f}"


def _leaf_counts(result: TreeResult, node: int) -> np.ndarray:
    tree = result.model.tree_
    value = np.asarray(tree.value[node][0], dtype=float)
    return value / value.sum() * tree.n_node_samples[node]  # recent scikit-learn stores fractions


def _rules(result: TreeResult) -> list[Rule]:
    tree = result.model.tree_
    out: list[Rule] = []

    def walk(node: int, path: list[tuple[str, float, bool]]) -> None:
        if tree.children_left[node] == tree.children_right[node]:  # a leaf
            counts = _leaf_counts(result, node)
            best = int(np.argmax(counts))
            out.append(Rule(_merge(path), result.classes[best], int(round(counts.sum())), int(round(counts[best]))))
            return
        feature = result.features[tree.feature[node]]
        walk(tree.children_left[node], [*path, (feature, float(tree.threshold[node]), False)])
        walk(tree.children_right[node], [*path, (feature, float(tree.threshold[node]), True)])

    walk(0, [])
    return out


def _merge(path: list[tuple[str, float, bool]]) -> list[str]:
    """The tightest bound per feature and side: ``buffer > 0.3 BDP and buffer ≤ 2 BDP``
    reads ``buffer from 0.3 to 2 BDP``."""
    lower: dict[str, float] = {}
    upper: dict[str, float] = {}
    order: list[str] = []
    for feature, threshold, above in path:
        if feature not in order:
            order.append(feature)
        if above:
            lower[feature] = max(threshold, lower.get(feature, -math.inf))
        else:
            upper[feature] = min(threshold, upper.get(feature, math.inf))
    words = []
    for f in order:
        if f in lower and f in upper and f not in INTEGER:
            s = SCALE.get(f, 1.0)
            words.append(
                f"{NAMES.get(f, f)} over {_number(lower[f] * s)} and up to {_number(upper[f] * s)}{UNITS.get(f, '')}"
            )
        else:
            if f in lower:
                words.append(threshold_words(f, lower[f], True))
            if f in upper:
                words.append(threshold_words(f, upper[f], False))
    return words


def _text(result: TreeResult) -> str:
    """The tree as indented rules, like scikit-learn's export_text but with units and
    the points each leaf holds."""
    tree = result.model.tree_
    lines: list[str] = []

    def walk(node: int, depth: int) -> None:
        indent = "│   " * depth
        if tree.children_left[node] == tree.children_right[node]:
            counts = _leaf_counts(result, node)
            best = int(np.argmax(counts))
            total = int(round(counts.sum()))
            lines.append(
                f"{indent}→ {result.classes[best]} ({int(round(counts[best]))} of "
                f"{total} point{'s' if total != 1 else ''})"
            )
            return
        feature = result.features[tree.feature[node]]
        threshold = float(tree.threshold[node])
        for child, above in ((tree.children_left[node], False), (tree.children_right[node], True)):
            lines.append(f"{indent}{threshold_words(feature, threshold, above)}")
            walk(child, depth + 1)

    walk(0, 0)
    return "\n".join(lines)


def _figure(result: TreeResult) -> Figure:
    depth = max(1, result.model.get_depth())
    leaves = max(1, result.model.get_n_leaves())
    fig = style.new_figure(max(6.0, 2.1 * leaves), 1.2 + 1.5 * (depth + 1))
    ax = fig.subplots()
    names = [_axis_name(f) for f in result.features]
    plot_tree(
        result.model,
        feature_names=names,
        class_names=result.classes,
        filled=True,
        rounded=True,
        impurity=False,
        ax=ax,
        fontsize=8,
    )
    accuracy = "n/a" if math.isnan(result.accuracy) else f"{100 * result.accuracy:.0f}%"
    ax.set_title(
        f"Which algorithm wins on {result.objective}: {result.points} points, cross-validated accuracy {accuracy}"
    )
    return fig


def _axis_name(feature: str) -> str:
    """Feature names for the drawing, whose thresholds are in the column's own unit."""
    name = NAMES.get(feature, feature)
    if feature in SCALE:
        return f"{name} (fraction)"
    unit = UNITS.get(feature, "").strip()
    return f"{name} ({unit})" if unit else name
