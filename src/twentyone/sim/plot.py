"""The convergence picture: the running simulated RTP closing in on the exact value, with its 95 % band."""

from __future__ import annotations

from pathlib import Path

from twentyone.sim.result import Z95, SimulationResult


def save_convergence_png(result: SimulationResult, path: str | Path) -> None:
    """Write a PNG of the running main-game RTP against rounds played (log scale), its 95 % interval
    band, and the exact return of the simulated strategy from the maths package."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result.convergence
    rounds = [p[0] for p in points]
    rtp = [p[1] for p in points]
    low = [p[1] - Z95 * p[2] for p in points]
    high = [p[1] + Z95 * p[2] for p in points]
    figure, axes = plt.subplots(figsize=(8, 4.5))
    axes.fill_between(rounds, low, high, color="#3498db", alpha=0.25, label="95 % interval")
    axes.plot(rounds, rtp, color="#1f4e79", linewidth=1.4, label="simulated RTP")
    exact = result.exact.get("main")
    if exact is not None:
        axes.axhline(exact, color="#c0392b", linestyle="--", linewidth=1.2, label=f"exact {exact:.4f} %")
        span = max(abs(v - exact) for v in low[len(low) // 20:] + high[len(high) // 20:]) if points else 1.0
        axes.set_ylim(exact - span * 1.1, exact + span * 1.1)
    axes.set_xscale("log")
    axes.set_xlabel("rounds played")
    axes.set_ylabel("return to player, main game (%)")
    rules = result.game.rules
    axes.set_title(f"{rules.name}: {result.rounds:,} rounds, {result.strategy} strategy, seed {result.seed}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
