"""A deterministic minimizer for ``scripts/fit_perf.py``: Nelder-Mead with the standard
coefficients, from a fixed start, with no randomness (the fit must be the same in every process)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def nelder_mead(
    cost: Callable[[Sequence[float]], float], start: list[float], iterations: int = 1500
) -> list[float]:
    """Minimize ``cost`` from ``start`` (deterministic; standard coefficients)."""
    simplex = [list(start)]
    for index in range(len(start)):
        point = list(start)
        point[index] += 0.5
        simplex.append(point)
    scores = [cost(point) for point in simplex]
    for _ in range(iterations):
        order = sorted(range(len(simplex)), key=lambda i: scores[i])
        simplex = [simplex[i] for i in order]
        scores = [scores[i] for i in order]
        if scores[-1] - scores[0] < 1e-10:
            break
        centroid = [sum(p[i] for p in simplex[:-1]) / (len(simplex) - 1) for i in range(len(start))]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        reflected_score = cost(reflected)
        if reflected_score < scores[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            expanded_score = cost(expanded)
            simplex[-1], scores[-1] = (
                (expanded, expanded_score)
                if expanded_score < reflected_score
                else (reflected, reflected_score)
            )
        elif reflected_score < scores[-2]:
            simplex[-1], scores[-1] = reflected, reflected_score
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            contracted_score = cost(contracted)
            if contracted_score < scores[-1]:
                simplex[-1], scores[-1] = contracted, contracted_score
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (x - b) for b, x in zip(best, p, strict=True)] for p in simplex[1:]
                ]
                scores = [scores[0]] + [cost(p) for p in simplex[1:]]
    return simplex[min(range(len(simplex)), key=lambda i: scores[i])]
