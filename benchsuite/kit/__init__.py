"""The plugin author's kit: the building blocks a track or a mixer may use beside the contract
(:mod:`benchsuite.specs`), re-exported by the facade ``benchsuite``: shared layers (tokenizers
and heads, :mod:`benchsuite.kit.layers`, with torch) and the forecasting track's base class
(:mod:`benchsuite.kit.forecasting`, torch on first use). Nothing here runs a benchmark."""
