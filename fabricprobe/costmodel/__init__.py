"""The α-β-γ cost model: parameters fitted from a run's own measurements, formulas per algorithm,
predicted crossovers, and predictions for machines larger than the one measured."""
