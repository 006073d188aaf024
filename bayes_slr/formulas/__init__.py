"""Population-level and high-dimensional formulas for the test error."""
